package lock

import (
	"context"
	"sync"
	"time"

	"github.com/hourglass-io/hourglass/internal/wait"
)

// Lock is a held lock or semaphore slot: a lease in the store under a
// random owner token, with the fencing token of its grant. Its methods are
// safe for concurrent use.
type Lock struct {
	c     *Client
	name  string
	token string
	limit int
	fence uint64
	ttl   time.Duration
	// parent is the context Obtain was given: Context is derived from it
	// (its values, not its cancellation) when first asked for.
	parent context.Context
	stop   chan struct{} // closed by Release: ends the renewal
	done   chan struct{} // closed when the renewal goroutine ends

	// mu guards the fields below.
	mu       sync.Mutex
	deadline time.Time // local estimate of the lease's end (never later than the store's)
	cause    error     // why the lock is no longer held, once this process knows (nil: held)
	// ctx and cancel are made by the first Context or Lost (at once for a
	// lock that renews itself), and expiry, which cancels ctx at deadline,
	// with them: a lock whose Context nobody asks for costs no context and
	// no timer.
	ctx      context.Context
	cancel   context.CancelCauseFunc
	expiry   wait.Timer
	released bool
}

func (c *Client) newLock(ctx context.Context, name, token string, limit int, fence uint64, o ObtainOptions, start time.Time) *Lock {
	l := &Lock{c: c, name: name, token: token, limit: limit, fence: fence, ttl: o.TTL, parent: ctx, deadline: start.Add(o.TTL)}
	if o.AutoRenew {
		l.stop, l.done = make(chan struct{}), make(chan struct{})
		go l.renew(l.Context())
	}
	return l
}

// Name returns the name of the lock or semaphore.
func (l *Lock) Name() string { return l.name }

// Token returns the owner token: random, unique to this grant.
func (l *Lock) Token() string { return l.token }

// Fence returns the fencing token of the grant: larger than that of every
// earlier grant of the same name, on any process. Pass it to the resource
// the lock protects, which refuses writes carrying a smaller one than it
// has seen (see the package documentation).
func (l *Lock) Fence() uint64 { return l.fence }

// Context returns a context that is cancelled when the lock is no longer
// held, as far as this process can tell: after Release (cause
// ErrReleased), when a renewal finds the lock lost (cause ErrNotHeld), or
// when the lease runs out with no successful renewal (cause
// ErrLeaseExpired). context.Cause tells which. Work done under the lock
// should stop when it is cancelled.
func (l *Lock) Context() context.Context {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ctx == nil {
		l.ctx, l.cancel = context.WithCancelCause(context.WithoutCancel(l.parent))
		if l.heldLocked() {
			l.expiry = l.c.clock.AfterFunc(l.deadline.Sub(l.c.clock.Now()), l.expire)
		} else {
			l.cancel(l.cause)
		}
	}
	return l.ctx
}

// Lost returns a channel closed when Context is cancelled.
func (l *Lock) Lost() <-chan struct{} { return l.Context().Done() }

// heldLocked reports whether the lock is held as far as this process can
// tell, recording ErrLeaseExpired as the cause once the deadline passed.
func (l *Lock) heldLocked() bool {
	if l.cause == nil && !l.c.clock.Now().Before(l.deadline) {
		l.cause = ErrLeaseExpired
	}
	return l.cause == nil
}

// expire is expiry's function: the lease ran out, unless a renewal
// moved the deadline meanwhile.
func (l *Lock) expire() {
	l.mu.Lock()
	if !l.heldLocked() {
		l.cancel(l.cause)
	}
	l.mu.Unlock()
}

// lose records that the lock is no longer held, for cause unless a cause
// is known already (a lease that ran out before the release said so).
func (l *Lock) lose(cause error) {
	l.mu.Lock()
	if l.heldLocked() {
		l.cause = cause
	}
	if l.ctx != nil {
		if l.expiry != nil {
			l.expiry.Stop()
		}
		l.cancel(l.cause)
	}
	l.mu.Unlock()
}

// Release gives up the lock and stops its renewal. ErrNotHeld when the
// lease had already run out (someone else may have held the lock since).
func (l *Lock) Release(ctx context.Context) error {
	l.mu.Lock()
	first := !l.released
	l.released = true
	l.mu.Unlock()
	if first && l.stop != nil {
		close(l.stop)
		<-l.done
	}
	err := l.c.s.Release(ctx, l.name, l.token)
	if err == nil || isNotHeld(err) {
		l.lose(ErrReleased)
	}
	return err
}

// Refresh sets the lease to end ttl from now (ttl 0: the lock's TTL).
// ErrNotHeld when the lock was lost; the lock's Context is then cancelled.
func (l *Lock) Refresh(ctx context.Context, ttl time.Duration) error {
	if ttl == 0 {
		ttl = l.ttl
	}
	if ttl < MinTTL || ttl > MaxTTL {
		return ErrInvalidTTL
	}
	return l.refresh(ctx, ttl)
}

func (l *Lock) refresh(ctx context.Context, ttl time.Duration) error {
	start := l.c.clock.Now()
	err := l.c.s.Refresh(ctx, l.name, l.token, ttl)
	if isNotHeld(err) {
		l.lose(ErrNotHeld)
		return err
	}
	if err != nil {
		return err
	}
	l.mu.Lock()
	if l.heldLocked() {
		l.deadline = start.Add(ttl)
		if l.expiry != nil {
			l.expiry.Reset(l.deadline.Sub(l.c.clock.Now()))
		}
	} else if l.ctx != nil {
		l.cancel(l.cause)
	}
	l.mu.Unlock()
	return nil
}

// TTL returns how long the lease has left on the store's clock.
// ErrNotHeld when the lock was lost.
func (l *Lock) TTL(ctx context.Context) (time.Duration, error) {
	d, err := l.c.s.TTL(ctx, l.name, l.token)
	if isNotHeld(err) {
		l.lose(ErrNotHeld)
	}
	return d, err
}

// renew refreshes the lease every third of its TTL, on the Client's clock,
// until Release, retrying failures to reach the store more often until the
// lease runs out.
func (l *Lock) renew(lctx context.Context) {
	defer close(l.done)
	every := l.ttl / 3
	due := make(chan struct{}, 1)
	t := l.c.clock.AfterFunc(every, func() {
		select {
		case due <- struct{}{}:
		default:
		}
	})
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-lctx.Done():
			return
		case <-due:
		}
		ctx, cancel := context.WithTimeout(lctx, every)
		err := l.refresh(ctx, l.ttl)
		cancel()
		switch {
		case err == nil:
			t.Reset(every)
		case isNotHeld(err):
			return
		default:
			t.Reset(max(every/4, time.Millisecond))
		}
	}
}
