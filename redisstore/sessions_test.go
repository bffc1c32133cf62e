package redisstore_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/internal/storetest"
	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/redisstore"
)

// When a session stops renewing its lease, Reap returns the jobs its owners
// hold, long before their TTR, and leaves everyone else's alone.
func TestSessionsReap(t *testing.T) {
	for _, topo := range topologies {
		t.Run(topo.name, func(t *testing.T) {
			ctx := context.Background()
			clock := storetest.NewClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
			s := newStore(t, topo.client(t), &redisstore.Options{Clock: clock.Now})
			q, err := queue.New(s, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer q.Close()
			tubes := []string{"s1", "s2", "s3"} // on different tags
			for _, tube := range tubes {
				for range 2 {
					if _, err := q.Put(ctx, tube, queue.NewJob{Body: []byte(tube), TTR: time.Hour}); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := s.KeepAlive(ctx, "a", 2*time.Second); err != nil {
				t.Fatal(err)
			}
			if err := s.KeepAlive(ctx, "b", time.Hour); err != nil {
				t.Fatal(err)
			}
			a1, a2, b1 := q.WithOwner("a/1"), q.WithOwner("a/2"), q.WithOwner("b/1")
			reserve := func(q *queue.Queue, tube string) queue.Job {
				t.Helper()
				j, err := q.Reserve(ctx, queue.ReserveOptions{Tubes: []string{tube}, Timeout: -1})
				if err != nil {
					t.Fatal(err)
				}
				return j
			}
			ja := reserve(a1, "s1")
			reserve(a1, "s2")
			reserve(a2, "s3")
			done := reserve(a2, "s1")
			if err := a2.Delete(ctx, done.ID); err != nil {
				t.Fatal(err)
			}
			jb := reserve(b1, "s2")

			clock.Advance(time.Second)
			if n, err := s.Reap(ctx); err != nil || n != 0 {
				t.Fatalf("Reap while the lease holds = %d, %v; want 0", n, err)
			}
			clock.Advance(1500 * time.Millisecond)
			n, err := s.Reap(ctx)
			if err != nil || n != 3 {
				t.Fatalf("Reap after the lease lapsed = %d, %v; want the 3 jobs session a held", n, err)
			}
			st, err := q.StatsJob(ctx, ja.ID)
			if err != nil {
				t.Fatal(err)
			}
			if st.State != queue.Ready || st.Releases != 0 || st.Timeouts != 0 {
				t.Fatalf("job of the dead session: %+v, want ready with no release or timeout counted", st)
			}
			if st, err := q.StatsJob(ctx, jb.ID); err != nil || st.State != queue.Reserved {
				t.Fatalf("job of the live session: %+v, %v; want still reserved", st, err)
			}
			if n, err := s.Reap(ctx); err != nil || n != 0 {
				t.Fatalf("second Reap = %d, %v; want 0", n, err)
			}
			if err := s.EndSession(ctx, "b"); err != nil {
				t.Fatal(err)
			}
			if err := s.CheckInvariants(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// Several servers reaping one lapsed session at once take back each of its
// references once: a tube a live session also holds keeps its counters,
// one only the lapsed session held is gone, on every partition.
func TestSessionsReapHolds(t *testing.T) {
	for _, topo := range topologies {
		t.Run(topo.name, func(t *testing.T) {
			ctx := context.Background()
			clock := storetest.NewClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
			parts := func(tube string) int {
				if tube == "wide" {
					return 4
				}
				return 1
			}
			s := newStore(t, topo.client(t), &redisstore.Options{Clock: clock.Now, Partitions: parts})
			q, err := queue.New(s, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer q.Close()
			if err := s.KeepAlive(ctx, "a", time.Second); err != nil {
				t.Fatal(err)
			}
			if err := s.KeepAlive(ctx, "b", time.Hour); err != nil {
				t.Fatal(err)
			}
			a, b := q.WithOwner("a/1"), q.WithOwner("b/1")
			hold := func(q *queue.Queue, tube string, n int) {
				t.Helper()
				if err := q.Hold(ctx, tube, n); err != nil {
					t.Fatalf("Hold(%s, %d): %v", tube, n, err)
				}
			}
			hold(a, "shared", 3)
			hold(b, "shared", 1)
			hold(a, "wide", 2)
			for _, tube := range []string{"shared", "wide"} {
				for range 8 {
					id, err := q.Put(ctx, tube, queue.NewJob{Body: []byte("x"), TTR: time.Minute})
					if err != nil {
						t.Fatal(err)
					}
					if err := q.Delete(ctx, id); err != nil {
						t.Fatal(err)
					}
				}
			}
			if st, err := q.StatsTube(ctx, "wide"); err != nil || st.TotalJobs != 8 || st.Deletes != 8 {
				t.Fatalf("StatsTube(wide), held on its 4 partitions = %+v, %v; want 8 put and deleted", st, err)
			}

			clock.Advance(2 * time.Second)
			var wg sync.WaitGroup
			errs := make(chan error, 4)
			for range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if _, err := s.Reap(ctx); err != nil {
						errs <- err
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatalf("Reap: %v", err)
			}
			if st, err := q.StatsTube(ctx, "shared"); err != nil || st.TotalJobs != 8 {
				t.Fatalf("StatsTube(shared), still held by b = %+v, %v; want its 8 jobs counted", st, err)
			}
			if st, err := q.StatsTube(ctx, "wide"); !errors.Is(err, queue.ErrNotFound) {
				t.Fatalf("StatsTube(wide), held only by the lapsed session = %+v, %v; want ErrNotFound", st, err)
			}
			// b's one reference is the last: taking back two takes back one.
			hold(b, "shared", -2)
			if st, err := q.StatsTube(ctx, "shared"); !errors.Is(err, queue.ErrNotFound) {
				t.Fatalf("StatsTube(shared) after b let go = %+v, %v; want ErrNotFound", st, err)
			}
			if err := s.CheckInvariants(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}
