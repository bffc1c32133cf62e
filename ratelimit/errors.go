package ratelimit

import "errors"

// Errors of the Limiter. Test them with errors.Is. Being rate limited is not
// an error: it is a Result with Allowed false, or a Reservation whose OK is
// false.
var (
	// ErrInvalidLimit: a Limit fails Validate (no events, a zero period, a
	// negative burst, an unknown algorithm, limits of different algorithms
	// in one call, a sliding log longer than Options.MaxLogEvents, …), or no
	// limit was given. Nothing was charged.
	ErrInvalidLimit = errors.New("ratelimit: invalid limit")
	// ErrInvalidKey: the key is empty. Nothing was charged.
	ErrInvalidKey = errors.New("ratelimit: invalid key")
	// ErrInvalidCost: n is below 1. Nothing was charged.
	ErrInvalidCost = errors.New("ratelimit: invalid cost")
	// ErrImpossible: the cost of the call is larger than a limit's burst
	// (or, for the window algorithms, than its events per window), so no
	// amount of waiting would admit it. Nothing was charged.
	ErrImpossible = errors.New("ratelimit: cost exceeds the burst")
	// ErrWaitTooLong: Wait's slot lies beyond its context's deadline. It
	// is returned at once and nothing was charged.
	ErrWaitTooLong = errors.New("ratelimit: wait would exceed the deadline")
	// ErrUnsupported: Reserve or Wait with a window algorithm (SlidingLog,
	// SlidingWindow), which offer Allow with a retry-after only.
	ErrUnsupported = errors.New("ratelimit: operation not supported by the algorithm")
	// ErrClosed: the store was closed. A Limiter wraps it in ErrStore,
	// as it does every failure of its store.
	ErrClosed = errors.New("ratelimit: store closed")
	// ErrStore: the store failed (Redis unreachable, a timeout). The error
	// wraps the store's own error; the Options.Failure policy decides what
	// the call answered.
	ErrStore = errors.New("ratelimit: store failed")
	// ErrInvalidOption: New's Options (or its Store) are not usable; the
	// error names the field.
	ErrInvalidOption = errors.New("ratelimit: invalid option")
)
