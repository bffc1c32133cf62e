package memstore_test

import (
	"errors"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/internal/testkit/storetest"
	"github.com/hourglass-io/hourglass/memstore"
	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/ratelimit"
)

// Tube limits are durable: a store opened again (from the log, or from a
// snapshot) has them, set and cleared as they were; and a rate starts as if
// a whole burst had just been taken, so a restart gives a tube no more than
// its rate.
func TestLimitsRestart(t *testing.T) {
	for _, snapshot := range []bool{false, true} {
		t.Run(map[bool]string{false: "log", true: "snapshot"}[snapshot], func(t *testing.T) {
			dir := t.TempDir()
			clock := storetest.NewClock(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
			open := func() (*memstore.Store, *queue.Queue) {
				s, err := memstore.Open(dir, &memstore.Options{Clock: clock.Now, Fsync: memstore.FsyncNo})
				if err != nil {
					t.Fatal(err)
				}
				q, err := queue.New(s, nil)
				if err != nil {
					t.Fatal(err)
				}
				return s, q
			}
			ctx := t.Context()
			s, q := open()
			kept := queue.Limits{
				Rate:  ratelimit.Limit{Events: 2, Per: time.Second, Burst: 2},
				Cap:   3,
				Group: queue.GroupLimits{Rate: ratelimit.Limit{Events: 1, Per: 2 * time.Second, Burst: 1}, Cap: 1},
			}
			for tube, l := range map[string]queue.Limits{"kept": kept, "cleared": {Cap: 1}} {
				if err := q.SetLimits(ctx, tube, l); err != nil {
					t.Fatal(err)
				}
			}
			if err := q.ClearLimits(ctx, "cleared"); err != nil {
				t.Fatal(err)
			}
			if _, err := q.Put(ctx, "kept", queue.NewJob{Body: []byte("x")}); err != nil {
				t.Fatal(err)
			}
			if _, err := q.Put(ctx, "kept", queue.NewJob{Group: "g", Body: []byte("g")}); err != nil {
				t.Fatal(err)
			}
			if snapshot {
				if err := memstore.Compact(s); err != nil {
					t.Fatal(err)
				}
			}
			q.Close()
			s.Close()

			s, q = open()
			defer s.Close()
			defer q.Close()
			all, err := q.LimitedTubes(ctx)
			if err != nil || len(all) != 1 || all["kept"] != kept {
				t.Fatalf("LimitedTubes after reopening = %v, %v; want only kept: %v", all, err, kept)
			}
			// Nothing passes until one interval after the open (500ms).
			only := queue.ReserveOptions{Tubes: []string{"kept"}, Timeout: -1}
			if j, err := q.Reserve(ctx, only); !errors.Is(err, queue.ErrTimeout) {
				t.Fatalf("Reserve at the open: job %d, %v; want ErrTimeout", j.ID, err)
			}
			clock.Advance(500 * time.Millisecond)
			if j, err := q.Reserve(ctx, only); err != nil || j.Tube != "kept" {
				t.Fatalf("Reserve an interval after the open: %q, %v; want the tube's own job", j.Tube, err)
			}
			// The group's rate starts spent too: its job waits 2s.
			clock.Advance(time.Second)
			if j, err := q.Reserve(ctx, only); !errors.Is(err, queue.ErrTimeout) {
				t.Fatalf("Reserve of the group 1.5s after the open: job %d, %v; want ErrTimeout", j.ID, err)
			}
			clock.Advance(500 * time.Millisecond)
			if j, err := q.Reserve(ctx, only); err != nil || j.Tube != "kept;g" {
				t.Fatalf("Reserve of the group 2s after the open: %q, %v; want the group's job", j.Tube, err)
			}
		})
	}
}

// A Reserve waiting on a tube its rate holds back returns when the rate
// frees a job, on the real clock, with no poll to wake it (the poll
// interval is an hour), and never sooner than the rate allows.
func TestLimitRateWakesWaiter(t *testing.T) {
	s, err := memstore.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	storetest.LimitRateWakesWaiter(t, s)
}
