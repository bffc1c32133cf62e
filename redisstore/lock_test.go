package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hourglass-io/hourglass/internal/testkit/backendtest"
	"github.com/hourglass-io/hourglass/internal/testkit/redistest"
	"github.com/hourglass-io/hourglass/internal/testkit/storetest"
	"github.com/hourglass-io/hourglass/lock"
	"github.com/hourglass-io/hourglass/memstore"
	"github.com/hourglass-io/hourglass/redisstore"
)

func TestLockConformance(t *testing.T) {
	for _, topo := range topologies {
		t.Run(topo.name, func(t *testing.T) {
			c := topo.client(t)
			storetest.Lock(t, func(t *testing.T, clock *storetest.Clock) lock.Store {
				return newStore(t, c, &redisstore.Options{Clock: clock.Now}).Locks()
			})
		})
	}
}

// 64 goroutines over 4 Clients, each on its own connection pool, never hold
// the lock together, and fences strictly increase.
func TestLockMutualExclusion(t *testing.T) {
	for _, topo := range topologies {
		t.Run(topo.name, func(t *testing.T) {
			prefix := redistest.Prefix(t)
			var stores []lock.Store
			for range 4 {
				s, err := redisstore.New(t.Context(), topo.client(t), &redisstore.Options{Prefix: prefix})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close() })
				stores = append(stores, s.Locks())
			}
			storetest.MutualExclusion(t, stores, 64, 10)
		})
	}
}

// counter counts the commands a client sends, but for the handshake of a
// new connection (the subscription's).
type counter struct {
	n      atomic.Int64
	second atomic.Pointer[chan struct{}] // closed at the second command
}

func (c *counter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *counter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.count(cmd)
		return next(ctx, cmd)
	}
}
func (c *counter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			c.count(cmd)
		}
		return next(ctx, cmds)
	}
}

func (c *counter) count(cmd redis.Cmder) {
	switch cmd.Name() {
	case "hello", "client", "auth", "select":
		return
	}
	if c.n.Add(1) == 2 {
		if ch := c.second.Load(); ch != nil {
			close(*ch)
		}
	}
}

// A waiter sends no commands while it waits for a holder whose lease is
// long, and gets the lock when it is released.
func TestLockWaiterIsQuiet(t *testing.T) {
	for _, topo := range topologies {
		t.Run(topo.name, func(t *testing.T) {
			prefix := redistest.Prefix(t)
			holderStore, err := redisstore.New(t.Context(), topo.client(t), &redisstore.Options{Prefix: prefix})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { holderStore.Close() })
			wc := topo.client(t)
			var cnt counter
			wc.AddHook(&cnt)
			waiterStore, err := redisstore.New(t.Context(), wc, &redisstore.Options{Prefix: prefix})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { waiterStore.Close() })
			holder, _ := lock.New(holderStore.Locks(), nil)
			waiter, _ := lock.New(waiterStore.Locks(), nil)
			for _, fair := range []bool{false, true} {
				h, err := holder.TryObtain(t.Context(), "quiet", &lock.ObtainOptions{TTL: time.Minute})
				if err != nil {
					t.Fatal(err)
				}
				got := make(chan error, 1)
				second := make(chan struct{})
				cnt.second.Store(&second)
				cnt.n.Store(0)
				go func() {
					ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
					defer cancel()
					l, err := waiter.Obtain(ctx, "quiet", &lock.ObtainOptions{TTL: time.Minute, Fair: fair})
					if err == nil {
						err = l.Release(ctx)
					}
					got <- err
				}()
				// The waiter tried, subscribed and tried again: then it is
				// waiting. Watch it for a while (a fair waiter renews its
				// place every 2s, so 1.5s shows none of that either).
				select {
				case <-second:
				case <-time.After(10 * time.Second):
					t.Fatal("the waiter did not try twice")
				}
				before := cnt.n.Load()
				watch := time.NewTimer(1500 * time.Millisecond)
				select {
				case err := <-got:
					t.Fatalf("waiter returned while the lock was held: %v", err)
				case <-watch.C:
				}
				if sent := cnt.n.Load() - before; sent > 1 {
					t.Errorf("fair=%v: the waiter sent %d commands in 1.5s of waiting", fair, sent)
				}
				if err := h.Release(t.Context()); err != nil {
					t.Fatal(err)
				}
				if err := <-got; err != nil {
					t.Fatalf("waiter after the release: %v", err)
				}
			}
		})
	}
}

// A holder learns at once when Redis has lost its lock (a failover to a
// replica that had not received it, a flush), at its next renewal.
func TestLockLostByRedis(t *testing.T) {
	for _, topo := range topologies {
		t.Run(topo.name, func(t *testing.T) {
			c := topo.client(t)
			prefix := redistest.Prefix(t)
			s := newStoreWithPrefix(t, c, prefix)
			clk := storetest.NewClock(time.Now()) // the holder's: its renewals
			cl, _ := lock.New(s.Locks(), &lock.Options{Clock: clk})
			const ttl = 600 * time.Millisecond
			l, err := cl.TryObtain(t.Context(), "gone", &lock.ObtainOptions{TTL: ttl, AutoRenew: true})
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Del(t.Context(), prefix+"lk:{gone}:h").Err(); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			if err := clk.WaitArmed(ctx, 2); err != nil { // the lease's end and the first renewal
				t.Fatalf("the renewal was not armed on the holder's clock: %v", err)
			}
			clk.Advance(ttl / 3)
			waitLost(t, l)
			if cause := context.Cause(l.Context()); !errors.Is(cause, lock.ErrNotHeld) {
				t.Fatalf("cause %v, want ErrNotHeld", cause)
			}
		})
	}
}

// A holder paused past its lease (here: one that does not renew) is told
// when the lease runs out, and another owner gets the lock. The store and
// the client share a manual clock, which the test moves past the lease.
func TestLockLeaseRunsOut(t *testing.T) {
	c := standaloneClient(t)
	clk := storetest.NewClock(time.Now().Truncate(time.Second))
	s := newStore(t, c, &redisstore.Options{Clock: clk.Now})
	cl, _ := lock.New(s.Locks(), &lock.Options{Clock: clk})
	const ttl = 200 * time.Millisecond
	l, err := cl.TryObtain(t.Context(), "short", &lock.ObtainOptions{TTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-l.Lost():
		t.Fatalf("lost before the lease's end: %v", context.Cause(l.Context()))
	default:
	}
	clk.Advance(ttl)
	waitLost(t, l)
	if cause := context.Cause(l.Context()); !errors.Is(cause, lock.ErrLeaseExpired) {
		t.Fatalf("cause %v, want ErrLeaseExpired", cause)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	l2, err := cl.Obtain(ctx, "short", &lock.ObtainOptions{TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if l2.Fence() <= l.Fence() {
		t.Fatalf("fence %d after %d", l2.Fence(), l.Fence())
	}
	if err := l.Release(t.Context()); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("Release by the lost holder: %v", err)
	}
}

func waitLost(t *testing.T, l *lock.Lock) {
	t.Helper()
	select {
	case <-l.Lost():
	case <-time.After(10 * time.Second):
		t.Fatal("holder not told within 10s")
	}
}

func newStoreWithPrefix(t testing.TB, c redis.UniversalClient, prefix string) *redisstore.Store {
	t.Helper()
	return backendtest.Open(t, c, &redisstore.Options{Prefix: prefix})
}

// WAIT after a grant: with no replica to acknowledge it, the grant is undone
// and the lock is free.
func TestLockReplicas(t *testing.T) {
	for _, topo := range topologies {
		t.Run(topo.name, func(t *testing.T) {
			s := newStore(t, topo.client(t), nil)
			cl, _ := lock.New(s.Locks(), nil)
			o := &lock.ObtainOptions{TTL: time.Minute, Replicas: 1, ReplicaTimeout: 20 * time.Millisecond}
			if _, err := cl.TryObtain(t.Context(), "w", o); !errors.Is(err, lock.ErrNotReplicated) {
				t.Fatalf("TryObtain with Replicas 1 and none: %v", err)
			}
			l, err := cl.TryObtain(t.Context(), "w", &lock.ObtainOptions{TTL: time.Minute})
			if err != nil {
				t.Fatalf("TryObtain after the undone grant: %v", err)
			}
			_ = l.Release(t.Context())
		})
	}
}

// Names with braces keep all their keys in one slot and do not collide.
func TestLockNamesWithBraces(t *testing.T) {
	s := newStore(t, clusterClient(t), nil)
	cl, _ := lock.New(s.Locks(), nil)
	var held []*lock.Lock
	for _, name := range []string{"}", "{", "{}", "a{b}c", "}a", "~0", "a}:h"} {
		l, err := cl.TryObtain(t.Context(), name, &lock.ObtainOptions{TTL: time.Minute})
		if err != nil {
			t.Fatalf("TryObtain(%q): %v", name, err)
		}
		held = append(held, l)
	}
	for _, l := range held {
		if err := l.Release(t.Context()); err != nil {
			t.Fatalf("Release(%q): %v", l.Name(), err)
		}
	}
}

// TestLockDifferential drives the embedded engine and Redis with the same
// random lock operations and compares every answer.
func TestLockDifferential(t *testing.T) {
	c := standaloneClient(t)
	for seed := uint64(1); seed <= 4; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			storetest.LockDifferential(t, seed, 1500,
				func(t *testing.T, clock *storetest.Clock) lock.Store {
					s, err := memstore.New(&memstore.Options{Clock: clock.Now})
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { s.Close() })
					return s.Locks()
				},
				func(t *testing.T, clock *storetest.Clock) lock.Store {
					return newStore(t, c, &redisstore.Options{Clock: clock.Now, Prefix: redistest.Prefix(t)}).Locks()
				})
		})
	}
}
