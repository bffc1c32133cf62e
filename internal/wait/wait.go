package wait

import (
	"context"
	"time"
)

// Reason says why Wait returned.
type Reason int

// The reasons.
const (
	// Woken: a wake-up was pending or came.
	Woken Reason = iota + 1
	// Polled: the poll bound passed.
	Polled
	// Deadline: the deadline passed.
	Deadline
)

// String returns the reason's name.
func (r Reason) String() string {
	switch r {
	case Woken:
		return "woken"
	case Polled:
		return "polled"
	case Deadline:
		return "deadline"
	}
	return "Reason(?)"
}

// Waiter is a goroutine's wait for wake-ups. Make one with New or NewOn.
type Waiter struct {
	ch    chan struct{} // capacity 1: a pending wake-up
	timer *time.Timer   // Wait's, reused; only Wait touches it
	clock Clock         // nil: the machine's, waited on with timer
}

// New returns a Waiter with no wake-up pending, whose deadlines and polls
// are on the machine's clock.
func New() *Waiter { return &Waiter{ch: make(chan struct{}, 1)} }

// NewOn is New on clock c (nil or Real: the machine's).
func NewOn(c Clock) *Waiter {
	w := New()
	if c != Real {
		w.clock = c
	}
	return w
}

// Wake leaves a wake-up pending, unless one is already, and reports
// whether it did. It never blocks.
func (w *Waiter) Wake() bool {
	select {
	case w.ch <- struct{}{}:
		return true
	default:
		return false
	}
}

// WakeTopic is Wake in the shape of a notifier's wake function.
func (w *Waiter) WakeTopic(string) { w.Wake() }

// Take removes the pending wake-up, if any, and reports whether there was
// one: a waiter that leaves uses it to pass a wake-up on.
func (w *Waiter) Take() bool {
	select {
	case <-w.ch:
		return true
	default:
		return false
	}
}

// Wait waits until a wake-up is pending (Woken, taking it), until deadline
// when it is not zero (Deadline), until poll has passed when it is
// positive (Polled), or until ctx ends (ctx's error). A pending wake-up
// comes first, then a deadline already passed. deadline and poll are on
// the Waiter's clock.
func (w *Waiter) Wait(ctx context.Context, deadline time.Time, poll time.Duration) (Reason, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if w.Take() {
		return Woken, nil
	}
	var (
		d      time.Duration
		reason Reason
	)
	if !deadline.IsZero() {
		d, reason = deadline.Sub(w.now()), Deadline
		if d <= 0 {
			return Deadline, nil
		}
	}
	if poll > 0 && (reason == 0 || poll < d) {
		d, reason = poll, Polled
	}
	var timeout <-chan time.Time
	var fired chan struct{} // a Clock's timer's
	switch {
	case reason != 0 && w.clock != nil:
		fired = make(chan struct{})
		t := w.clock.AfterFunc(d, func() { close(fired) })
		defer t.Stop()
	case reason != 0:
		if w.timer == nil {
			w.timer = time.NewTimer(d)
		} else {
			w.timer.Reset(d)
		}
		defer w.timer.Stop()
		timeout = w.timer.C
	}
	select {
	case <-w.ch:
		return Woken, nil
	case <-timeout:
		return reason, nil
	case <-fired:
		return reason, nil
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

func (w *Waiter) now() time.Time {
	if w.clock != nil {
		return w.clock.Now()
	}
	return time.Now()
}
