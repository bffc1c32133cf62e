package storetest

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/hourglass-io/hourglass/internal/wait"
)

// Clock is a manual clock for deterministic tests. Its time moves only when
// Advance is called, and its timers (AfterFunc) fire only then. It is safe
// for concurrent use. It is a wait.Clock: a client under test (a Queue
// and its Workers, a lock Client and its Locks, a rate Limiter, a schedule
// Client's Run, ttlhash's Consume and ReadWait) waits on it when passed as
// its Options.Clock.
type Clock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*clockTimer // the armed ones
	armed  *wait.Waiter  // woken when a timer is armed (WaitArmed)
}

var _ wait.Clock = (*Clock)(nil)

// NewClock returns a Clock that reads start until it is advanced.
func NewClock(start time.Time) *Clock {
	return &Clock{now: start, armed: wait.New()}
}

// Armed returns how many timers are armed on the clock.
func (c *Clock) Armed() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// WaitArmed returns once at least n timers are armed on the clock — a
// waiter under test has gone to sleep on it, so that an Advance now is
// one it sleeps through — or ctx's error when ctx ends first. One
// goroutine at a time may call it.
func (c *Clock) WaitArmed(ctx context.Context, n int) error {
	for {
		if c.Armed() >= n {
			return nil
		}
		if _, err := c.armed.Wait(ctx, time.Time{}, 0); err != nil {
			return err
		}
	}
}

// Now returns the clock's current time. Its method value is what a store
// under test takes as its clock.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d and then, before it returns, calls
// the functions of the timers that fell due, earliest first, in the
// calling goroutine. It panics if d is negative: a store's clock never
// runs backwards.
func (c *Clock) Advance(d time.Duration) {
	if d < 0 {
		panic("storetest: Clock.Advance with a negative duration")
	}
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
	for {
		c.mu.Lock()
		var due *clockTimer
		for _, t := range c.timers {
			if !t.at.After(c.now) && (due == nil || t.at.Before(due.at)) {
				due = t
			}
		}
		if due == nil {
			c.mu.Unlock()
			return
		}
		c.disarm(due)
		c.mu.Unlock()
		due.f()
	}
}

// AfterFunc is time.AfterFunc on the clock: f is called once the clock
// has been advanced by d (by the Advance that gets there), or at once, in
// its own goroutine, when d is not positive. The timer's Reset and Stop
// are those of a time.Timer. Its method value is what a store under test
// takes to wait on the clock (memstore.Options.AfterFunc).
func (c *Clock) AfterFunc(d time.Duration, f func()) interface {
	Reset(d time.Duration) bool
	Stop() bool
} {
	t := &clockTimer{c: c, f: f}
	t.Reset(d)
	return t
}

type clockTimer struct {
	c     *Clock
	f     func()
	at    time.Time
	armed bool
}

// Reset sets t to fire once the clock has moved d on, and reports whether
// it was armed.
func (t *clockTimer) Reset(d time.Duration) bool {
	c := t.c
	c.mu.Lock()
	defer c.mu.Unlock()
	was := t.armed
	if d <= 0 {
		c.disarm(t)
		go t.f()
		return was
	}
	t.at = c.now.Add(d)
	if !was {
		t.armed = true
		c.timers = append(c.timers, t)
		if c.armed != nil {
			c.armed.Wake()
		}
	}
	return was
}

// Stop disarms t and reports whether it was armed.
func (t *clockTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := t.armed
	t.c.disarm(t)
	return was
}

// disarm takes t out of the armed timers; c.mu is held.
func (c *Clock) disarm(t *clockTimer) {
	if t.armed {
		t.armed = false
		c.timers = slices.DeleteFunc(c.timers, func(x *clockTimer) bool { return x == t })
	}
}
