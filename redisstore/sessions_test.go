package redisstore_test

import (
	"context"
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
