package redisstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hourglass-io/hourglass/internal/testkit/backendtest"
	"github.com/hourglass-io/hourglass/internal/testkit/redistest"
	"github.com/hourglass-io/hourglass/internal/testkit/storetest"
	"github.com/hourglass-io/hourglass/lock"
	"github.com/hourglass-io/hourglass/redisstore"
)

// lockFormEnv is a lock store on the shared standalone server with an
// injected clock, and the raw client, to look at the keys of the lock "a".
type lockFormEnv struct {
	t           *testing.T
	c           redis.UniversalClient
	clock       *storetest.Clock
	st          *redisstore.Locks
	prefix      string
	m, h, q, qe string
}

var lockFormStart = time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)

func newLockFormEnv(t *testing.T) *lockFormEnv {
	c := standaloneClient(t)
	prefix := redistest.Prefix(t)
	clock := storetest.NewClock(lockFormStart)
	b := prefix + "lk:{a}:"
	return &lockFormEnv{
		t: t, c: c, clock: clock, prefix: prefix,
		st: backendtest.Open(t, c, &redisstore.Options{Clock: clock.Now, Prefix: prefix}).Locks(),
		m:  b + "m", h: b + "h", q: b + "q", qe: b + "qe",
	}
}

func (e *lockFormEnv) acquire(token string, ttl time.Duration, queue bool) lock.Grant {
	e.t.Helper()
	return e.acquireOn(e.st, token, ttl, queue)
}

func (e *lockFormEnv) acquireOn(st *redisstore.Locks, token string, ttl time.Duration, queue bool) lock.Grant {
	e.t.Helper()
	g, err := st.Acquire(e.t.Context(), lock.AcquireRequest{Name: "a", Token: token, Limit: 1, TTL: ttl, Queue: queue, QueueTTL: 6 * time.Second})
	if err != nil {
		e.t.Fatalf("Acquire(%s): %v", token, err)
	}
	return g
}

func (e *lockFormEnv) granted(token string, ttl time.Duration, queue bool) uint64 {
	e.t.Helper()
	g := e.acquire(token, ttl, queue)
	if !g.Acquired {
		e.t.Fatalf("Acquire(%s) refused (wait %v)", token, g.Wait)
	}
	return g.Fence
}

func (e *lockFormEnv) refused(token string, queue bool) time.Duration {
	e.t.Helper()
	g := e.acquire(token, time.Second, queue)
	if g.Acquired {
		e.t.Fatalf("Acquire(%s) granted (fence %d), want refused", token, g.Fence)
	}
	return g.Wait
}

// typeOf is the Redis type of key: "string", "zset", "hash", or "none".
func (e *lockFormEnv) typeOf(key string) string {
	e.t.Helper()
	v, err := e.c.Type(e.t.Context(), key).Result()
	if err != nil {
		e.t.Fatal(err)
	}
	return v
}

func (e *lockFormEnv) wantTypes(m, h, q string) {
	e.t.Helper()
	if gm, gh, gq := e.typeOf(e.m), e.typeOf(e.h), e.typeOf(e.q); gm != m || gh != h || gq != q {
		e.t.Fatalf("types of m, h, q: %s, %s, %s; want %s, %s, %s", gm, gh, gq, m, h, q)
	}
}

func micros(t time.Time) uint64 { return uint64(t.UnixMicro()) }

// A free lock is granted in the one-holder form (one string key, the fence
// the clock's µs); a wrong token changes nothing; a release leaves no key
// unless the fence is not behind the clock yet; fences keep increasing
// across a release, a lease that ran out and a clock that stepped back.
func TestLockOneHolderForm(t *testing.T) {
	e := newLockFormEnv(t)
	ctx := t.Context()
	f1 := e.granted("t1", time.Second, false)
	if f1 != micros(e.clock.Now()) {
		t.Fatalf("fence of a first grant %d, want the clock's µs %d", f1, micros(e.clock.Now()))
	}
	e.wantTypes("none", "string", "none")

	// A wrong token: refused everywhere, and h is the same, byte for byte,
	// with the same expiry.
	before := e.c.Get(ctx, e.h).Val()
	ttlBefore := e.c.PTTL(ctx, e.h).Val()
	if err := e.st.Release(ctx, "a", "t1x"); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("Release by a wrong token: %v", err)
	}
	if err := e.st.Release(ctx, "a", "t"); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("Release by a token's prefix: %v", err)
	}
	if err := e.st.Refresh(ctx, "a", "x", time.Hour); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("Refresh by a wrong token: %v", err)
	}
	if _, err := e.st.TTL(ctx, "a", "x"); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("TTL by a wrong token: %v", err)
	}
	if err := e.st.Leave(ctx, "a", "t1"); err != nil {
		t.Fatalf("Leave of a queue with nobody in line: %v", err)
	}
	after := e.c.Get(ctx, e.h).Val()
	if after != before || e.c.PTTL(ctx, e.h).Val() > ttlBefore {
		t.Fatalf("h changed by a wrong token: %q -> %q", before, after)
	}
	if d, err := e.st.TTL(ctx, "a", "t1"); err != nil || d != time.Second {
		t.Fatalf("TTL of the holder: %v, %v", d, err)
	}

	// Refused while held, with the rest of the lease as the wait.
	e.clock.Advance(300 * time.Millisecond)
	if w := e.refused("t2", false); w != 700*time.Millisecond {
		t.Fatalf("wait %v, want 700ms", w)
	}

	// Released at once by a process whose clock is behind the fence: the
	// key stays, free, with the fence; a grant on that clock goes above it.
	behind := backendtest.Open(t, e.c, &redisstore.Options{Clock: func() time.Time { return lockFormStart.Add(-time.Second) }, Prefix: e.prefix}).Locks()
	if err := behind.Release(ctx, "a", "t1"); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if e.typeOf(e.h) != "string" {
		t.Fatalf("a release behind the fence dropped it (h is %s)", e.typeOf(e.h))
	}
	g := e.acquireOn(behind, "t2", time.Second, false)
	if !g.Acquired || g.Fence != f1+1 {
		t.Fatalf("grant on a clock behind the last fence: %+v, want fence %d", g, f1+1)
	}
	f2 := g.Fence

	// The lease runs out: the next grant, with the clock's µs as fence.
	e.clock.Advance(2 * time.Second)
	f3 := e.granted("t3", time.Second, false)
	if f3 <= f2 || f3 != micros(e.clock.Now()) {
		t.Fatalf("fence after a lease ran out %d, previous %d, clock %d", f3, f2, micros(e.clock.Now()))
	}
	if err := behind.Release(ctx, "a", "t2"); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("Release by the holder whose lease ran out: %v", err)
	}

	// Released after its fence: nothing is left; the next fence is the clock's.
	e.clock.Advance(time.Millisecond)
	if err := e.st.Release(ctx, "a", "t3"); err != nil {
		t.Fatalf("Release: %v", err)
	}
	e.wantTypes("none", "none", "none")
	if err := e.st.Release(ctx, "a", "t3"); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("second Release: %v", err)
	}
	e.clock.Advance(time.Microsecond)
	if f4 := e.granted("t4", time.Second, false); f4 <= f3 {
		t.Fatalf("fence %d after %d", f4, f3)
	}
}

// Data in the general form, as every lock was written before the
// one-holder form (m with the fence, h a sorted set, q and qe the line),
// is read as it was: its holder holds, its fence is kept, its waiters keep
// their places; once nobody holds it and nobody waits, a grant writes the
// one-holder form.
func TestLockGeneralFormIsRead(t *testing.T) {
	e := newLockFormEnv(t)
	ctx := t.Context()
	now := micros(e.clock.Now())
	fenceAhead := now + 5_000_000 // a fence ahead of the clock (issued by a clock that was ahead)
	p := e.c.TxPipeline()
	p.HSet(ctx, e.m, "f", fenceAhead, "s", 3)
	p.ZAdd(ctx, e.h, redis.Z{Score: float64(now + 2_000_000), Member: "old"})
	p.ZAdd(ctx, e.q, redis.Z{Score: 3, Member: "w"})
	p.ZAdd(ctx, e.qe, redis.Z{Score: float64(now + 4_000_000), Member: "w"})
	for _, k := range []string{e.m, e.h, e.q, e.qe} {
		p.PExpire(ctx, k, time.Minute)
	}
	if _, err := p.Exec(ctx); err != nil {
		t.Fatal(err)
	}

	if w := e.refused("new", false); w != 2*time.Second {
		t.Fatalf("wait behind the old holder %v, want 2s", w)
	}
	if d, err := e.st.TTL(ctx, "a", "old"); err != nil || d != 2*time.Second {
		t.Fatalf("TTL of the old holder: %v, %v", d, err)
	}
	if err := e.st.Refresh(ctx, "a", "old", 3*time.Second); err != nil {
		t.Fatalf("Refresh of the old holder: %v", err)
	}
	if err := e.st.Release(ctx, "a", "old"); err != nil {
		t.Fatalf("Release of the old holder: %v", err)
	}
	// Free, but kept for the waiter in line.
	e.refused("new", false)
	f := e.granted("w", time.Second, true)
	if f != fenceAhead+1 {
		t.Fatalf("fence after the old fence %d: %d", fenceAhead, f)
	}
	if err := e.st.Release(ctx, "a", "w"); err != nil {
		t.Fatalf("Release: %v", err)
	}
	// Nobody holds it, nobody waits: the one-holder form, the fence kept.
	f2 := e.granted("new", time.Second, false)
	if f2 != f+1 {
		t.Fatalf("fence %d after %d", f2, f)
	}
	e.wantTypes("none", "string", "none")
}

// A waiter in line (fair) turns a one-holder lock into the general form;
// grants go in arrival order, fences increase, and the lock goes back to
// the one-holder form once the line is empty.
func TestLockFormWidensForTheLine(t *testing.T) {
	e := newLockFormEnv(t)
	ctx := t.Context()
	fa := e.granted("a", time.Second, false)
	e.refused("b", true) // in line
	e.wantTypes("hash", "zset", "zset")
	e.refused("c", false)
	if d, err := e.st.TTL(ctx, "a", "a"); err != nil || d != time.Second {
		t.Fatalf("TTL of the holder after the widening: %v, %v", d, err)
	}
	if err := e.st.Release(ctx, "a", "a"); err != nil {
		t.Fatalf("Release: %v", err)
	}
	e.refused("c", false) // b is first in line
	fb := e.granted("b", time.Second, true)
	if fb <= fa {
		t.Fatalf("fence %d after %d", fb, fa)
	}
	if err := e.st.Release(ctx, "a", "b"); err != nil {
		t.Fatalf("Release: %v", err)
	}
	fc := e.granted("c", time.Second, false)
	if fc <= fb {
		t.Fatalf("fence %d after %d", fc, fb)
	}
	e.wantTypes("none", "string", "none")
}

// A release of a one-holder lock wakes listeners only after a refused
// acquire asked for it, and keeps asking for the next holder's release
// (one waiter of each process is woken a release).
func TestLockReleaseWakesOnlyWhenAsked(t *testing.T) {
	e := newLockFormEnv(t)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	channel := e.prefix + "lk:{a}:w"
	sub := e.c.(*redis.Client).SSubscribe(ctx, channel)
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil { // the subscription is in effect
		t.Fatal(err)
	}
	release := func(token string) {
		t.Helper()
		if err := e.st.Release(ctx, "a", token); err != nil {
			t.Fatalf("Release(%s): %v", token, err)
		}
	}
	e.granted("h1", time.Second, false)
	release("h1") // nobody asked: no wake-up
	e.clock.Advance(time.Millisecond)
	e.granted("h2", time.Second, false)
	e.refused("w", false)
	release("h2")
	e.granted("h3", time.Second, false) // the mark passes on
	release("h3")
	if err := e.c.SPublish(ctx, channel, "end").Err(); err != nil {
		t.Fatal(err)
	}
	var got []string
	for {
		msg, err := sub.ReceiveMessage(ctx)
		if err != nil {
			t.Fatalf("after %q: %v", got, err)
		}
		if msg.Payload == "end" {
			break
		}
		got = append(got, msg.Payload)
	}
	if len(got) != 2 {
		t.Fatalf("wake-ups %q, want the two asked for", got)
	}
}
