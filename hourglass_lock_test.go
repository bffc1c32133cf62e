package hourglass_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass"
	"github.com/hourglass-io/hourglass/lock"
)

// Open wires the lock store of the embedded engine.
func TestOpenLocks(t *testing.T) {
	b, err := hourglass.Open(context.Background(), "mem://", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	c, err := lock.New(b.Locks, nil)
	if err != nil {
		t.Fatal(err)
	}
	l, err := c.TryObtain(t.Context(), "x", &lock.ObtainOptions{TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.TryObtain(t.Context(), "x", nil); !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("second TryObtain: %v", err)
	}
	if err := l.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
}
