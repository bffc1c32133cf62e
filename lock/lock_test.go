package lock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/internal/testkit/storetest"
	"github.com/hourglass-io/hourglass/lock"
	"github.com/hourglass-io/hourglass/memstore"
)

func newMemClient(t *testing.T) *lock.Client {
	t.Helper()
	s, err := memstore.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	c, err := lock.New(s.Locks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// newClockClient is a Client of a store on clk, itself on clk: nothing in
// the store waits on the clock, only the Client does.
func newClockClient(t *testing.T, clk *storetest.Clock) *lock.Client {
	t.Helper()
	s, err := memstore.New(&memstore.Options{Clock: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	c, err := lock.New(s.Locks(), &lock.Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A Lock makes its Context when first asked for it: asked after the lease
// ran out, it is cancelled already, for ErrLeaseExpired, and a later
// Release does not change the cause.
func TestLockContextAskedAfterTheLease(t *testing.T) {
	clk := storetest.NewClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	c := newClockClient(t, clk)
	l, err := c.TryObtain(t.Context(), "x", &lock.ObtainOptions{TTL: lock.MinTTL})
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(2 * lock.MinTTL) // past the lease's end on the Client's clock
	ctx := l.Context()
	if ctx.Err() == nil || !errors.Is(context.Cause(ctx), lock.ErrLeaseExpired) {
		t.Fatalf("Context after the lease: err %v, cause %v", ctx.Err(), context.Cause(ctx))
	}
	_ = l.Release(t.Context())
	if cause := context.Cause(l.Context()); !errors.Is(cause, lock.ErrLeaseExpired) {
		t.Fatalf("cause after Release %v, want ErrLeaseExpired", cause)
	}
}

// Asked for after Release, Context is cancelled for ErrReleased; asked for
// before, it is cancelled by the Release.
func TestLockContextAskedAfterRelease(t *testing.T) {
	c := newMemClient(t)
	o := &lock.ObtainOptions{TTL: time.Minute}
	before, err := c.TryObtain(t.Context(), "a", o)
	if err != nil {
		t.Fatal(err)
	}
	lost := before.Lost()
	after, err := c.TryObtain(t.Context(), "b", o)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []*lock.Lock{before, after} {
		if err := l.Release(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	<-lost
	for _, l := range []*lock.Lock{before, after} {
		if cause := context.Cause(l.Context()); !errors.Is(cause, lock.ErrReleased) {
			t.Fatalf("%s: cause %v, want ErrReleased", l.Name(), cause)
		}
	}
}

// Obtain of a held lock waits on the Client's clock for the holder's
// lease to end, and obtains the lock once that clock has passed it,
// however little time the machine's clock has moved; the held Lock's
// Context ends on that clock too.
func TestObtainWaitsOnTheClock(t *testing.T) {
	clk := storetest.NewClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	c := newClockClient(t, clk)
	ctx := t.Context()
	held, err := c.TryObtain(ctx, "x", &lock.ObtainOptions{TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	lost := held.Lost()
	got := make(chan error, 1)
	go func() {
		l, err := c.Obtain(ctx, "x", &lock.ObtainOptions{TTL: time.Hour})
		if err == nil {
			err = l.Release(ctx)
		}
		got <- err
	}()
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := clk.WaitArmed(wctx, 2); err != nil { // the held Lock's lease (Lost) and the waiter's recheck
		t.Fatalf("the waiter did not wait on the clock: %v", err)
	}
	select {
	case err := <-got:
		t.Fatalf("Obtain returned %v while the lease ran", err)
	default:
	}
	clk.Advance(time.Hour)
	if err := <-got; err != nil {
		t.Fatalf("Obtain after the lease's end: %v", err)
	}
	select {
	case <-lost:
	default:
		t.Fatal("the held Lock's Context runs past its lease on the Client's clock")
	}
}

// A Lock renews its lease on the Client's clock: moved on by that clock
// alone three leases' worth, a third at a time, it is still held, with a
// whole lease left in the store.
func TestRenewalOnTheClock(t *testing.T) {
	clk := storetest.NewClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	c := newClockClient(t, clk)
	ctx := t.Context()
	const ttl = 30 * time.Second
	l, err := c.TryObtain(ctx, "x", &lock.ObtainOptions{TTL: ttl, AutoRenew: true})
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for i := range 10 {
		// The lease's end (Context) and the next renewal: the renewal
		// before has been made.
		if err := clk.WaitArmed(wctx, 2); err != nil {
			t.Fatalf("renewal %d not armed on the clock: %v", i, err)
		}
		if i == 9 {
			break
		}
		clk.Advance(ttl / 3)
	}
	select {
	case <-l.Lost():
		t.Fatalf("lost after renewals on the clock: %v", context.Cause(l.Context()))
	default:
	}
	if d, err := l.TTL(ctx); err != nil || d != ttl {
		t.Fatalf("TTL after the last renewal %v, %v; want %v", d, err, ttl)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
}
