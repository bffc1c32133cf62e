package memstore_test

import (
	"fmt"
	"time"

	"testing"

	"github.com/hourglass-io/hourglass/internal/testkit/storetest"
	"github.com/hourglass-io/hourglass/lock"
	"github.com/hourglass-io/hourglass/memstore"
)

func TestLockConformance(t *testing.T) {
	storetest.Lock(t, func(t *testing.T, clock *storetest.Clock) lock.Store {
		s, err := memstore.New(&memstore.Options{Clock: clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s.Locks()
	})
}

// Released and expired locks take no memory, and a restarted engine (which
// keeps no locks) still issues larger fences.
func TestLockMemoryAndRestart(t *testing.T) {
	clock := storetest.NewClock(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
	dir := t.TempDir()
	s, err := memstore.Open(dir, &memstore.Options{Clock: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := lock.New(s.Locks(), nil)
	ctx := t.Context()
	var last uint64
	for i := range 100 {
		l, err := c.TryObtain(ctx, fmt.Sprint("name-", i), &lock.ObtainOptions{TTL: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		last = l.Fence()
		if i%2 == 0 {
			if err := l.Release(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	if n := memstore.HeldLocks(s.Locks()); n != 50 {
		t.Fatalf("%d names kept after releasing 50 of 100, want 50", n)
	}
	clock.Advance(time.Second)
	// The timer drops what has ended (run at once rather than after its
	// real-time delay).
	memstore.FireLocks(s.Locks())
	if n := memstore.HeldLocks(s.Locks()); n != 0 {
		t.Fatalf("%d names kept after every lease ended", n)
	}
	held, err := c.TryObtain(ctx, "name-1", &lock.ObtainOptions{TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if held.Fence() <= last {
		t.Fatalf("fence %d after %d", held.Fence(), last)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Millisecond)
	s, err = memstore.Open(dir, &memstore.Options{Clock: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c, _ = lock.New(s.Locks(), nil)
	l, err := c.TryObtain(ctx, "name-1", &lock.ObtainOptions{TTL: time.Hour})
	if err != nil {
		t.Fatalf("TryObtain after a restart (no lock survives one): %v", err)
	}
	if l.Fence() <= held.Fence() {
		t.Fatalf("fence after the restart %d, not above %d", l.Fence(), held.Fence())
	}
}
