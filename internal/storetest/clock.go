package storetest

import (
	"sync"
	"time"
)

// Clock is a manual clock for deterministic tests. Its time moves only when
// Advance is called. It is safe for concurrent use.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a Clock that reads start until it is advanced.
func NewClock(start time.Time) *Clock {
	return &Clock{now: start}
}

// Now returns the clock's current time. Its method value is what a store
// under test takes as its clock.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d. It panics if d is negative: a
// store's clock never runs backwards.
func (c *Clock) Advance(d time.Duration) {
	if d < 0 {
		panic("storetest: Clock.Advance with a negative duration")
	}
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}
