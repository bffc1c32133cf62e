package redisstore_test

import (
	"context"
	"testing"

	"github.com/hourglass-io/hourglass/internal/testkit/redistest"
	"github.com/hourglass-io/hourglass/redisstore"
	"github.com/redis/go-redis/v9"
)

// BenchmarkTTLHashCallCPU reports the Redis CPU of one call of a hash
// operation that finds nothing to do: a sweep of a shard with nothing
// due, and a Len of an empty hash, against a plain PING; what a call
// costs before it does any work.
func BenchmarkTTLHashCallCPU(b *testing.B) {
	srv := redistest.Standalone(b)
	rc := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1})
	b.Cleanup(func() { rc.Close() })
	ctx := context.Background()
	s, err := redisstore.New(ctx, rc, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	h := s.Hashes()
	for _, c := range []struct {
		name string
		call func() error
	}{
		{"sweep", func() error { _, err := h.SweepShards(ctx, []int{0}, 256); return err }},
		{"len", func() error { _, err := h.Len(ctx, "x"); return err }},
		{"ping", func() error { return rc.Ping(ctx).Err() }},
	} {
		b.Run(c.name, func(b *testing.B) {
			cpu0 := redisCPU(b, rc)
			for b.Loop() {
				if err := c.call(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric((redisCPU(b, rc)-cpu0)/float64(b.N)*1e6, "redis-cpu-µs/call")
		})
	}
}
