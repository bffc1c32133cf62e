package queue

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// ErrCancelled is what a cancelled job's holder learns: the cause
// (context.Cause) of a Worker handler's context whose job was cancelled is
// a *CancelError, which errors.Is reports as ErrCancelled.
var ErrCancelled = errors.New("queue: job cancelled")

// ErrNoCancel is returned by Cancel on a Queue whose store does not
// implement CancelStore.
var ErrNoCancel = errors.New("queue: the store cannot cancel jobs")

// CancelError says that job ID was cancelled, and why. It is the cause of a
// Worker handler's context (context.Cause) when its job is cancelled.
type CancelError struct {
	ID     ID
	Reason string // as given to Cancel, cut as CutReason cuts; "" for none
}

func (e *CancelError) Error() string {
	if e.Reason == "" {
		return fmt.Sprintf("queue: job %d cancelled", e.ID)
	}
	return fmt.Sprintf("queue: job %d cancelled: %s", e.ID, e.Reason)
}

// Is reports whether target is ErrCancelled.
func (e *CancelError) Is(target error) bool { return target == ErrCancelled }

// CancelStore is implemented by stores that cancel jobs (both back ends
// do).
type CancelStore interface {
	// Cancel removes the job with the given ID, in whatever state it is,
	// and counts a cancel in its tube (TubeStats.Cancels, not Deletes). It
	// returns the state the job was in, or ErrNotFound when there is no
	// such job. A reservation whose TTR has run out has ended first: the
	// job was ready. When the job was reserved, its holder is told: every
	// listener of the job's tube (ListenCancel), in any process sharing the
	// store, hears of it; the holder's later Delete, Release, Bury and
	// Touch find no job (ErrNotFound), and the job is never made ready
	// again. The reason has been cut by CutReason.
	Cancel(ctx context.Context, id ID, reason string) (State, error)

	// ListenCancel arranges for cancelled(id, reason) to be called, from
	// any goroutine, soon after a reserved job of tube (or of one of its
	// groups) is cancelled, in whatever process. It may also be called for
	// jobs of other tubes (a store may share one channel among tubes), and
	// with id 0 when cancels may have been missed (a reconnect): a listener
	// then checks the jobs it holds. ListenCancel returns once the
	// subscription is in effect: a cancel made after it returns is never
	// missed but for such a loss. stop ends the subscription.
	ListenCancel(ctx context.Context, tube string, cancelled func(id ID, reason string)) (stop func(), err error)
}

// Cancel cancels the job with the given ID, in whatever state it is: a
// ready, delayed or buried job is removed; a reserved job is removed and
// its holder told (a Worker's handler context is cancelled with a
// *CancelError as its cause, in whatever process the Worker runs); the
// holder's later delete, release, bury or touch finds no job. The reason
// (cut as CutReason cuts) travels to the holder. Cancel returns the state
// the job was in, ErrNotFound when there is no such job, and ErrNoCancel
// when the store cannot cancel.
func (q *Queue) Cancel(ctx context.Context, id ID, reason string) (State, error) {
	if err := checkID(id); err != nil {
		return 0, err
	}
	cs, ok := q.store.(CancelStore)
	if !ok {
		return 0, ErrNoCancel
	}
	st, err := cs.Cancel(ctx, id, CutReason(reason))
	q.hub.forget() // a place under its tube's cap may be free now
	settled(ctx, "cancel", id, reason, 0, err)
	return st, err
}

// cancels keeps, for a Worker, the handlers to cancel when their job is
// cancelled, fed by the store's ListenCancel.
type cancels struct {
	q *Queue

	// lost is signalled when cancels may have been missed: the Worker
	// then checks the jobs it holds (check).
	lost chan struct{}

	mu    sync.Mutex
	jobs  map[ID]context.CancelCauseFunc
	heard map[ID]string // cancels heard of jobs not watched yet (a reserve's reply still on its way)
	order []ID          // heard, oldest first, at most maxHeard
}

// maxHeard bounds what cancels keeps of cancels it heard for jobs it does
// not watch.
const maxHeard = 1024

// listen subscribes to the cancels of tubes; the returned stop ends the
// subscriptions. A store that cannot cancel gives a nil *cancels.
func (q *Queue) listenCancels(ctx context.Context, tubes []string) (*cancels, func(), error) {
	cs, ok := q.store.(CancelStore)
	if !ok {
		return nil, func() {}, nil
	}
	c := &cancels{q: q, lost: make(chan struct{}, 1), jobs: map[ID]context.CancelCauseFunc{}, heard: map[ID]string{}}
	var stops []func()
	stop := func() {
		for _, s := range stops {
			s()
		}
	}
	for _, t := range tubes {
		s, err := cs.ListenCancel(ctx, t, c.heardOf)
		if errors.Is(err, ErrNoCancel) { // a wrapper of a store that cannot
			stop()
			return nil, func() {}, nil
		}
		if err != nil {
			stop()
			return nil, nil, err
		}
		stops = append(stops, s)
	}
	return c, stop, nil
}

// heardOf is the store's call: job id was cancelled (id 0: cancels may
// have been missed).
func (c *cancels) heardOf(id ID, reason string) {
	if id == 0 {
		select {
		case c.lost <- struct{}{}:
		default:
		}
		return
	}
	c.mu.Lock()
	f := c.jobs[id]
	if f == nil {
		if _, ok := c.heard[id]; !ok {
			if len(c.order) >= maxHeard {
				delete(c.heard, c.order[0])
				c.order = c.order[1:]
			}
			c.heard[id] = reason
			c.order = append(c.order, id)
		}
	}
	c.mu.Unlock()
	if f != nil {
		f(&CancelError{ID: id, Reason: reason})
	}
}

// check cancels, each time cancels may have been missed, the watched jobs
// that the store no longer has, until ctx ends.
func (c *cancels) check(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.lost:
		}
		c.mu.Lock()
		held := make(map[ID]context.CancelCauseFunc, len(c.jobs))
		for id, f := range c.jobs {
			held[id] = f
		}
		c.mu.Unlock()
		for id, f := range held {
			if _, err := c.q.store.StatsJob(ctx, id); errors.Is(err, ErrNotFound) {
				f(&CancelError{ID: id, Reason: "the job is gone (a cancel may have been missed)"})
			}
		}
	}
}

// watch arranges for cancel to be called with a *CancelError when job id
// is cancelled (at once if that was heard already); unwatch ends it.
func (c *cancels) watch(id ID, cancel context.CancelCauseFunc) {
	if c == nil {
		return
	}
	c.mu.Lock()
	reason, heard := c.heard[id]
	if !heard {
		c.jobs[id] = cancel
	}
	c.mu.Unlock()
	if heard {
		cancel(&CancelError{ID: id, Reason: reason})
	}
}

func (c *cancels) unwatch(id ID) {
	if c == nil {
		return
	}
	c.mu.Lock()
	delete(c.jobs, id)
	c.mu.Unlock()
}
