package memstore

import (
	"context"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/internal/testkit/storetest"
	"github.com/hourglass-io/hourglass/queue"
)

// TestConformance runs the queue.Store suite on a Store made by New and on
// one made by Open, whose log is then replayed into a second Store at the
// end of every subtest and checked.
func TestConformance(t *testing.T) {
	t.Run("Memory", func(t *testing.T) {
		storetest.Queue(t, func(t *testing.T, now func() time.Time) queue.Store {
			s := must(New(&Options{Clock: now}))
			t.Cleanup(func() { s.Close() })
			return s
		})
	})
	t.Run("Disk", func(t *testing.T) {
		storetest.Queue(t, func(t *testing.T, now func() time.Time) queue.Store {
			dir := t.TempDir()
			s, err := Open(dir, &Options{Clock: now, Fsync: FsyncNo})
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			t.Cleanup(func() {
				s.Close()
				// What the subtest left must replay into a consistent store.
				r, err := Open(dir, &Options{Clock: now})
				if err != nil {
					t.Errorf("reopen: %v", err)
					return
				}
				if err := r.CheckInvariants(context.Background()); err != nil {
					t.Errorf("after reopening: %v", err)
				}
				r.Close()
			})
			return s
		})
	})
}

// peek is a peek through StatsJob, as queue.Queue.Peek does it.
func peek(ctx context.Context, s *Store, id queue.ID) (queue.Job, error) {
	st, err := s.StatsJob(ctx, id)
	return st.Job(), err
}

// peekState is the next job of tube in state st, as queue.Queue's
// PeekReady, PeekDelayed and PeekBuried find it.
func peekState(ctx context.Context, s *Store, tube string, st queue.State) (queue.Job, error) {
	jobs, err := s.PeekStateN(ctx, tube, st, 1)
	if err == nil && len(jobs) == 0 {
		err = queue.ErrNotFound
	}
	if err != nil {
		return queue.Job{}, err
	}
	return jobs[0], nil
}

// TestClosedConformance: once the Store is closed, every primitive's store
// refuses with its package's closed error, the rate limits included.
func TestClosedConformance(t *testing.T) {
	s := must(New(nil))
	storetest.Closed(t, storetest.ClosedStores{
		Limits: s.RateLimits(), Hashes: s.Hashes(), Locks: s.Locks(), Schedules: s.Schedules(), Close: s.Close,
	})
}
