package redisstore_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/internal/testkit/storetest"
	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/redisstore"
)

// sessionStore returns a store on topo with a manual clock, partitioning
// tubes by parts (nil: one partition each), and a Queue over it, both
// closed when the test ends.
func sessionStore(t *testing.T, topo topology, parts func(string) int) (*storetest.Clock, *redisstore.Store, *queue.Queue) {
	t.Helper()
	clock := storetest.NewClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	s := newStore(t, topo.client(t), &redisstore.Options{Clock: clock.Now, Partitions: parts})
	q, err := queue.New(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Close() })
	return clock, s, q
}

// When a session stops renewing its lease, Reap returns the jobs its owners
// hold, long before their TTR, and leaves everyone else's alone.
func TestSessionsReap(t *testing.T) {
	for _, topo := range topologies {
		t.Run(topo.name, func(t *testing.T) {
			ctx := context.Background()
			clock, s, q := sessionStore(t, topo, nil)
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
			parts := func(tube string) int {
				if tube == "wide" {
					return 4
				}
				return 1
			}
			clock, s, q := sessionStore(t, topo, parts)
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

// The owners of one session reserve from the same tubes, yet each is told
// only its own reservations, across tags, and not one whose TTR ran out;
// an owner whose name holds pattern characters is matched exactly.
func TestSessionsReservations(t *testing.T) {
	for _, topo := range topologies {
		t.Run(topo.name, func(t *testing.T) {
			ctx := context.Background()
			clock, _, q := sessionStore(t, topo, nil)
			for _, tube := range []string{"s1", "s2", "s3"} { // on different tags
				for range 2 {
					if _, err := q.Put(ctx, tube, queue.NewJob{Body: []byte(tube), TTR: time.Minute}); err != nil {
						t.Fatal(err)
					}
				}
			}
			short, err := q.Put(ctx, "s1", queue.NewJob{Body: []byte("short"), Priority: 9, TTR: 2 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			star, one, other := q.WithOwner("a/*"), q.WithOwner("a/1"), q.WithOwner("a/1:x")
			reserve := func(q *queue.Queue, tube string) queue.ID {
				t.Helper()
				j, err := q.Reserve(ctx, queue.ReserveOptions{Tubes: []string{tube}, Timeout: -1})
				if err != nil {
					t.Fatal(err)
				}
				return j.ID
			}
			held := func(q *queue.Queue) map[queue.ID]time.Duration {
				t.Helper()
				rs, err := q.Held(ctx)
				if err != nil {
					t.Fatal(err)
				}
				m := map[queue.ID]time.Duration{}
				for _, r := range rs {
					m[r.ID] = r.Left
				}
				return m
			}
			a := reserve(one, "s1")
			b := reserve(one, "s2")
			c := reserve(star, "s3")
			d := reserve(other, "s1")
			if _, err := one.ReserveJob(ctx, short); err != nil {
				t.Fatal(err)
			}
			clock.Advance(time.Second)
			for _, c := range []struct {
				q    *queue.Queue
				want map[queue.ID]time.Duration
			}{
				{one, map[queue.ID]time.Duration{a: 59 * time.Second, b: 59 * time.Second, short: time.Second}},
				{star, map[queue.ID]time.Duration{c: 59 * time.Second}},
				{other, map[queue.ID]time.Duration{d: 59 * time.Second}},
			} {
				if got := held(c.q); !equalMaps(got, c.want) {
					t.Errorf("Held of %s = %v, want %v", c.q.Owner(), got, c.want)
				}
			}
			clock.Advance(time.Second) // short's TTR runs out
			if got, want := held(one), map[queue.ID]time.Duration{a: 58 * time.Second, b: 58 * time.Second}; !equalMaps(got, want) {
				t.Errorf("Held of a/1 once a TTR ran out = %v, want %v", got, want)
			}
			if n, err := one.Abandon(ctx); err != nil || n != 2 {
				t.Errorf("Abandon of a/1 = %d, %v; want 2", n, err)
			}
			if got := held(star); len(got) != 1 {
				t.Errorf("Held of a/* after a/1 abandoned = %v, want its one job", got)
			}
		})
	}
}

func equalMaps(a, b map[queue.ID]time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// An owner of a session that no longer holds what it reserved through this
// process (deleted, released, buried) has no tag to read for Reservations:
// a beanstalkd connection that closes empty-handed reads no ledger, which
// costs a record read per job others hold. One that may hold a job (a
// TTR ran out, which the process does not see) is read, and is forgotten
// once the read finds nothing.
func TestSessionsLedgerReadOnlyWhereHeld(t *testing.T) {
	ctx := context.Background()
	clock, s, q := sessionStore(t, topologies[0], nil)
	for _, tube := range []string{"s1", "s2", "s3", "s4"} { // on different tags
		if _, err := q.Put(ctx, tube, queue.NewJob{Body: []byte(tube), TTR: time.Minute}); err != nil {
			t.Fatal(err)
		}
	}
	o := q.WithOwner("a/1")
	reserve := func(tube string) queue.ID {
		t.Helper()
		j, err := o.Reserve(ctx, queue.ReserveOptions{Tubes: []string{tube}, Timeout: -1})
		if err != nil {
			t.Fatal(err)
		}
		return j.ID
	}
	a, b, c, d := reserve("s1"), reserve("s2"), reserve("s3"), reserve("s4")
	if got := redisstore.LedgerTags(s, "a/1"); len(got) != 4 {
		t.Fatalf("tags to read holding 4 jobs on 4 tags = %v, want 4", got)
	}
	if err := o.Delete(ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := o.Release(ctx, b, 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := o.Bury(ctx, c, 0); err != nil {
		t.Fatal(err)
	}
	if got, want := redisstore.LedgerTags(s, "a/1"), []int{redisstore.TubeTag("s4")}; !slices.Equal(got, want) {
		t.Fatalf("tags to read holding d only = %v, want %v", got, want)
	}
	rs, err := o.Held(ctx)
	if err != nil || len(rs) != 1 || rs[0].ID != d {
		t.Fatalf("Held = %v, %v; want d only", rs, err)
	}
	clock.Advance(2 * time.Minute) // d's TTR runs out
	if got := redisstore.LedgerTags(s, "a/1"); len(got) != 1 {
		t.Fatalf("tags to read once d's TTR ran out = %v, want its tag, until read", got)
	}
	if rs, err := o.Held(ctx); err != nil || len(rs) != 0 {
		t.Fatalf("Held once d's TTR ran out = %v, %v; want none", rs, err)
	}
	if got := redisstore.LedgerTags(s, "a/1"); len(got) != 0 {
		t.Fatalf("tags to read once a read found nothing = %v, want none", got)
	}
}
