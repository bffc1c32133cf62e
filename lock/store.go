package lock

import (
	"context"
	"time"
)

// Store keeps the holders and waiters of named locks and semaphores. Each
// method is one atomic operation on the store, reading one moment of the
// store's clock (Redis: the server's TIME; the embedded engine: the process
// clock); every lease deadline is computed from that clock, never from a
// time the caller passes.
//
// A lock is a semaphore of limit 1: both live under one name space, and a
// name has at most Limit holders, each identified by a token of its own.
// The Client validates every argument before calling a Store, so a Store
// may assume a valid name, a non-empty token, a limit in [1, MaxLimit] and
// durations in [MinTTL, MaxTTL].
//
// Holders whose lease has ended and waiters whose place has lapsed count as
// gone from the moment their deadline passes, whether or not the store has
// removed them yet.
//
// Errors: ErrNotHeld for an outcome; anything else is a failure of the
// store (network, disk) and is never reported as a sentinel of this
// package, except ErrClosed after Close.
type Store interface {
	// Acquire grants token a slot of req.Name for req.TTL when fewer than
	// req.Limit live holders hold it and no live waiter queued before would
	// be passed over: a name with waiters grants only to the first
	// (Limit - holders) of them, in arrival order. Every grant carries a
	// fencing token greater than any earlier grant's of the name, and never
	// less than the store's clock in microseconds.
	//
	// When it does not grant and req.Queue is set, token joins the queue
	// of waiters (or keeps its place) with a place that lapses after
	// req.QueueTTL unless Acquire is called again. Grant.Wait then says how
	// long until the store may grant without a release (the earliest
	// holder's lease or waiter's place ending).
	Acquire(ctx context.Context, req AcquireRequest) (Grant, error)

	// Release ends token's hold on name and wakes the name's waiters.
	// ErrNotHeld when token holds no live lease of name.
	Release(ctx context.Context, name, token string) error

	// Refresh sets token's lease of name to end ttl from now. ErrNotHeld
	// when token holds no live lease of name.
	Refresh(ctx context.Context, name, token string, ttl time.Duration) error

	// TTL returns how long token's lease of name has left. ErrNotHeld when
	// token holds no live lease of name.
	TTL(ctx context.Context, name, token string) (time.Duration, error)

	// Leave removes token from the queue of name's waiters (a waiter that
	// gave up) and wakes the others. Leaving a queue one is not in is not
	// an error.
	Leave(ctx context.Context, name, token string) error
}

// AcquireRequest is the argument of Store.Acquire.
type AcquireRequest struct {
	Name  string
	Token string
	// Limit is the most holders the name may have: 1 for a lock.
	Limit int
	// TTL is the lease of a grant.
	TTL time.Duration
	// Queue makes a token that is not granted wait in line (fair mode).
	Queue bool
	// QueueTTL is how long a waiter's place lasts without another Acquire.
	QueueTTL time.Duration
	// Replicas, when above 0, asks the store to wait up to ReplicaTimeout
	// for that many replicas to acknowledge a grant (Redis's WAIT). A store
	// without replicas reports 0 in Grant.Replicas.
	Replicas       int
	ReplicaTimeout time.Duration
}

// Grant is the result of Store.Acquire.
type Grant struct {
	// Acquired reports whether token now holds a slot of the name.
	Acquired bool
	// Fence is the grant's fencing token (0 when not acquired).
	Fence uint64
	// Wait, when not acquired, is how long until a slot may come free
	// without a release; at most the earliest live lease's remainder.
	Wait time.Duration
	// Replicas is how many replicas acknowledged the grant, when
	// AcquireRequest.Replicas asked for it.
	Replicas int
}

// Notifier is implemented by stores that can wake waiters: its topics are
// lock names, in the one notifier shape every primitive uses. Without it,
// a waiting Client rechecks a busy name every Options.PollInterval.
type Notifier interface {
	// Listen arranges for wake(name) to be called, from any goroutine, soon
	// after a holder of name released it or a waiter left its queue. It
	// returns once the subscription is in effect: a release after Listen
	// returns is never missed. stop ends the subscription. Wake-ups are
	// hints; a store that may have lost some (a reconnect) calls wake.
	Listen(ctx context.Context, name string, wake func(name string)) (stop func(), err error)
}
