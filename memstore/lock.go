package memstore

import (
	"container/heap"
	"context"
	"slices"
	"time"

	"github.com/hourglass-io/hourglass/internal/wal"
	"github.com/hourglass-io/hourglass/lock"
)

// Locks is the embedded engine's lock.Store and lock.Notifier: the holders
// and fair queues of locks and semaphores, in memory, a part of the Store
// (see part.go) under its mutex, on its clock. Locks are not written to
// the log: after a restart no lock is held and no waiter queued. Fencing
// tokens keep increasing across a restart all the same, because no fence
// is less than the clock in microseconds.
//
// The earliest lease or queue deadline is the part's next deadline: the
// Store's one timer drops what has ended and wakes the waiters of its
// name; a released or expired lock with no waiters takes no memory. It is
// safe for concurrent use.
type Locks struct {
	inMemory
	e *engine

	// Guarded by the engine's mutex.
	names     map[string]*lockState
	lastFence uint64       // the last fence issued, for every name
	due       deadlineHeap // (deadline, name); stale entries are skipped
	listeners listeners    // by name
}

type lockState struct {
	holders map[string]int64 // token -> lease end (Unix ns)
	queue   []waiter         // fair waiters, in arrival order
}

type waiter struct {
	token string
	until int64 // place lapses (Unix ns)
}

type deadline struct {
	at   int64
	name string
}

type deadlineHeap []deadline

func (h deadlineHeap) Len() int           { return len(h) }
func (h deadlineHeap) Less(i, j int) bool { return h[i].at < h[j].at }
func (h deadlineHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *deadlineHeap) Push(x any)        { *h = append(*h, x.(deadline)) }
func (h *deadlineHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// Locks returns the Store's lock.Store. Every call returns the same Locks;
// Close of the Store stops it.
func (s *Store) Locks() *Locks { return &s.locks }

func (l *Locks) init(e *engine) {
	l.e = e
	l.names = map[string]*lockState{}
}

func (l *Locks) close() {
	clear(l.names)
	clear(l.listeners.byKey)
	l.due = nil
}

// tx is the terms of the Locks' operations (see update).
func (l *Locks) tx() tx { return tx{e: l.e, closed: lock.ErrClosed} }

// prune drops the ended leases and lapsed places of st, and reports
// whether it dropped any.
func prune(st *lockState, now int64) bool {
	changed := false
	for tok, until := range st.holders {
		if until <= now {
			delete(st.holders, tok)
			changed = true
		}
	}
	n := len(st.queue)
	st.queue = slices.DeleteFunc(st.queue, func(w waiter) bool { return w.until <= now })
	return changed || len(st.queue) != n
}

// state returns the live state of name (nil when there is none), pruned.
func (l *Locks) state(name string, now int64) *lockState {
	st := l.names[name]
	if st == nil {
		return nil
	}
	prune(st, now)
	return st
}

// tidy forgets name when it has neither holders nor waiters.
func (l *Locks) tidy(name string, st *lockState) {
	if len(st.holders) == 0 && len(st.queue) == 0 {
		delete(l.names, name)
	}
}

// schedule makes the timer fire by at for name.
func (l *Locks) schedule(name string, at int64) {
	heap.Push(&l.due, deadline{at, name})
	if len(l.due) > 4*len(l.names)+64 {
		l.rebuild() // stale entries of released or renewed leases
	}
}

// next is the earliest lease or queue deadline (perhaps of a lease since
// released or renewed), or never.
func (l *Locks) next() int64 {
	if len(l.due) == 0 {
		return never
	}
	return l.due[0].at
}

// advance drops what has ended by now and wakes the waiters of those names.
func (l *Locks) advance(now int64) wal.Ticket {
	for len(l.due) > 0 && l.due[0].at <= now {
		d := heap.Pop(&l.due).(deadline)
		st := l.names[d.name]
		if st == nil {
			continue
		}
		if prune(st, now) {
			l.e.wake(&l.listeners, d.name)
		}
		l.tidy(d.name, st)
	}
	return 0
}

// rebuild makes the heap hold one entry per name, its earliest deadline, so
// that it never outgrows the names by more than a constant factor.
func (l *Locks) rebuild() {
	l.due = l.due[:0]
	for name, st := range l.names {
		if len(st.holders) == 0 && len(st.queue) == 0 {
			continue
		}
		at := int64(never)
		for _, until := range st.holders {
			at = min(at, until)
		}
		for _, w := range st.queue {
			at = min(at, w.until)
		}
		l.due = append(l.due, deadline{at, name})
	}
	heap.Init(&l.due)
}

// update runs f as one operation (see the engine's update): f returns the
// names whose listeners to wake, and its outcome.
func (l *Locks) update(ctx context.Context, f func(now int64) (wake []string, err error)) error {
	return write(ctx, l.tx(), func(now int64) (wal.Ticket, error) {
		wake, err := f(now)
		for _, name := range wake {
			l.e.wake(&l.listeners, name)
		}
		return 0, err
	})
}

// Acquire implements lock.Store.
func (l *Locks) Acquire(ctx context.Context, req lock.AcquireRequest) (lock.Grant, error) {
	return update(ctx, l.tx(), func(now int64) (lock.Grant, wal.Ticket, error) {
		return l.acquire(req, now), 0, nil
	})
}

// acquire is Acquire at now.
func (l *Locks) acquire(req lock.AcquireRequest, now int64) lock.Grant {
	st := l.state(req.Name, now)
	if st == nil {
		st = &lockState{holders: map[string]int64{}}
		l.names[req.Name] = st
	}
	free := req.Limit - len(st.holders)
	pos := slices.IndexFunc(st.queue, func(w waiter) bool { return w.token == req.Token })
	if _, held := st.holders[req.Token]; !held && free > 0 && (len(st.queue) == 0 || pos >= 0 && pos < free) {
		if pos >= 0 {
			st.queue = slices.Delete(st.queue, pos, pos+1)
		}
		fence := max(l.lastFence+1, uint64(now/1000))
		l.lastFence = fence
		until := now + int64(req.TTL)
		st.holders[req.Token] = until
		l.schedule(req.Name, until)
		return lock.Grant{Acquired: true, Fence: fence}
	}
	if req.Queue {
		until := now + int64(req.QueueTTL)
		if pos >= 0 {
			st.queue[pos].until = until
		} else {
			st.queue = append(st.queue, waiter{req.Token, until})
		}
		l.schedule(req.Name, until)
	}
	// How long until a slot may come free without a release: the earliest
	// lease, or, when slots are free but kept for waiters ahead, the
	// earliest place to lapse.
	wait := int64(never)
	if free <= 0 {
		for _, until := range st.holders {
			wait = min(wait, until-now)
		}
	} else {
		for _, w := range st.queue {
			if w.token != req.Token {
				wait = min(wait, w.until-now)
			}
		}
	}
	l.tidy(req.Name, st)
	if wait == never {
		wait = int64(time.Millisecond)
	}
	return lock.Grant{Wait: time.Duration(wait)}
}

// held returns name's state and the lease end of token's grant of it; ok
// is false (and the state tidied) when token holds no live grant of name.
func (l *Locks) held(name, token string, now int64) (st *lockState, until int64, ok bool) {
	if st = l.state(name, now); st == nil {
		return nil, 0, false
	}
	if until, ok = st.holders[token]; !ok {
		l.tidy(name, st)
		return nil, 0, false
	}
	return st, until, true
}

// Release implements lock.Store.
func (l *Locks) Release(ctx context.Context, name, token string) error {
	return l.update(ctx, func(now int64) ([]string, error) {
		st, _, ok := l.held(name, token, now)
		if !ok {
			return nil, lock.ErrNotHeld
		}
		delete(st.holders, token)
		l.tidy(name, st)
		return []string{name}, nil
	})
}

// Refresh implements lock.Store.
func (l *Locks) Refresh(ctx context.Context, name, token string, ttl time.Duration) error {
	return l.update(ctx, func(now int64) ([]string, error) {
		st, _, ok := l.held(name, token, now)
		if !ok {
			return nil, lock.ErrNotHeld
		}
		st.holders[token] = now + int64(ttl)
		l.schedule(name, now+int64(ttl))
		return nil, nil
	})
}

// TTL implements lock.Store.
func (l *Locks) TTL(ctx context.Context, name, token string) (time.Duration, error) {
	return read(ctx, l.tx(), func(now int64) (time.Duration, error) {
		_, until, ok := l.held(name, token, now)
		if !ok {
			return 0, lock.ErrNotHeld
		}
		return time.Duration(until - now), nil
	})
}

// Leave implements lock.Store.
func (l *Locks) Leave(ctx context.Context, name, token string) error {
	return l.update(ctx, func(now int64) ([]string, error) {
		st := l.state(name, now)
		if st == nil {
			return nil, nil
		}
		n := len(st.queue)
		st.queue = slices.DeleteFunc(st.queue, func(w waiter) bool { return w.token == token })
		left := len(st.queue) != n
		l.tidy(name, st)
		if !left {
			return nil, nil
		}
		return []string{name}, nil
	})
}

// Listen implements lock.Notifier: wake(name) is called after each release
// of name, each waiter leaving its queue, and each lease or place of name
// that the timer finds ended.
func (l *Locks) Listen(ctx context.Context, name string, wake func(name string)) (stop func(), err error) {
	return l.e.listen(ctx, &l.listeners, name, wake, lock.ErrClosed)
}

// heldLocks reports how many names the Locks keeps (tests: memory is
// bounded).
func (l *Locks) heldLocks() int {
	l.e.mu.Lock()
	defer l.e.mu.Unlock()
	return len(l.names)
}
