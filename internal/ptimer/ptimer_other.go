//go:build !linux

package ptimer

import "time"

// AfterFunc returns time.AfterFunc's timer: this system has no timerfd.
func AfterFunc(d time.Duration, f func()) Stopper { return fallback(d, f) }
