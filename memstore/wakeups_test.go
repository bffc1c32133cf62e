package memstore

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/internal/testkit/storetest"
	"github.com/hourglass-io/hourglass/queue"
)

// countingStore is the Store with its Reserve calls counted.
type countingStore struct {
	*Store
	reserves atomic.Int64
}

func (c *countingStore) Reserve(ctx context.Context, req queue.ReserveRequest) (queue.ReserveResult, error) {
	c.reserves.Add(1)
	return c.Store.Reserve(ctx, req)
}

// TestDelayedJobsWakeOneWaiter: a delayed job that falls due while several
// reservers wait is taken by one of them, and no other is woken to look:
// the engine's timer wakes one waiter, the reserve that takes the last
// ready job says so (Drained), and the Queue sets no timer of its own for
// a due time the engine wakes it at (SelfWaking). Each reserver's loop
// costs three Reserve calls a job: the one that takes it, and after the
// delete the call that finds nothing and the one made after it starts
// waiting.
func TestDelayedJobsWakeOneWaiter(t *testing.T) {
	const (
		waiters = 4
		jobs    = 40
	)
	ctx := context.Background()
	s := must(New(nil))
	defer s.Close()
	cs := &countingStore{Store: s}
	q, err := queue.New(cs, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()

	var (
		wg      sync.WaitGroup
		got     atomic.Int64
		started atomic.Int64
		all     = make(chan struct{})
	)
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for range waiters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			started.Add(1)
			for {
				j, err := q.Reserve(rctx, queue.ReserveOptions{Tubes: []string{"due"}})
				if err != nil {
					return
				}
				if err := q.Delete(ctx, j.ID); err != nil {
					t.Errorf("Delete(%d): %v", j.ID, err)
				}
				if got.Add(1) == jobs {
					close(all)
				}
			}
		}()
	}
	// Every reserver is in Reserve, and the tube was asked (so the
	// subscription is in effect), before the first job falls due. A
	// reserver does not ask again a tube the store found empty, so the
	// number of reserves does not tell how many wait.
	deadline := time.Now().Add(10 * time.Second)
	for started.Load() < waiters || cs.reserves.Load() < 1 {
		if time.Now().After(deadline) {
			t.Fatalf("%d reservers started, %d reserves; want %d reservers waiting", started.Load(), cs.reserves.Load(), waiters)
		}
		time.Sleep(time.Millisecond)
	}
	before := cs.reserves.Load()
	for i := range jobs {
		// 10 ms apart, so that each falls due alone
		if _, err := q.Put(ctx, "due", queue.NewJob{Body: []byte("x"), Delay: time.Duration(20+10*i) * time.Millisecond}); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-all:
	case <-time.After(30 * time.Second):
		t.Fatalf("%d of %d jobs delivered", got.Load(), jobs)
	}
	cancel()
	wg.Wait()
	// Each job costs the reserve that takes it, and a wake-up that races
	// with a reserve now and then one more; the deleting reserver does not
	// ask the empty tube again. Before reserves remembered an empty tube it
	// was about 4 a job, and 5.2 before waiters were woken one a job.
	calls := cs.reserves.Load() - before
	if max := int64(jobs*2 + 2*waiters); calls > max {
		t.Errorf("%d Reserve calls for %d delayed jobs with %d reservers waiting, want at most %d (%.1f a job)", calls, jobs, waiters, max, float64(calls)/jobs)
	}
	t.Logf("%d Reserve calls for %d jobs (%.2f a job)", calls, jobs, float64(calls)/jobs)
}

// TestDelayedJobWithClockWithoutTimer: with a Clock and no AfterFunc the
// engine sets no timer, so a reserve waiting for a delayed job is woken by
// the Queue's own timer, and finds the job once the clock has passed its
// due time.
func TestDelayedJobWithClockWithoutTimer(t *testing.T) {
	ctx := context.Background()
	clock := storetest.NewClock(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
	s := must(New(&Options{Clock: clock.Now}))
	defer s.Close()
	cs := &countingStore{Store: s}
	// No poll within the test's time: only the Queue's timer for the due
	// time can wake the reserve.
	q, err := queue.New(cs, &queue.Options{PollInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	id, err := q.Put(ctx, "t", queue.NewJob{Body: []byte("x"), Delay: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	got := make(chan error, 1)
	go func() {
		j, err := q.Reserve(rctx, queue.ReserveOptions{Tubes: []string{"t"}})
		if err == nil && j.ID != id {
			err = fmt.Errorf("reserved job %d, want %d", j.ID, id)
		}
		got <- err
	}()
	// The reserve waits once it has asked twice (before and after it
	// joined the waiters); then the clock passes the due time.
	for cs.reserves.Load() < 2 {
		select {
		case err := <-got:
			t.Fatalf("Reserve returned before the job was due: %v", err)
		case <-time.After(time.Millisecond):
		}
	}
	clock.Advance(20 * time.Millisecond)
	if err := <-got; err != nil {
		t.Fatalf("Reserve: %v", err)
	}
}
