// Package ratelimit implements distributed rate limits in the vocabulary of
// golang.org/x/time/rate: a Limiter answers Allow, Reserve and Wait for a
// key (a phone number, a user, a downstream service) under the limits given
// with each call, and keeps its state in a Store shared by every process:
// redisstore for many machines, memstore in one process.
//
// # Limits and algorithms
//
// A Limit is Events per Per. GCRA (the default) keeps one time per key and
// limit, and admits Burst events at one instant on an idle key, then one per
// interval (Per/Events, rounded up to a microsecond): in any interval of
// length d at most Burst + d*Events/Per events pass. Every(30*time.Minute)
// admits one event per 30 minutes, exactly. Funnel(capacity, drain, quota)
// is the same algorithm in the leaky bucket's words. SlidingLog admits at
// most Events in any window of length Per, exactly, at the cost of one entry
// per event; SlidingWindow approximates it with two counters. A cost above
// a limit's burst (or, for the windows, its events) can never pass and is
// refused with ErrImpossible rather than answered with a retry time.
//
// Several limits given to one call (one per second and 100 per day) are
// checked and charged together in one atomic store call: all or nothing.
// They must share an algorithm.
//
// # Reservations and fair waiting
//
// ReserveN (GCRA only) claims the earliest slot at which the events pass and
// returns the delay until then; slots are handed out in the order the
// reservations reach the store, so callers that wait for their slot, in any
// process, are served first come, first served. WaitN reserves and sleeps,
// refusing at once (ErrWaitTooLong) when the slot lies beyond the context's
// deadline, and giving the slot back when the context ends first.
// Reservation.Cancel gives back what no later reservation builds on.
//
// # Modes, partitions, failures
//
// Options.Mode Shared (the default) makes one limit per key for every
// process; PerInstance gives each instance its own. Options.Partitions
// splits a hot key into K partitions, each holding 1/K of the limit (on
// Redis Cluster, on K slots): a caller tries one partition and, when
// denied, one other. Over any interval of length d a partitioned GCRA limit
// admits at most d*Events/Per + max(Burst, K) events (each partition's
// burst is max(1, Burst/K)); it may deny a caller while a partition it did
// not try still has room. Options.Failure says what a call answers when the
// store fails: FailClosed (not allowed, with an error wrapping ErrStore),
// FailOpen (allowed, Result.StoreErr set) or FailLocal (an in-process
// Options.Local store decides). A store failure is never reported as a
// plain refusal.
//
// # Time
//
// Every decision is made on the store's clock: Redis's TIME in
// microseconds, or the embedded engine's clock. Results carry durations
// (RetryAfter, ResetAfter, Delay), never the store's absolute time, so
// processes with skewed clocks agree. A Reservation's wait for its slot
// counts its Delay on the Limiter's own clock (Options.Clock; the
// machine's when nil).
//
// The zero Limiter is not usable; make one with New. A Limiter is safe for
// concurrent use and holds no goroutines or timers of its own besides those
// of a blocked Wait.
package ratelimit
