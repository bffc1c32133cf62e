package ptimer

import "time"

// Stopper is what AfterFunc returns: the methods of *time.Timer that
// a timer set with a function needs, and Close, which releases what it
// holds.
type Stopper interface {
	Reset(d time.Duration) bool
	Stop() bool
	Close() error
}

// stdTimer is time.AfterFunc's timer as a Stopper.
type stdTimer struct{ *time.Timer }

func (t stdTimer) Close() error { t.Stop(); return nil }

func fallback(d time.Duration, f func()) Stopper { return stdTimer{time.AfterFunc(d, f)} }
