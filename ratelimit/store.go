package ratelimit

import (
	"context"
	"time"
)

// Store is the contract between a Limiter and a back end: one method per
// atomic decision. Every method decides for all the given limits of one key
// at once, from the store's own clock: either every limit admits the cost
// and every one is charged, or none is. The Limiter validates everything
// before calling (keys are not empty, limits are valid and of the method's
// algorithm, n is at least 1 and n*Quota fits every limit), so a Store may
// assume valid input. The one exception is Limiter.Peek: an allow (GCRA
// OpAllow, SlidingLog, SlidingWindow) of n 0, which must charge nothing
// and report the key's state.
//
// A key's state for one limit is separate from its state for another
// limit: calling with other limits starts from an idle key. A Store keeps
// nothing for an idle key longer than it needs to.
//
// Implementations: memstore.(*Store).Limits and redisstore.(*Store).Limits.
// internal/testkit/storetest.RateLimit is the conformance suite of this contract.
type Store interface {
	// GCRA applies a GCRA decision for n events (each limit charged
	// n*Quota) on key, by op: allow, reserve within maxWait, cancel or
	// roll back the decision of at (see Op). maxWait and at are those of
	// GCRARequest; an op that does not use them ignores them.
	GCRA(ctx context.Context, key string, n int, limits []Limit, op Op, maxWait time.Duration, at time.Time) (Decision, error)
	// SlidingLog admits n events (n*Quota entries per limit) on key when
	// every limit's window has room for them, and records them.
	SlidingLog(ctx context.Context, key string, n int, limits []Limit) (Decision, error)
	// SlidingWindow admits n events on key when every limit's two-counter
	// estimate has room for them, and counts them.
	SlidingWindow(ctx context.Context, key string, n int, limits []Limit) (Decision, error)
}

// Op is what a GCRARequest asks.
type Op int

// The operations of a GCRARequest.
const (
	// OpAllow charges the cost if it passes now.
	OpAllow Op = iota
	// OpReserve charges the cost at the earliest time it passes, if that
	// is within MaxWait, and returns the delay until then.
	OpReserve
	// OpCancel gives back the cost of a reservation whose time (At) has
	// not come yet.
	OpCancel
	// OpRollback gives back the cost of an admission made at At (the Now
	// of its Decision) less the time since then, so that it never gives
	// back more than later admissions left free: what Limiter.AllowAll
	// does to the keys that passed when another did not.
	OpRollback
)

// GCRARequest is one GCRA decision of a batch (Batcher), the arguments of
// Store.GCRA.
type GCRARequest struct {
	// Op is the operation.
	Op Op
	// N is the number of events; each limit is charged N*Quota.
	N int
	// Limits are the limits of the key, all of algorithm GCRA.
	Limits []Limit
	// MaxWait (OpReserve) is the longest delay accepted; negative means
	// any.
	MaxWait time.Duration
	// At (OpCancel) is the reservation's time to act, on the store's
	// clock: the Now of its Decision plus its Delay. At (OpRollback) is
	// the Now of the admission's Decision.
	At time.Time
}

// Decision is a Store's answer.
type Decision struct {
	// OK: the cost was admitted (Allow), a slot was reserved (Reserve), or
	// something was given back (Cancel, Rollback).
	OK bool
	// Remaining is how many more events (of the limits' quotas) would pass
	// now, the least over the limits.
	Remaining int
	// RetryAfter, when OK is false, is the time until the same call could
	// pass; zero when OK.
	RetryAfter time.Duration
	// ResetAfter is the time until the key is idle again (every limit back
	// to its full burst), the longest over the limits.
	ResetAfter time.Duration
	// Delay (Reserve) is the time from Now until the reserved slot.
	Delay time.Duration
	// Now is the store's clock at the decision.
	Now time.Time
}

// Batcher is an optional ability of a Store: many GCRA decisions, each on
// its own key and atomic on its own, in one round trip. Limiter.AllowEach
// uses it when the Store has it.
type Batcher interface {
	// GCRABatch applies reqs[i] to keys[i], for every i, and returns the
	// decisions in order.
	GCRABatch(ctx context.Context, keys []string, reqs []GCRARequest) ([]Decision, error)
}
