package ratelimit

import (
	"fmt"
	"time"
)

// Algorithm says how a Limit counts events.
type Algorithm int

// The algorithms. The zero value, GCRA, is the default.
const (
	// GCRA is the generic cell rate algorithm (a token bucket kept as one
	// time per key, the theoretical arrival time): Events per Per on
	// average, with up to Burst passing at one instant. Its state is one
	// small value per key that expires when the key is idle. It supports
	// Allow, Reserve and Wait. The funnel (Funnel) is GCRA too.
	GCRA Algorithm = iota
	// SlidingLog is exact: at most Events in any window of length Per.
	// It keeps one entry per admitted event for Per (a sorted set on
	// Redis), so its memory grows with Events; Options.MaxLogEvents bounds
	// Events. Allow only.
	SlidingLog
	// SlidingWindow is approximate: two counters (this fixed window and the
	// last), the last weighted by how much of it still overlaps the sliding
	// window. It admits at most Events in each fixed window and about Events
	// in any sliding one. Allow only.
	SlidingWindow
)

var algorithmNames = [...]string{GCRA: "gcra", SlidingLog: "sliding-log", SlidingWindow: "sliding-window"}

// String returns the algorithm's name ("gcra", "sliding-log",
// "sliding-window").
func (a Algorithm) String() string {
	if a >= GCRA && a <= SlidingWindow {
		return algorithmNames[a]
	}
	return fmt.Sprintf("Algorithm(%d)", int(a))
}

// ParseAlgorithm reads an algorithm's name as String writes it.
func ParseAlgorithm(s string) (Algorithm, error) {
	for a, name := range algorithmNames {
		if s == name {
			return Algorithm(a), nil
		}
	}
	return 0, fmt.Errorf("%w: algorithm %q, want gcra, sliding-log or sliding-window", ErrInvalidLimit, s)
}

// maxSpan bounds the periods and the burst times the interval, so that
// every time stays an exact integer of microseconds in a float64 (2^53).
const maxSpan = 10 * 365 * 24 * time.Hour

// Limit is a rate: Events per Per. Its zero value is invalid; build one
// with PerSecond, PerMinute, PerHour, Every, Funnel or a literal.
//
// Burst (GCRA only) is exactly how many events may pass at one instant on
// an idle key: after Burst events at once, the next passes Per/Events
// later, and so on. Zero means Events. Events arrive on average at most
// Events per Per, and in any interval of length d at most Burst +
// d*Events/Per of them pass.
//
// Quota is what one event costs (zero means 1): AllowN(…, n, l) charges
// n*Quota. It is what makes a funnel: a call of quota q takes q of its
// capacity.
//
// The interval between events, Per/Events, is rounded up to a whole
// microsecond, so a limit never admits more than it states (a third of a
// second is 333,334 µs).
type Limit struct {
	// Events is how many events (units of Quota) pass per Per, at least 1.
	Events int
	// Per is the period, from 1 µs to ten years.
	Per time.Duration
	// Burst is how many events may pass at one instant (GCRA); 0 means
	// Events. The window algorithms ignore it: Events is their cap.
	Burst int
	// Quota is the cost of one event; 0 means 1.
	Quota int
	// Algorithm is how events are counted; the zero value is GCRA.
	Algorithm Algorithm
}

// PerSecond is n events per second, all of which may pass at once.
func PerSecond(n int) Limit { return Limit{Events: n, Per: time.Second, Burst: n} }

// PerMinute is n events per minute, all of which may pass at once.
func PerMinute(n int) Limit { return Limit{Events: n, Per: time.Minute, Burst: n} }

// PerHour is n events per hour, all of which may pass at once.
func PerHour(n int) Limit { return Limit{Events: n, Per: time.Hour, Burst: n} }

// PerDay is n events per 24 hours, all of which may pass at once.
func PerDay(n int) Limit { return Limit{Events: n, Per: 24 * time.Hour, Burst: n} }

// Every is one event per d, with a burst of 1: at most one event in any
// interval shorter than d. Every(30*time.Minute) is one SMS per 30 minutes.
func Every(d time.Duration) Limit { return Limit{Events: 1, Per: d, Burst: 1} }

// Funnel is the leaky bucket ("funnel") form of GCRA: a funnel holding
// capacity units that drains completely in drain (capacity/drain units
// leak per unit of time), and of which each call pours in quota units. A
// call passes when its quota fits in what the funnel has room for. An empty
// funnel admits capacity/quota calls at once.
func Funnel(capacity int, drain time.Duration, quota int) Limit {
	return Limit{Events: capacity, Per: drain, Burst: capacity, Quota: quota}
}

// WithBurst returns l with Burst b.
func (l Limit) WithBurst(b int) Limit { l.Burst = b; return l }

// WithAlgorithm returns l counted by a.
func (l Limit) WithAlgorithm(a Algorithm) Limit { l.Algorithm = a; return l }

// Interval is the time between two events at the limit's rate, Per/Events
// rounded up to a whole microsecond.
func (l Limit) Interval() time.Duration {
	if l.Events <= 0 {
		return 0
	}
	per := l.Per.Microseconds()
	ev := int64(l.Events)
	return time.Duration((per+ev-1)/ev) * time.Microsecond
}

// BurstOrDefault is Burst, or Events when Burst is zero.
func (l Limit) BurstOrDefault() int {
	if l.Burst == 0 {
		return l.Events
	}
	return l.Burst
}

// QuotaOrDefault is Quota, or 1 when Quota is zero.
func (l Limit) QuotaOrDefault() int {
	if l.Quota == 0 {
		return 1
	}
	return l.Quota
}

// Validate reports why l cannot be used, as an error wrapping
// ErrInvalidLimit, or nil.
func (l Limit) Validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidLimit, fmt.Sprintf(format, a...))
	}
	switch {
	case l.Algorithm < GCRA || l.Algorithm > SlidingWindow:
		return bad("unknown algorithm %d", int(l.Algorithm))
	case l.Events < 1:
		return bad("Events %d, want at least 1", l.Events)
	case l.Per < time.Microsecond || l.Per > maxSpan:
		return bad("Per %v, want 1µs to %v", l.Per, maxSpan)
	case l.Per%time.Microsecond != 0:
		return bad("Per %v is not a whole number of microseconds", l.Per)
	case l.Burst < 0:
		return bad("Burst %d, want 0 (Events) or more", l.Burst)
	case l.Quota < 0:
		return bad("Quota %d, want 0 (1) or more", l.Quota)
	case l.Events > 1<<40 || l.Quota > 1<<20 || l.Burst > 1<<40:
		return bad("Events %d, Burst %d or Quota %d too large", l.Events, l.Burst, l.Quota)
	case l.Algorithm == GCRA && l.Per < time.Duration(l.Events)*time.Microsecond:
		return bad("%d per %v is more than one event per microsecond", l.Events, l.Per)
	case l.Algorithm == GCRA && int64(l.BurstOrDefault()) > int64(maxSpan/l.Interval()):
		return bad("Burst %d times the interval %v exceeds %v", l.BurstOrDefault(), l.Interval(), maxSpan)
	}
	return nil
}

// String describes l, e.g. "100/1s burst 100 gcra".
func (l Limit) String() string {
	s := fmt.Sprintf("%d/%v", l.Events, l.Per)
	if l.Algorithm == GCRA {
		s += fmt.Sprintf(" burst %d", l.BurstOrDefault())
	}
	if q := l.QuotaOrDefault(); q != 1 {
		s += fmt.Sprintf(" quota %d", q)
	}
	return s + " " + l.Algorithm.String()
}
