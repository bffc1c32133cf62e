package redisstore_test

import (
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/lock"
)

// Uncontended obtain+release on the shared standalone server: one
// goroutine, one name.
func BenchmarkLockObtainRelease(b *testing.B) {
	s := newStore(b, standaloneClient(b), nil)
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
