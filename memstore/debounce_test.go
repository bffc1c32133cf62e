package memstore

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hourglass-io/hourglass/internal/testkit/storetest"
	"github.com/hourglass-io/hourglass/queue"
)

// TestDebounceRestart: what debounce puts did (a delayed job's body,
// priority and due time replaced; a live job's key given up to a new job)
// survives a restart from the log and from a snapshot, and the key's
// holder still takes the next put's debounce.
func TestDebounceRestart(t *testing.T) {
	ctx := context.Background()
	now := epoch
	opts := &Options{Clock: func() time.Time { return now }}
	deb := func(body string, pri uint32) queue.NewJob {
		return queue.NewJob{Body: []byte(body), Priority: pri, Delay: 200 * time.Millisecond, TTR: time.Minute,
			UniqueKey: "k", Debounce: queue.DebounceReplace | queue.DebounceExtend, MaxWait: time.Second}
	}
	putRes := func(s *Store, j queue.NewJob) queue.PutResult {
		t.Helper()
		return must(s.Put(ctx, "t", []queue.NewJob{j}))[0]
	}
	for _, snapshot := range []bool{false, true} {
		dir := t.TempDir()
		s := openT(t, dir, opts)
		a := putRes(s, deb("a1", 5)).ID
		now = now.Add(100 * time.Millisecond)
		if r := putRes(s, deb("a2", 3)); !r.Debounced || r.ID != a {
			t.Fatalf("second put = %+v, want a debounce of %d", r, a)
		}
		now = now.Add(time.Second) // a is ready
		b := putRes(s, deb("b1", 1))
		if b.Duplicate {
			t.Fatalf("a put after the job is ready = %+v, want a new job", b)
		}
		now = now.Add(50 * time.Millisecond)
		rep := deb("b2", 2)
		rep.Debounce = queue.DebounceReplace
		if r := putRes(s, rep); !r.Debounced || r.ID != b.ID {
			t.Fatalf("replace = %+v, want a debounce of %d", r, b.ID)
		}
		before := durable(s)
		if before.Jobs[a].Key != "" || before.Jobs[b.ID].Key != "k" || before.Jobs[b.ID].Body != "b2" || before.Jobs[a].Body != "a2" {
			t.Fatalf("before the restart: %+v", before.Jobs)
		}
		if snapshot {
			ok(t, s.compactNow())
		}
		closeT(t, s)
		s = openT(t, dir, opts)
		if diff := cmp.Diff(before, durable(s)); diff != "" {
			t.Errorf("snapshot %v: after a restart (-before +after):\n%s", snapshot, diff)
		}
		if r := putRes(s, deb("b3", 2)); !r.Debounced || r.ID != b.ID {
			t.Errorf("snapshot %v: a put after the restart = %+v, want a debounce of %d", snapshot, r, b.ID)
		}
		closeT(t, s)
	}
}

// BenchmarkDebounce: 20 bursts of 10,000 puts of one key over 1 s by 8
// callers (goroutines: the engine is in process) on a Store on disk
// (default fsync), debounce 200 ms, max wait 2 s, and one burst of 3 s
// (storetest.BenchDebounce).
//
//	go test -run '^$' -bench Debounce -benchtime 1x ./memstore/
func BenchmarkDebounce(b *testing.B) {
	s, err := Open(b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	stores := []queue.Store{s, s, s, s, s, s, s, s}
	for range b.N {
		storetest.BenchDebounce(b, stores, 20)
	}
}
