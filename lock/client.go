package lock

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	"github.com/hourglass-io/hourglass/internal/tracing"
	"github.com/hourglass-io/hourglass/internal/wait"
)

// Client obtains locks and semaphore slots from a Store. It is safe for
// concurrent use and holds no resources of its own: each Lock it returns
// owns its renewal, which Release stops.
type Client struct {
	s    Store
	opts Options
	// line holds the waiters of this Client, topics the lock names: the
	// waiters of one name share one wake-up subscription (ended with its
	// last waiter), and a wake-up (a release frees one slot) goes to one
	// waiting non-fair waiter, the longest waiting, and to every fair
	// waiter (only the store knows which of them is first in line), rather
	// than to all: a release does not set every waiter of the process
	// racing for one slot. nil when s is no Notifier.
	line *wait.Line
	// trace gives the tracer of Options.TracerProvider.
	trace *tracing.Source
	clock wait.Clock // Options.Clock, or the machine's
}

// New returns a Client of s. It returns an error wrapping ErrInvalidTTL or
// ErrInvalidOption when opts are out of range.
func New(s Store, opts *Options) (*Client, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	c := &Client{s: s}
	if opts != nil {
		c.opts = *opts
	}
	c.trace = tracing.New(c.opts.TracerProvider)
	c.clock = wait.Or(c.opts.Clock)
	if n, ok := s.(Notifier); ok {
		c.line = wait.NewLine(n.Listen, &wait.LineOptions{Clock: c.opts.Clock})
	}
	return c, nil
}

// Obtain obtains the lock name, waiting while another owner holds it until
// it is released or its lease ends, or until ctx ends (ErrNotObtained, also
// matching ctx's error). A waiter sends no commands while it waits on a
// store that is a Notifier, beyond one per lease of the holder (and, in
// fair mode, one per third of Options.QueueTTL to keep its place).
func (c *Client) Obtain(ctx context.Context, name string, opts *ObtainOptions) (*Lock, error) {
	return c.obtain(ctx, name, 1, opts, true)
}

// TryObtain obtains the lock name if no one holds it, or returns
// ErrNotObtained at once. ObtainOptions.Fair is ignored, but a free lock
// with fair waiters in line goes to them, not to TryObtain.
func (c *Client) TryObtain(ctx context.Context, name string, opts *ObtainOptions) (*Lock, error) {
	return c.obtain(ctx, name, 1, opts, false)
}

func newToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func (c *Client) obtain(ctx context.Context, name string, limit int, opts *ObtainOptions, block bool) (*Lock, error) {
	if tr := c.trace.Tracer(); tr != nil {
		return c.obtainTraced(ctx, tr, name, limit, opts, block)
	}
	return c.obtainUntraced(ctx, name, limit, opts, block)
}

func (c *Client) obtainUntraced(ctx context.Context, name string, limit int, opts *ObtainOptions, block bool) (*Lock, error) {
	if err := validName(name); err != nil {
		return nil, err
	}
	if err := validLimit(limit); err != nil {
		return nil, err
	}
	if err := opts.validate(); err != nil {
		return nil, err
	}
	var o ObtainOptions
	if opts != nil {
		o = *opts
	}
	if o.TTL == 0 {
		o.TTL, o.AutoRenew = c.opts.defaultTTL(), true
	}
	if o.Replicas > 0 && o.ReplicaTimeout == 0 {
		o.ReplicaTimeout = time.Second
	}
	req := AcquireRequest{
		Name: name, Token: newToken(), Limit: limit, TTL: o.TTL,
		Queue: block && o.Fair, QueueTTL: c.opts.queueTTL(),
		Replicas: o.Replicas, ReplicaTimeout: o.ReplicaTimeout,
	}
	var (
		w      *wait.Waiter
		place  *wait.Place // w's place in c.line, nil when polled
		got    bool
		polled bool // no wake-ups: poll every PollInterval
		queued bool
	)
	defer func() {
		if place != nil {
			// A waiter that leaves without the lock passes on a
			// wake-up it may have taken.
			c.line.Leave(place, !got)
		}
	}()
	giveUp := func(err error) (*Lock, error) {
		if queued {
			lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
			_ = c.s.Leave(lctx, name, req.Token)
			cancel()
		}
		return nil, err
	}
	for {
		start := c.clock.Now()
		g, err := c.s.Acquire(ctx, req)
		if err != nil {
			if ctx.Err() != nil {
				return giveUp(fmt.Errorf("%w: %w", ErrNotObtained, ctx.Err()))
			}
			return giveUp(err)
		}
		if g.Acquired {
			got = true
			l := c.newLock(ctx, name, req.Token, limit, g.Fence, o, start)
			if o.Replicas > 0 && g.Replicas < o.Replicas {
				rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
				_ = l.Release(rctx)
				cancel()
				return nil, fmt.Errorf("%w: %d of %d", ErrNotReplicated, g.Replicas, o.Replicas)
			}
			return l, nil
		}
		if !block {
			return nil, ErrNotObtained
		}
		queued = queued || req.Queue
		if w == nil {
			place, polled = c.await(ctx, name, req.Queue)
			if polled {
				w = wait.NewOn(c.clock)
			} else {
				w = place.Waiter
			}
			continue // a release before the subscription took effect is seen now
		}
		// Woken by a release, or look again when the earliest lease may
		// have ended, or (fair) when the place in line needs keeping.
		recheck := max(g.Wait, time.Millisecond)
		if req.Queue {
			recheck = min(recheck, req.QueueTTL/3)
		}
		var poll time.Duration
		if polled {
			poll = c.opts.pollInterval()
		}
		if _, err := w.Wait(ctx, c.clock.Now().Add(recheck), poll); err != nil {
			return giveUp(fmt.Errorf("%w: %w", ErrNotObtained, err))
		}
	}
}

// await enters a waiter of name in c.line, fair when it takes every
// wake-up of name, and returns its place, or nil and true when no
// wake-ups will come (the store is no Notifier, or its Listen failed).
func (c *Client) await(ctx context.Context, name string, fair bool) (place *wait.Place, polled bool) {
	if c.line == nil {
		return nil, true
	}
	p, err := c.line.Enter(ctx, []string{name}, fair)
	if err != nil {
		return nil, true
	}
	return p, false
}

// Semaphore is a named counting semaphore: at most Limit holders at once,
// each with its own lease, token and fencing token, in the Lock type. A
// lock is a semaphore of limit 1 under the same name; every user of a name
// must agree on its limit.
type Semaphore struct {
	c     *Client
	name  string
	limit int
}

// NewSemaphore returns the semaphore name of n slots. A bad name or n is
// reported by Acquire and TryAcquire (ErrInvalidName, ErrInvalidLimit).
func (c *Client) NewSemaphore(name string, n int) *Semaphore {
	return &Semaphore{c: c, name: name, limit: n}
}

// Name returns the semaphore's name.
func (s *Semaphore) Name() string { return s.name }

// Limit returns the semaphore's number of slots.
func (s *Semaphore) Limit() int { return s.limit }

// Acquire takes a slot, waiting as Obtain does while all are held.
func (s *Semaphore) Acquire(ctx context.Context, opts *ObtainOptions) (*Lock, error) {
	return s.c.obtain(ctx, s.name, s.limit, opts, true)
}

// TryAcquire takes a slot if one is free, or returns ErrNotObtained at once.
func (s *Semaphore) TryAcquire(ctx context.Context, opts *ObtainOptions) (*Lock, error) {
	return s.c.obtain(ctx, s.name, s.limit, opts, false)
}

// isNotHeld reports whether err says the lock is gone (as opposed to a
// failure to reach the store).
func isNotHeld(err error) bool { return errors.Is(err, ErrNotHeld) }
