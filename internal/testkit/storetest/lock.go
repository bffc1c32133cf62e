package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/lock"
)

// NewLockStore returns a fresh, empty lock store whose clock is clock.Now.
// It registers its own cleanup with t. Two calls with the same clock make
// two stores that share nothing but the clock (a store that lost its
// state).
type NewLockStore func(t *testing.T, clock *Clock) lock.Store

// Lock runs the conformance suite for the lock.Store contract against
// stores made by newStore, one fresh store per subtest. The cases drive the
// store through lock.Client, as users do, and call the Store directly
// where the order of waiters must be exact.
func Lock(t *testing.T, newStore NewLockStore) {
	for _, c := range []struct {
		name string
		run  func(t *testing.T, newStore NewLockStore)
	}{
		{"ObtainRelease", testLockObtainRelease},
		{"OwnerOnly", testLockOwnerOnly},
		{"Expiry", testLockExpiry},
		{"Refresh", testLockRefresh},
		{"Fence", testLockFence},
		{"FenceAfterStoreLost", testLockFenceAfterStoreLost},
		{"FairOrder", testLockFairOrder},
		{"FairDeadWaiter", testLockFairDeadWaiter},
		{"FairClients", testLockFairClients},
		{"WaitWoken", testLockWaitWoken},
		{"GiveUp", testLockGiveUp},
		{"QuietWaiter", testLockQuietWaiter},
		{"LostWhenRenewalFails", testLockLost},
		{"Semaphore", testLockSemaphore},
		{"BadInput", testLockBadInput},
		{"MutualExclusion", testLockMutualExclusion},
	} {
		t.Run(c.name, func(t *testing.T) {
			var inv lockInvariants
			c.run(t, inv.wrap(newStore))
			inv.check(t)
		})
	}
}

// lockEnv is one store, its clock and a client over it.
type lockEnv struct {
	t     *testing.T
	ctx   context.Context
	clock *Clock
	store lock.Store
	c     *lock.Client
}

func newLockEnv(t *testing.T, newStore NewLockStore) *lockEnv {
	t.Helper()
	clock := NewClock(epoch)
	s := newStore(t, clock)
	c, err := lock.New(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &lockEnv{t: t, ctx: t.Context(), clock: clock, store: s, c: c}
}

func (e *lockEnv) obtain(name string, o *lock.ObtainOptions) *lock.Lock {
	e.t.Helper()
	l, err := e.c.TryObtain(e.ctx, name, o)
	if err != nil {
		e.t.Fatalf("TryObtain(%q): %v", name, err)
	}
	return l
}

func (e *lockEnv) notObtained(name string) {
	e.t.Helper()
	if l, err := e.c.TryObtain(e.ctx, name, &lock.ObtainOptions{TTL: time.Minute}); !errors.Is(err, lock.ErrNotObtained) {
		e.t.Fatalf("TryObtain(%q) of a held lock: %v, %v; want ErrNotObtained", name, l, err)
	}
}

func (e *lockEnv) acquire(req lock.AcquireRequest) lock.Grant {
	e.t.Helper()
	g, err := e.store.Acquire(e.ctx, req)
	if err != nil {
		e.t.Fatalf("Acquire(%+v): %v", req, err)
	}
	return g
}

func wantIs(t *testing.T, what string, got, want error) {
	t.Helper()
	if !errors.Is(got, want) {
		t.Fatalf("%s: %v, want %v", what, got, want)
	}
}

// waitClosed waits for c to be closed, for at most d.
func waitClosed(t *testing.T, what string, c <-chan struct{}, d time.Duration) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(d):
		t.Fatalf("%s: not within %v", what, d)
	}
}

var minute = &lock.ObtainOptions{TTL: time.Minute}

func testLockObtainRelease(t *testing.T, newStore NewLockStore) {
	e := newLockEnv(t, newStore)
	l := e.obtain("a", minute)
	if l.Name() != "a" || l.Token() == "" || l.Fence() == 0 {
		t.Fatalf("lock: name %q token %q fence %d", l.Name(), l.Token(), l.Fence())
	}
	e.notObtained("a")
	other := e.obtain("b", minute) // another name is another lock
	if d, err := l.TTL(e.ctx); err != nil || d != time.Minute {
		t.Fatalf("TTL with the clock standing still: %v, %v; want 1m", d, err)
	}
	if err := l.Release(e.ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	waitClosed(t, "Lost after Release", l.Lost(), time.Second)
	wantIs(t, "cause after Release", context.Cause(l.Context()), lock.ErrReleased)
	wantIs(t, "second Release", l.Release(e.ctx), lock.ErrNotHeld)
	l2 := e.obtain("a", minute)
	if l2.Token() == l.Token() || l2.Fence() <= l.Fence() {
		t.Fatalf("second grant: token %q fence %d after token %q fence %d", l2.Token(), l2.Fence(), l.Token(), l.Fence())
	}
	_ = l2.Release(e.ctx)
	_ = other.Release(e.ctx)
}

func testLockOwnerOnly(t *testing.T, newStore NewLockStore) {
	e := newLockEnv(t, newStore)
	l := e.obtain("a", minute)
	wantIs(t, "Release by another token", e.store.Release(e.ctx, "a", "someone-else"), lock.ErrNotHeld)
	wantIs(t, "Refresh by another token", e.store.Refresh(e.ctx, "a", "someone-else", time.Hour), lock.ErrNotHeld)
	if _, err := e.store.TTL(e.ctx, "a", "someone-else"); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("TTL by another token: %v, want ErrNotHeld", err)
	}
	wantIs(t, "Release of a name never held", e.store.Release(e.ctx, "never", "x"), lock.ErrNotHeld)
	// Nothing changed: the owner still holds it, with its lease.
	e.notObtained("a")
	if d, err := l.TTL(e.ctx); err != nil || d != time.Minute {
		t.Fatalf("owner's TTL after the others' attempts: %v, %v; want 1m", d, err)
	}
	if err := l.Release(e.ctx); err != nil {
		t.Fatalf("owner's Release: %v", err)
	}
}

func testLockExpiry(t *testing.T, newStore NewLockStore) {
	e := newLockEnv(t, newStore)
	l := e.obtain("a", &lock.ObtainOptions{TTL: 10 * time.Second})
	e.clock.Advance(9 * time.Second)
	if d, err := l.TTL(e.ctx); err != nil || d != time.Second {
		t.Fatalf("TTL after 9s of 10s: %v, %v; want 1s", d, err)
	}
	e.notObtained("a")
	e.clock.Advance(time.Second)
	if _, err := l.TTL(e.ctx); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("TTL at the lease's end: %v, want ErrNotHeld", err)
	}
	l2 := e.obtain("a", minute)
	if l2.Fence() <= l.Fence() {
		t.Fatalf("fence after expiry %d, not above %d", l2.Fence(), l.Fence())
	}
	// The first owner can neither release nor renew the new owner's lock.
	wantIs(t, "Release by the expired owner", l.Release(e.ctx), lock.ErrNotHeld)
	wantIs(t, "Refresh by the expired owner", e.store.Refresh(e.ctx, "a", l.Token(), time.Hour), lock.ErrNotHeld)
	if d, err := l2.TTL(e.ctx); err != nil || d != time.Minute {
		t.Fatalf("new owner's TTL: %v, %v; want 1m", d, err)
	}
}

func testLockRefresh(t *testing.T, newStore NewLockStore) {
	e := newLockEnv(t, newStore)
	l := e.obtain("a", &lock.ObtainOptions{TTL: 10 * time.Second})
	e.clock.Advance(8 * time.Second)
	if err := l.Refresh(e.ctx, 0); err != nil {
		t.Fatalf("Refresh: %v", err)
	}
	e.clock.Advance(8 * time.Second)
	if d, err := l.TTL(e.ctx); err != nil || d != 2*time.Second {
		t.Fatalf("TTL 8s after a refresh to 10s: %v, %v; want 2s", d, err)
	}
	if err := l.Refresh(e.ctx, time.Hour); err != nil {
		t.Fatalf("Refresh(1h): %v", err)
	}
	if d, err := l.TTL(e.ctx); err != nil || d != time.Hour {
		t.Fatalf("TTL after Refresh(1h): %v, %v", d, err)
	}
	wantIs(t, "Refresh(-1)", l.Refresh(e.ctx, -1), lock.ErrInvalidTTL)
	e.clock.Advance(time.Hour)
	wantIs(t, "Refresh after the lease ended", l.Refresh(e.ctx, 0), lock.ErrNotHeld)
	waitClosed(t, "Lost after a failed Refresh", l.Lost(), time.Second)
	wantIs(t, "cause", context.Cause(l.Context()), lock.ErrNotHeld)
}

// Fences increase strictly, even when grants come faster than the clock
// moves, and are never below the clock in microseconds.
func testLockFence(t *testing.T, newStore NewLockStore) {
	e := newLockEnv(t, newStore)
	var last uint64
	for i := range 6 {
		if i == 3 {
			e.clock.Advance(time.Second)
		}
		l := e.obtain("a", minute)
		floor := uint64(e.clock.Now().UnixMicro())
		if l.Fence() <= last || l.Fence() < floor {
			t.Fatalf("grant %d: fence %d after %d (clock %d µs)", i, l.Fence(), last, floor)
		}
		last = l.Fence()
		if err := l.Release(e.ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// A store that lost every lock (a restart of the embedded engine, a Redis
// that lost its keys) still issues larger fences once its clock moved on.
func testLockFenceAfterStoreLost(t *testing.T, newStore NewLockStore) {
	e := newLockEnv(t, newStore)
	var last uint64
	for range 3 {
		l := e.obtain("a", minute)
		last = l.Fence()
		_ = l.Release(e.ctx)
	}
	e.obtain("a", minute) // held when the store is lost
	e.clock.Advance(time.Millisecond)
	fresh, err := lock.New(newStore(t, e.clock), nil)
	if err != nil {
		t.Fatal(err)
	}
	l, err := fresh.TryObtain(e.ctx, "a", minute)
	if err != nil {
		t.Fatalf("TryObtain on the fresh store: %v", err)
	}
	if l.Fence() <= last+1 {
		t.Fatalf("fence on the fresh store %d, not above %d", l.Fence(), last+1)
	}
}

func testLockFairOrder(t *testing.T, newStore NewLockStore) {
	e := newLockEnv(t, newStore)
	h := e.obtain("a", minute)
	req := func(tok string) lock.AcquireRequest {
		return lock.AcquireRequest{Name: "a", Token: tok, Limit: 1, TTL: time.Minute, Queue: true, QueueTTL: 10 * time.Second}
	}
	for _, w := range []string{"w1", "w2", "w3"} {
		if g := e.acquire(req(w)); g.Acquired || g.Wait != time.Minute {
			t.Fatalf("%s while held: %+v, want queued with Wait 1m", w, g)
		}
	}
	if err := h.Release(e.ctx); err != nil {
		t.Fatal(err)
	}
	// Free, but kept for w1: neither w2 nor a newcomer takes it.
	if g := e.acquire(req("w2")); g.Acquired || g.Wait <= 0 || g.Wait > 10*time.Second {
		t.Fatalf("w2 ahead of w1: %+v, want queued with Wait in (0, 10s]", g)
	}
	e.notObtained("a")
	g1 := e.acquire(req("w1"))
	if !g1.Acquired || g1.Fence <= h.Fence() {
		t.Fatalf("w1 at the head: %+v", g1)
	}
	if err := e.store.Release(e.ctx, "a", "w1"); err != nil {
		t.Fatal(err)
	}
	// w2 leaves; w3 is next.
	if err := e.store.Leave(e.ctx, "a", "w2"); err != nil {
		t.Fatal(err)
	}
	if err := e.store.Leave(e.ctx, "a", "not-queued"); err != nil {
		t.Fatalf("Leave of a token not queued: %v", err)
	}
	if g := e.acquire(req("w3")); !g.Acquired || g.Fence <= g1.Fence {
		t.Fatalf("w3 after w2 left: %+v", g)
	}
}

// A waiter that stops renewing its place (it died) holds up those behind it
// only until its place lapses.
func testLockFairDeadWaiter(t *testing.T, newStore NewLockStore) {
	e := newLockEnv(t, newStore)
	h := e.obtain("a", minute)
	req := func(tok string) lock.AcquireRequest {
		return lock.AcquireRequest{Name: "a", Token: tok, Limit: 1, TTL: time.Minute, Queue: true, QueueTTL: 5 * time.Second}
	}
	e.acquire(req("dead"))
	e.clock.Advance(time.Second)
	e.acquire(req("alive"))
	_ = h.Release(e.ctx)
	e.clock.Advance(3 * time.Second)
	if g := e.acquire(req("alive")); g.Acquired || g.Wait != time.Second {
		t.Fatalf("alive behind a place with 1s left: %+v, want Wait 1s", g)
	}
	e.clock.Advance(time.Second)
	if g := e.acquire(req("alive")); !g.Acquired {
		t.Fatalf("alive after the dead waiter's place lapsed: %+v", g)
	}
}

// queueWatch is a lock.Store that reports each Acquire that queued a
// waiter, so a test knows the order in which waiters joined.
type queueWatch struct {
	lock.Store
	queued chan string
}

func (w *queueWatch) Acquire(ctx context.Context, req lock.AcquireRequest) (lock.Grant, error) {
	g, err := w.Store.Acquire(ctx, req)
	if err == nil && !g.Acquired && req.Queue {
		select {
		case w.queued <- req.Token:
		default:
		}
	}
	return g, err
}

func (w *queueWatch) Listen(ctx context.Context, name string, wake func(string)) (func(), error) {
	if n, ok := w.Store.(lock.Notifier); ok {
		return n.Listen(ctx, name, wake)
	}
	return func() {}, nil
}

// obtainLater starts c obtaining "a" in a goroutine (a minute's lease,
// fair when fair, giving up after 20 s), then runs got with the lock; the
// channel it returns gives the Obtain's error, or got's.
func (e *lockEnv) obtainLater(c *lock.Client, fair bool, got func(ctx context.Context, l *lock.Lock) error) <-chan error {
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(e.ctx, 20*time.Second)
		defer cancel()
		l, err := c.Obtain(ctx, "a", &lock.ObtainOptions{TTL: time.Minute, Fair: fair})
		if err == nil {
			err = got(ctx, l)
		}
		done <- err
	}()
	return done
}

// Fair clients get the lock in the order they started waiting.
func testLockFairClients(t *testing.T, newStore NewLockStore) {
	e := newLockEnv(t, newStore)
	h := e.obtain("a", minute)
	const n = 5
	var (
		mu    sync.Mutex
		order []int
		done  []<-chan error
	)
	for i := range n {
		w := &queueWatch{Store: e.store, queued: make(chan string, 1)}
		c, err := lock.New(w, nil)
		if err != nil {
			t.Fatal(err)
		}
		done = append(done, e.obtainLater(c, true, func(ctx context.Context, l *lock.Lock) error {
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			return l.Release(ctx)
		}))
		select {
		case <-w.queued:
		case <-time.After(10 * time.Second):
			t.Fatalf("waiter %d did not queue", i)
		}
	}
	if err := h.Release(e.ctx); err != nil {
		t.Fatal(err)
	}
	for _, d := range done {
		if err := <-d; err != nil {
			t.Fatal(err)
		}
	}
	for i, got := range order {
		if got != i {
			t.Fatalf("grant order %v, want 0..%d", order, n-1)
		}
	}
}

// A waiter gets the lock soon after its release, without its clock moving:
// it was woken, or its fallback (bounded by the holder's lease) fired.
func testLockWaitWoken(t *testing.T, newStore NewLockStore) {
	e := newLockEnv(t, newStore)
	h := e.obtain("a", &lock.ObtainOptions{TTL: time.Hour})
	w := &queueWatch{Store: e.store, queued: make(chan string, 1)}
	c, _ := lock.New(w, nil)
	done := e.obtainLater(c, true, func(_ context.Context, l *lock.Lock) error {
		if l.Fence() <= h.Fence() {
			return fmt.Errorf("fence %d after %d", l.Fence(), h.Fence())
		}
		return nil
	})
	select {
	case <-w.queued:
	case <-time.After(10 * time.Second):
		t.Fatal("waiter did not queue")
	}
	if err := h.Release(e.ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("waiter did not get the released lock")
	}
}

// callCount is a lock.Store that counts the calls made to it.
type callCount struct {
	queueWatch
	n      atomic.Int64
	second chan struct{} // closed at the second call
}

func (c *callCount) Acquire(ctx context.Context, req lock.AcquireRequest) (lock.Grant, error) {
	if c.n.Add(1) == 2 {
		close(c.second)
	}
	return c.queueWatch.Acquire(ctx, req)
}

// A waiter makes no calls to the store while it waits for a holder with a
// long lease (the clock stands still), fair or not.
func testLockQuietWaiter(t *testing.T, newStore NewLockStore) {
	e := newLockEnv(t, newStore)
	for _, fair := range []bool{false, true} {
		h := e.obtain("a", &lock.ObtainOptions{TTL: time.Hour})
		w := &callCount{queueWatch: queueWatch{Store: e.store, queued: make(chan string, 1)}, second: make(chan struct{})}
		c, _ := lock.New(w, nil)
		got := e.obtainLater(c, fair, func(ctx context.Context, l *lock.Lock) error { return l.Release(ctx) })
		// Tried, subscribed, tried again: now it waits.
		waitClosed(t, "the waiter's second try", w.second, 10*time.Second)
		before := w.n.Load()
		select {
		case err := <-got:
			t.Fatalf("waiter returned while the lock was held: %v", err)
		case <-time.After(300 * time.Millisecond):
		}
		if n := w.n.Load() - before; n > 0 {
			t.Errorf("fair=%v: %d Acquire calls in 300ms of waiting", fair, n)
		}
		if err := h.Release(e.ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-got; err != nil {
			t.Fatal(err)
		}
	}
}

// A waiter whose context ends gets ErrNotObtained (and the context's
// error) and leaves the queue: a newcomer need not wait for its place to
// lapse.
func testLockGiveUp(t *testing.T, newStore NewLockStore) {
	e := newLockEnv(t, newStore)
	h := e.obtain("a", minute)
	for _, fair := range []bool{false, true} {
		ctx, cancel := context.WithTimeout(e.ctx, 30*time.Millisecond)
		l, err := e.c.Obtain(ctx, "a", &lock.ObtainOptions{TTL: time.Minute, Fair: fair})
		cancel()
		if !errors.Is(err, lock.ErrNotObtained) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Obtain (fair %v) of a held lock until the deadline: %v, %v", fair, l, err)
		}
	}
	_ = h.Release(e.ctx)
	e.obtain("a", minute)
}

// A holder that renews its lease learns at once when a renewal finds the
// lock gone: here its lease ran out on the store's clock while the
// holder's own clock stood still, as when the holder was paused past it.
func testLockLost(t *testing.T, newStore NewLockStore) {
	e := newLockEnv(t, newStore)
	holder := NewClock(epoch) // the holder's clock: its renewals and its view of the lease
	c, err := lock.New(e.store, &lock.Options{Clock: holder})
	if err != nil {
		t.Fatal(err)
	}
	const ttl = 300 * time.Millisecond
	l, err := c.TryObtain(e.ctx, "a", &lock.ObtainOptions{TTL: ttl, AutoRenew: true})
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Second)
	ctx, cancel := context.WithTimeout(e.ctx, 5*time.Second)
	defer cancel()
	if err := holder.WaitArmed(ctx, 2); err != nil { // the lease's end and the first renewal
		t.Fatalf("the renewal was not armed on the holder's clock: %v", err)
	}
	holder.Advance(ttl / 3) // the renewal; the lease has not ended on this clock
	waitClosed(t, "Lost after a renewal found the lease gone", l.Lost(), 5*time.Second)
	if c := context.Cause(l.Context()); !errors.Is(c, lock.ErrNotHeld) {
		t.Fatalf("cause %v, want ErrNotHeld", c)
	}
	l2 := e.obtain("a", minute)
	if l2.Fence() <= l.Fence() {
		t.Fatalf("fence %d after %d", l2.Fence(), l.Fence())
	}
	wantIs(t, "Release by the lost owner", l.Release(e.ctx), lock.ErrNotHeld)
}

func testLockSemaphore(t *testing.T, newStore NewLockStore) {
	e := newLockEnv(t, newStore)
	sem := e.c.NewSemaphore("pool", 3)
	if sem.Name() != "pool" || sem.Limit() != 3 {
		t.Fatalf("semaphore %q %d", sem.Name(), sem.Limit())
	}
	var held []*lock.Lock
	var last uint64
	for i := range 3 {
		l, err := sem.TryAcquire(e.ctx, &lock.ObtainOptions{TTL: time.Duration(i+1) * time.Minute})
		if err != nil {
			t.Fatalf("TryAcquire %d of 3: %v", i, err)
		}
		if l.Fence() <= last {
			t.Fatalf("fence %d after %d", l.Fence(), last)
		}
		last = l.Fence()
		held = append(held, l)
	}
	if _, err := sem.TryAcquire(e.ctx, minute); !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("4th TryAcquire of 3: %v", err)
	}
	if err := held[1].Release(e.ctx); err != nil {
		t.Fatal(err)
	}
	l, err := sem.TryAcquire(e.ctx, &lock.ObtainOptions{TTL: time.Hour})
	if err != nil {
		t.Fatalf("TryAcquire after a release: %v", err)
	}
	held[1] = l
	// The first slot's lease (1m) ends: one slot comes free.
	e.clock.Advance(time.Minute)
	if _, err := sem.TryAcquire(e.ctx, minute); err != nil {
		t.Fatalf("TryAcquire after a lease ended: %v", err)
	}
	if _, err := sem.TryAcquire(e.ctx, minute); !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("TryAcquire of a full semaphore: %v", err)
	}
	wantIs(t, "Release of the expired slot", held[0].Release(e.ctx), lock.ErrNotHeld)
}

func testLockBadInput(t *testing.T, newStore NewLockStore) {
	e := newLockEnv(t, newStore)
	long := strings.Repeat("n", lock.MaxNameLen+1)
	for _, c := range []struct {
		name string
		do   func() error
		want error
	}{
		{"empty name", func() error { _, err := e.c.TryObtain(e.ctx, "", nil); return err }, lock.ErrInvalidName},
		{"long name", func() error { _, err := e.c.Obtain(e.ctx, long, nil); return err }, lock.ErrInvalidName},
		{"negative TTL", func() error { _, err := e.c.TryObtain(e.ctx, "x", &lock.ObtainOptions{TTL: -time.Second}); return err }, lock.ErrInvalidTTL},
		{"TTL below MinTTL", func() error {
			_, err := e.c.TryObtain(e.ctx, "x", &lock.ObtainOptions{TTL: time.Microsecond})
			return err
		}, lock.ErrInvalidTTL},
		{"TTL above MaxTTL", func() error {
			_, err := e.c.TryObtain(e.ctx, "x", &lock.ObtainOptions{TTL: lock.MaxTTL + 1})
			return err
		}, lock.ErrInvalidTTL},
		{"negative Replicas", func() error { _, err := e.c.TryObtain(e.ctx, "x", &lock.ObtainOptions{Replicas: -1}); return err }, lock.ErrInvalidOption},
		{"semaphore of 0", func() error { _, err := e.c.NewSemaphore("x", 0).TryAcquire(e.ctx, nil); return err }, lock.ErrInvalidLimit},
		{"semaphore above MaxLimit", func() error { _, err := e.c.NewSemaphore("x", lock.MaxLimit+1).Acquire(e.ctx, nil); return err }, lock.ErrInvalidLimit},
		{"Options.DefaultTTL", func() error { _, err := lock.New(e.store, &lock.Options{DefaultTTL: -1}); return err }, lock.ErrInvalidTTL},
		{"Options.QueueTTL", func() error { _, err := lock.New(e.store, &lock.Options{QueueTTL: time.Millisecond}); return err }, lock.ErrInvalidOption},
	} {
		if err := c.do(); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	// Nothing was taken.
	l := e.obtain("x", minute)
	wantIs(t, "Refresh with a bad TTL", l.Refresh(e.ctx, lock.MaxTTL+1), lock.ErrInvalidTTL)
	if d, err := l.TTL(e.ctx); err != nil || d != time.Minute {
		t.Fatalf("TTL after a refused Refresh: %v, %v", d, err)
	}
}

// 64 goroutines over 4 Clients take the lock 5 times each: a shared
// recorder never sees two holders at once, and fences strictly increase.
func testLockMutualExclusion(t *testing.T, newStore NewLockStore) {
	e := newLockEnv(t, newStore)
	MutualExclusion(t, []lock.Store{e.store, e.store, e.store, e.store}, 64, 5)
}

// MutualExclusion runs goroutines over len(stores) Clients, one per store,
// each obtaining the lock "mutex" rounds times, and fails t when two hold
// it at once or a fence is not above the one before.
func MutualExclusion(t *testing.T, stores []lock.Store, goroutines, rounds int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var (
		holders atomic.Int32
		mu      sync.Mutex
		last    uint64
		grants  int
		wg      sync.WaitGroup
		errc    = make(chan error, goroutines)
	)
	clients := make([]*lock.Client, len(stores))
	for i, s := range stores {
		c, err := lock.New(s, nil)
		if err != nil {
			t.Fatal(err)
		}
		clients[i] = c
	}
	for g := range goroutines {
		c := clients[g%len(clients)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				l, err := c.Obtain(ctx, "mutex", &lock.ObtainOptions{TTL: time.Minute, Fair: g%2 == 0})
				if err != nil {
					errc <- err
					return
				}
				if n := holders.Add(1); n != 1 {
					errc <- errors.New("two holders at once")
				}
				mu.Lock()
				if l.Fence() <= last {
					errc <- errors.New("fence did not increase")
				}
				last = l.Fence()
				grants++
				mu.Unlock()
				holders.Add(-1)
				if err := l.Release(ctx); err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	if grants != goroutines*rounds {
		t.Fatalf("%d grants, want %d", grants, goroutines*rounds)
	}
}
