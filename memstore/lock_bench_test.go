package memstore_test

import (
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/lock"
	"github.com/hourglass-io/hourglass/memstore"
)

// Uncontended obtain+release in process: one goroutine, one name.
func BenchmarkLockObtainRelease(b *testing.B) {
	s, err := memstore.New(nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	c, _ := lock.New(s.Locks(), nil)
	ctx := b.Context()
	o := &lock.ObtainOptions{TTL: 10 * time.Second}
	for b.Loop() {
		l, err := c.TryObtain(ctx, "bench", o)
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
