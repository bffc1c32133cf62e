package queue_test

import (
	"context"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/memstore"
	"github.com/hourglass-io/hourglass/queue"
)

// While no reserve of a Queue has waited lately (no tube is subscribed), a
// put, a reserve that takes a job and a delete take no lock of the
// Queue's hub: with that lock held by the test they still finish.
func TestNoWaiterNoHubLock(t *testing.T) {
	s, err := memstore.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	q, err := queue.New(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
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
