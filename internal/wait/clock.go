package wait

import "time"

// Clock is the time a client's wait loop reads (Now) and waits on
// (AfterFunc, like time.AfterFunc: f is called in its own goroutine once
// the clock has moved d on). Real is the machine's; a suite that drives
// time passes a manual one (storetest.Clock is one) to a Waiter (NewOn),
// a Line (LineOptions.Clock) and the client whose loop reads it.
type Clock interface {
	Now() time.Time
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a Clock's timer; *time.Timer is one.
type Timer = interface {
	Reset(d time.Duration) bool
	Stop() bool
}

// Real is the machine's clock.
var Real Clock = realClock{}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// Or returns c, or Real when c is nil: a client's clock option.
func Or(c Clock) Clock {
	if c == nil {
		return Real
	}
	return c
}
