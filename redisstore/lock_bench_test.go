package redisstore_test

import (
	"strconv"

	"testing"
	"time"

	"github.com/hourglass-io/hourglass/internal/testkit/redistest"
	"github.com/redis/go-redis/v9"

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

// Memory per held lock on a server of its own: 1000 locks held, INFO's
// used_memory before and after, per lock.
func BenchmarkLockMemory(b *testing.B) {
	srv := redistest.Standalone(b)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1})
	defer c.Close()
	s := newStoreWithPrefix(b, c, "hg:")
	cl, _ := lock.New(s.Locks(), nil)
	ctx := b.Context()
	const n = 1000
	for b.Loop() {
		before := usedMemory(b, c)
		held := make([]*lock.Lock, 0, n)
		for i := range n {
			l, err := cl.TryObtain(ctx, "lock-"+strconv.Itoa(i), &lock.ObtainOptions{TTL: time.Minute})
			if err != nil {
				b.Fatal(err)
			}
			held = append(held, l)
		}
		b.ReportMetric(float64(usedMemory(b, c)-before)/n, "B/held-lock")
		for _, l := range held {
			if err := l.Release(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
}
