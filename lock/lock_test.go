package lock_test

import (
	"context"
	"errors"
	"testing"
	"time"

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

// A Lock makes its Context when first asked for it: asked after the lease
// ran out, it is cancelled already, for ErrLeaseExpired, and a later
// Release does not change the cause.
func TestLockContextAskedAfterTheLease(t *testing.T) {
	c := newMemClient(t)
	start := time.Now()
	l, err := c.TryObtain(t.Context(), "x", &lock.ObtainOptions{TTL: lock.MinTTL})
	if err != nil {
		t.Fatal(err)
	}
	<-time.After(time.Until(start.Add(2 * lock.MinTTL))) // the lease's end on this process's clock
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
