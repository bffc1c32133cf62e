package queue_test

import (
	"context"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/memstore"
	"github.com/hourglass-io/hourglass/queue"
)

// While no reserve of a Queue has waited lately (no tube is subscribed), a
// put, a reserve that takes a job and a delete take no lock of the
// Queue's hub: with that lock held by the test they still finish.
func TestNoWaiterNoHubLock(t *testing.T) {
	q := memQueue(t)
	ctx := context.Background()
	cycle := func() error {
		if _, err := q.Put(ctx, "t", queue.NewJob{Body: []byte("x")}); err != nil {
			return err
		}
		j, err := q.Reserve(ctx, queue.ReserveOptions{Tubes: []string{"t"}, Timeout: -1})
		if err != nil {
			return err
		}
		return q.Delete(ctx, j.ID)
	}
	for range 3 {
		unlock := queue.LockHub(q)
		done := make(chan error, 1)
		go func() { done <- cycle() }()
		select {
		case err := <-done:
			unlock()
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			unlock()
			t.Fatal("a put, reserve and delete waited for the hub's lock while no reserve waited")
		}
	}
	// A reserve that waits subscribes to the tube, and the subscription
	// lingers: the hub keeps what it knows of the tube, under its lock,
	// and the same calls work as before.
	if _, err := q.Reserve(ctx, queue.ReserveOptions{Tubes: []string{"t"}, Timeout: time.Millisecond}); err != queue.ErrTimeout {
		t.Fatalf("reserve of an empty tube: %v, want ErrTimeout", err)
	}
	if n := queue.HubSubscriptions(q); n != 1 {
		t.Fatalf("%d tubes subscribed after a reserve waited, want 1", n)
	}
	for range 3 {
		if err := cycle(); err != nil {
			t.Fatal(err)
		}
	}
}

// PutMany never writes the caller's jobs: a job that needs a change (a
// default TTR, whole milliseconds, an empty body for none) is changed in
// a copy, and the store gets what it would have got before.
func TestPutManyLeavesJobsAlone(t *testing.T) {
	q := memQueue(t)
	ctx := context.Background()
	jobs := []queue.NewJob{
		{Body: []byte("a"), TTR: 5 * time.Second},                             // as the store takes it
		{Body: nil, TTR: 0, Delay: 1500*time.Microsecond + time.Hour},         // three changes
		{Body: []byte("c"), TTR: time.Second + time.Microsecond, Priority: 7}, // whole milliseconds
	}
	before := slices.Clone(jobs)
	res, err := q.PutMany(ctx, "t", jobs)
	if err != nil {
		t.Fatal(err)
	}
	for i := range jobs {
		if !reflect.DeepEqual(jobs[i], before[i]) {
			t.Errorf("job %d written: %+v, was %+v", i, jobs[i], before[i])
		}
	}
	want := []struct {
		ttr   time.Duration
		state queue.State
	}{{5 * time.Second, queue.Ready}, {queue.DefaultTTR, queue.Delayed}, {time.Second, queue.Ready}}
	for i, r := range res {
		st, err := q.StatsJob(ctx, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if st.TTR != want[i].ttr || st.State != want[i].state {
			t.Errorf("job %d: TTR %v, state %v; want %v, %v", i, st.TTR, st.State, want[i].ttr, want[i].state)
		}
	}
}

// memQueue is a Queue over the embedded engine in memory, both closed when
// the test ends.
func memQueue(tb testing.TB) *queue.Queue {
	tb.Helper()
	s, err := memstore.New(nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	q, err := queue.New(s, nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { q.Close() })
	return q
}
