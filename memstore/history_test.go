package memstore

import (
	"context"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hourglass-io/hourglass/internal/testkit/storetest"
	"github.com/hourglass-io/hourglass/queue"
)

// history returns the history fields of a job's stats.
func historyOf(js queue.JobStats) queue.JobStats {
	return queue.JobStats{
		PutAt: js.PutAt, ReservedAt: js.ReservedAt, ReleasedAt: js.ReleasedAt, BuriedAt: js.BuriedAt,
		KickedAt: js.KickedAt, TimedOutAt: js.TimedOutAt, LastError: js.LastError, LastErrorAt: js.LastErrorAt,
	}
}

// TestHistoryRestart: a job's history (every transition time and its last
// error) is the same after a restart, from the log alone and from a
// snapshot.
func TestHistoryRestart(t *testing.T) {
	for _, snapshot := range []bool{false, true} {
		t.Run(fmt.Sprintf("snapshot=%v", snapshot), func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			clock := storetest.NewClock(epoch)
			s := openT(t, dir, &Options{Clock: clock.Now})
			id := put(t, s, "h", queue.NewJob{TTR: 2 * time.Second})
			step := func() { clock.Advance(1500 * time.Millisecond) }
			step()
			must(s.ReserveJob(ctx, "w", id))
			step()
			// The TTR runs out 2 s after the reserve: a timeout at 3.5 s.
			step()
			must(s.ReserveJob(ctx, "w", id))
			step()
			ok(t, s.Release(ctx, "w", id, 0, 0, "first failure"))
			step()
			must(s.ReserveJob(ctx, "w", id))
			step()
			ok(t, s.Bury(ctx, "w", id, 0, "second failure"))
			step()
			ok(t, s.KickJob(ctx, id))
			step()
			must(s.ReserveJob(ctx, "w", id))
			step()
			ok(t, s.Release(ctx, "w", id, 0, time.Minute, "")) // no reason: the last error stays
			sec := func(ms int) time.Time { return epoch.Add(time.Duration(ms) * time.Millisecond) }
			want := queue.JobStats{
				PutAt: epoch, ReservedAt: sec(12000), TimedOutAt: sec(3500), ReleasedAt: sec(13500),
				BuriedAt: sec(9000), KickedAt: sec(10500), LastError: "second failure", LastErrorAt: sec(9000),
			}
			if diff := cmp.Diff(want, historyOf(must(s.StatsJob(ctx, id)))); diff != "" {
				t.Fatalf("history before the restart (-want +got):\n%s", diff)
			}
			if snapshot {
				ok(t, s.compactNow())
			}
			closeT(t, s)
			s = openT(t, dir, &Options{Clock: clock.Now})
			defer closeT(t, s)
			if diff := cmp.Diff(want, historyOf(must(s.StatsJob(ctx, id)))); diff != "" {
				t.Errorf("history after the restart (-want +got):\n%s", diff)
			}
		})
	}
}

// TestOldRecords: records written before jobs had a history (kindUpdate in
// the log, kindJob in a snapshot) are still read, as jobs without one.
func TestOldRecords(t *testing.T) {
	ctx := context.Background()
	t.Run("log", func(t *testing.T) {
		dir := t.TempDir()
		clock := storetest.NewClock(epoch)
		s := openT(t, dir, &Options{Clock: clock.Now})
		id := put(t, s, "o", queue.NewJob{Priority: 1})
		// An update as the engine wrote it before: buried, priority 7, one reserve and one bury.
		b := binary.AppendUvarint(nil, uint64(id))
		b = append(b, byte(queue.Buried))
		b = binary.AppendUvarint(b, 7)
		b = binary.AppendVarint(b, 1) // bury sequence
		b = binary.AppendVarint(b, 0)
		for _, c := range []uint64{1, 0, 0, 1, 0} {
			b = binary.AppendUvarint(b, c)
		}
		s.mu.Lock()
		tk := s.append(kindUpdate, b, nil)
		s.mu.Unlock()
		ok(t, s.log.Wait(tk))
		ok(t, s.Close())
		s = openT(t, dir, &Options{Clock: clock.Now})
		defer closeT(t, s)
		js := must(s.StatsJob(ctx, id))
		if js.State != queue.Buried || js.Priority != 7 || js.Buries != 1 || js.Reserves != 1 {
			t.Errorf("job after an old update: %+v", js)
		}
		if diff := cmp.Diff(queue.JobStats{PutAt: epoch}, historyOf(js)); diff != "" {
			t.Errorf("history of a job from an old log (-want +got):\n%s", diff)
		}
	})
	t.Run("snapshot", func(t *testing.T) {
		clock := storetest.NewClock(epoch)
		s := must(New(&Options{Clock: clock.Now}))
		defer s.Close()
		s.queue.replayTubes = map[uint64]*tube{}
		tb := binary.AppendUvarint(nil, 1)
		tb = appendString(tb, "o")
		for range 3 {
			tb = binary.AppendVarint(tb, 0)
		}
		tb = append(tb, 0)
		tb = binary.AppendVarint(tb, 0)
		tb = binary.AppendVarint(tb, 0)
		ok(t, s.replay(kindTube, tb))
		// A job as snapshots held it before: ready, in tube 1, with a body.
		jb := binary.AppendUvarint(nil, 5)
		jb = binary.AppendUvarint(jb, 1)
		jb = append(jb, byte(queue.Ready))
		jb = binary.AppendUvarint(jb, 3)
		for _, v := range []int64{0, int64(time.Minute), 0, epoch.UnixNano()} {
			jb = binary.AppendVarint(jb, v)
		}
		for _, c := range []uint64{2, 1, 1, 0, 0} {
			jb = binary.AppendUvarint(jb, c)
		}
		jb = appendString(jb, "")
		jb = append(jb, "body"...)
		ok(t, s.replay(kindJob, jb))
		s.queue.replayTubes = nil
		js := must(s.StatsJob(ctx, 5))
		if js.Reserves != 2 || js.Timeouts != 1 || js.Releases != 1 || js.Tube != "o" {
			t.Errorf("job from an old snapshot: %+v", js)
		}
		if diff := cmp.Diff(queue.JobStats{PutAt: epoch}, historyOf(js)); diff != "" {
			t.Errorf("history of a job from an old snapshot (-want +got):\n%s", diff)
		}
		if j := must(peek(ctx, s, 5)); string(j.Body) != "body" {
			t.Errorf("body %q", j.Body)
		}
	})
}

// TestErrorHistoryRestart: a job's error history (queue.JobStats.Errors)
// is the same after a restart, from the log alone, from a snapshot, and
// from a snapshot and the log after it; a kept job's too.
func TestErrorHistoryRestart(t *testing.T) {
	for _, snapshot := range []bool{false, true} {
		t.Run(fmt.Sprintf("snapshot=%v", snapshot), func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			clock := storetest.NewClock(epoch)
			s := openT(t, dir, &Options{Clock: clock.Now})
			ok(t, s.SetRetention(ctx, "kept", time.Hour))
			live := put(t, s, "h", queue.NewJob{})
			kept := put(t, s, "kept", queue.NewJob{})
			long := strings.Repeat("x", queue.MaxReasonLen)
			fail := func(id queue.ID, n int) {
				clock.Advance(time.Second)
				must(s.ReserveJob(ctx, "w", id))
				reason := fmt.Sprintf("attempt %d failed", n)
				if n%3 == 0 {
					reason = long[:queue.MaxReasonLen-n]
				}
				if n%2 == 0 {
					ok(t, s.Bury(ctx, "w", id, 0, reason))
				} else {
					ok(t, s.Release(ctx, "w", id, 0, 0, reason))
				}
			}
			for n := 1; n <= 12; n++ {
				fail(live, n)
				if n <= 3 {
					fail(kept, n)
				}
			}
			must(s.ReserveJob(ctx, "w", kept))
			ok(t, s.Finish(ctx, "w", kept, []byte("done")))
			if snapshot {
				ok(t, s.compactNow())
				fail(live, 13) // and one in the log after the snapshot
			}
			want := map[queue.ID][]queue.AttemptError{}
			for _, id := range []queue.ID{live, kept} {
				js := must(s.Lookup(ctx, id))
				if id == live {
					js = must(s.StatsJob(ctx, id))
				}
				want[id] = js.Errors
			}
			if n := len(want[live]); n == 0 || n > queue.MaxErrors || want[live][n-1].Attempt != uint32(12+btoi(snapshot)) {
				t.Fatalf("live job's history before the restart: %+v", want[live])
			}
			if len(want[kept]) != 3 {
				t.Fatalf("kept job's history before the restart: %+v", want[kept])
			}
			closeT(t, s)
			s = openT(t, dir, &Options{Clock: clock.Now})
			defer closeT(t, s)
			if diff := cmp.Diff(want[live], must(s.StatsJob(ctx, live)).Errors); diff != "" {
				t.Errorf("live job's history after the restart (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(want[kept], must(s.Lookup(ctx, kept)).Errors); diff != "" {
				t.Errorf("kept job's history after the restart (-want +got):\n%s", diff)
			}
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
