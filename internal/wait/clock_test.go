package wait_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/internal/wait"
)

// manualClock is a Clock that stands still: AfterFunc reports each timer
// armed on armed, and fire calls the last one's function.
type manualClock struct {
	now   time.Time
	armed chan time.Duration
	mu    sync.Mutex
	f     func()
}

func (c *manualClock) Now() time.Time { return c.now }

func (c *manualClock) AfterFunc(d time.Duration, f func()) wait.Timer {
	c.mu.Lock()
	c.f = f
	c.mu.Unlock()
	c.armed <- d
	return time.NewTimer(time.Hour) // Reset and Stop only; never waited on
}

func (c *manualClock) fire() {
	c.mu.Lock()
	f := c.f
	c.mu.Unlock()
	f()
}

// A Waiter on a Clock measures its deadline and poll on that clock, and
// waits on the clock's timer, not the machine's: a deadline long past on
// the machine's clock is an hour ahead on this one, and the wait ends when
// the clock's timer fires.
func TestWaiterOnClock(t *testing.T) {
	c := &manualClock{now: time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC), armed: make(chan time.Duration, 1)}
	w := wait.NewOn(c)
	ctx := context.Background()
	for _, tc := range []struct {
		deadline time.Time
		poll     time.Duration
		armed    time.Duration
		want     wait.Reason
	}{
		{c.now.Add(time.Hour), 0, time.Hour, wait.Deadline},
		{time.Time{}, 5 * time.Minute, 5 * time.Minute, wait.Polled},
		{c.now.Add(time.Hour), time.Minute, time.Minute, wait.Polled},
	} {
		got := make(chan wait.Reason, 1)
		go func() {
			r, err := w.Wait(ctx, tc.deadline, tc.poll)
			if err != nil {
				t.Error(err)
			}
			got <- r
		}()
		select {
		case d := <-c.armed:
			if d != tc.armed {
				t.Fatalf("the clock's timer armed for %v, want %v", d, tc.armed)
			}
		case <-time.After(waitFor):
			t.Fatal("Wait armed no timer of the clock")
		}
		select {
		case r := <-got:
			t.Fatalf("Wait returned %v before the clock's timer fired", r)
		default:
		}
		c.fire()
		if r := <-got; r != tc.want {
			t.Fatalf("Wait = %v, want %v", r, tc.want)
		}
	}
	mustWait(t, w, ctx, c.now.Add(-time.Nanosecond), 0, wait.Deadline)
	if wait.NewOn(nil) == nil || wait.Or(nil) != wait.Real || wait.Or(c) != wait.Clock(c) {
		t.Fatal("a nil clock is not the machine's")
	}
}
