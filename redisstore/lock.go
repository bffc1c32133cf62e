package redisstore

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"strconv"
	"strings"
	"time"

	"github.com/hourglass-io/hourglass/lock"
	"github.com/redis/go-redis/v9"
)

var lockScripts = struct {
	lock, acquire, release, refresh, ttl, leave *op
}{
	lock:    operation("lk_lock"),
	acquire: operation("lk_acquire"),
	release: operation("lk_release"),
	refresh: operation("lk_refresh"),
	ttl:     operation("lk_ttl"),
	leave:   operation("lk_leave"),
}

// Locks is the lock.Store and lock.Notifier on Redis, sharing its Store's
// client, prefix and clock. The keys of a lock named n live under
// "<prefix>lk:{n}:" (m, h, q, qe), and its wake-up channel, a shard
// channel, beside them (w), so every script touches one cluster slot.
// A name holding a brace would break that hash tag, so such a name lives
// under "<prefix>lk:{~<crc32 of n>}:<n>:" instead.
//
// Waiters of one name in one process share one SSUBSCRIBE subscription
// (one connection per cluster slot listened to). Locks is safe for
// concurrent use; it needs no Close of its own (the Store's Close ends
// the subscriptions).
type Locks struct{ s *Store }

// Locks returns the Store's lock.Store.
func (s *Store) Locks() *Locks { return &Locks{s: s} }

// lockBase is the common start of the keys of the lock name, and its hash tag.
func (k keys) lockBase(name string) (base, tag string) {
	if !strings.ContainsAny(name, "{}") {
		return k.prefix + "lk:{" + name + "}:", name
	}
	tag = "~" + strconv.FormatUint(uint64(crc32.ChecksumIEEE([]byte(name))), 16)
	return k.prefix + "lk:{" + tag + "}:" + name + ":", tag
}

// lockKeys are KEYS[1..4] of the lock scripts: m, h, q, qe. The four are
// slices of one string: one allocation, not four.
func (k keys) lockKeys(name string) []string {
	b, _ := k.lockBase(name)
	all := b + "m" + b + "h" + b + "q" + b + "qe"
	n := len(b) + 1
	return []string{all[:n], all[n : 2*n], all[2*n : 3*n], all[3*n:]}
}

// lockHolders is the key h of the lock name, the one key a release needs.
func (k keys) lockHolders(name string) string {
	if !strings.ContainsAny(name, "{}") {
		return k.prefix + "lk:{" + name + "}:h"
	}
	b, _ := k.lockBase(name)
	return b + "h"
}

// lockChannel is the wake-up channel of the lock name (lk_wake in
// scripts/lk_lib.lua derives it from the key h).
func (k keys) lockChannel(name string) string {
	b, _ := k.lockBase(name)
	return b + "w"
}

// run runs o with KEYS ks and ARGV args, whose first is the time.
func (l *Locks) run(ctx context.Context, o *op, ks []string, args []any) (any, error) {
	v, err := l.s.r.run(ctx, call{op: o, keys: ks, args: args})
	return v, err
}

// status runs an operation whose reply is one integer.
func (l *Locks) status(ctx context.Context, o *op, ks []string, args []any) (int64, error) {
	v, err := l.run(ctx, o, ks, args)
	if err != nil {
		return 0, err
	}
	r := replyOf(o)
	n := r.int(v)
	return n, r.done()
}

func micros(d time.Duration) string { return strconv.FormatInt(d.Microseconds(), 10) }

// Acquire implements lock.Store. A lock (Limit 1) goes to lk_lock, which
// grants a free lock in its one-holder form; a semaphore to lk_acquire.
// With req.Replicas above 0, the script and a WAIT run in one pipeline on
// the connection of the lock's master, so that WAIT counts the replicas
// that have the grant.
func (l *Locks) Acquire(ctx context.Context, req lock.AcquireRequest) (lock.Grant, error) {
	o := lockScripts.lock
	var args []any
	switch {
	case req.Limit > 1:
		o = lockScripts.acquire
		queue := "0"
		if req.Queue {
			queue = "1"
		}
		args = []any{l.s.now(), req.Token, req.Limit, micros(req.TTL), queue, micros(req.QueueTTL)}
	case req.Queue:
		args = []any{l.s.now(), req.Token, micros(req.TTL), "1", micros(req.QueueTTL)}
	default:
		args = []any{l.s.now(), req.Token, micros(req.TTL)}
	}
	var (
		v        any
		err      error
		replicas int
	)
	if req.Replicas > 0 {
		v, replicas, err = l.acquireWait(ctx, o, req, args)
	} else {
		v, err = l.run(ctx, o, l.s.k.lockKeys(req.Name), args)
	}
	if err != nil {
		return lock.Grant{}, err
	}
	r := replyOf(o)
	n := r.int(v)
	if err := r.done(); err != nil {
		return lock.Grant{}, err
	}
	if n > 0 {
		return lock.Grant{Acquired: true, Fence: uint64(n), Replicas: replicas}, nil
	}
	return lock.Grant{Wait: time.Duration(-n) * time.Microsecond}, nil
}

// acquireWait runs lk_acquire and a WAIT in one pipeline on the
// connection of the lock's master, outside the runner's shared batches (a
// WAIT holds its connection until the replicas answer).
func (l *Locks) acquireWait(ctx context.Context, o *op, req lock.AcquireRequest, argv []any) (any, int, error) {
	if err := l.s.r.open(locksFamily); err != nil {
		return nil, 0, err
	}
	ks := l.s.k.lockKeys(req.Name)
	var node redis.Cmdable = l.s.c
	if cc, ok := l.s.c.(*redis.ClusterClient); ok {
		m, err := cc.MasterForKey(ctx, ks[0])
		if err != nil {
			return nil, 0, l.s.r.fail(ctx, locksFamily, err)
		}
		node = m
	}
	fn := o.fn
	for attempt := 0; ; attempt++ {
		var ev *redis.Cmd
		var wait *redis.Cmd
		_, _ = node.Pipelined(ctx, func(p redis.Pipeliner) error {
			ev = p.FCall(ctx, fn, ks, argv...)
			wait = p.Do(ctx, "WAIT", req.Replicas, req.ReplicaTimeout.Milliseconds())
			return nil
		})
		v, err := ev.Result()
		if err != nil && isNoFunction(err) && attempt == 0 {
			if err := l.s.r.load(ctx); err != nil {
				return nil, 0, l.s.r.fail(ctx, locksFamily, err)
			}
			continue
		}
		if err != nil {
			return nil, 0, l.s.r.fail(ctx, locksFamily, err)
		}
		n, err := wait.Int()
		if err != nil {
			return nil, 0, l.s.r.fail(ctx, locksFamily, err)
		}
		return v, n, nil
	}
}

// Release implements lock.Store.
func (l *Locks) Release(ctx context.Context, name, token string) error {
	n, err := l.status(ctx, lockScripts.release, []string{l.s.k.lockHolders(name)}, []any{l.s.now(), token})
	if err != nil {
		return err
	}
	if n == 0 {
		return lock.ErrNotHeld
	}
	return nil
}

// Refresh implements lock.Store.
func (l *Locks) Refresh(ctx context.Context, name, token string, ttl time.Duration) error {
	n, err := l.status(ctx, lockScripts.refresh, l.s.k.lockKeys(name), []any{l.s.now(), token, micros(ttl)})
	if err != nil {
		return err
	}
	if n == 0 {
		return lock.ErrNotHeld
	}
	return nil
}

// TTL implements lock.Store.
func (l *Locks) TTL(ctx context.Context, name, token string) (time.Duration, error) {
	n, err := l.status(ctx, lockScripts.ttl, l.s.k.lockKeys(name), []any{l.s.now(), token})
	if err != nil {
		return 0, err
	}
	if n < 0 {
		return 0, lock.ErrNotHeld
	}
	return time.Duration(n) * time.Microsecond, nil
}

// Leave implements lock.Store.
func (l *Locks) Leave(ctx context.Context, name, token string) error {
	_, err := l.run(ctx, lockScripts.leave, l.s.k.lockKeys(name), []any{l.s.now(), token})
	return err
}

// Listen implements lock.Notifier: wake(name) is called after every
// release of name and every waiter leaving its queue, and once more after
// the subscription reconnects (wake-ups may have been lost meanwhile).
func (l *Locks) Listen(ctx context.Context, name string, wake func(name string)) (stop func(), err error) {
	if err := l.s.r.open(locksFamily); err != nil {
		return nil, err
	}
	_, tag := l.s.k.lockBase(name)
	// Subscriptions are shared per slot.
	h := &wake
	undo, err := l.s.notify.add(ctx, locksFamily, int(slot(tag)), l.s.k.lockChannel(name), name, h)
	if err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return nil, err
		}
		return nil, fmt.Errorf("redisstore: listening for lock %q: %w", name, err)
	}
	return undo, nil
}
