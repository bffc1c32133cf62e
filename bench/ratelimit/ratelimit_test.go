package ratelimit_test

import (
	"context"
	"os"
	"strconv"
	"testing"

	"github.com/go-redis/redis_rate/v10"
	"github.com/hourglass-io/hourglass/internal/redistest"
	"github.com/hourglass-io/hourglass/ratelimit"
	"github.com/hourglass-io/hourglass/redisstore"
	"github.com/redis/go-redis/v9"
)

func TestMain(m *testing.M) {
	code := m.Run()
	redistest.StopShared()
	os.Exit(code)
}

// keys are the keys of the many-keys workloads.
var keys = func() []string {
	ks := make([]string, 100_000)
	for i := range ks {
		ks[i] = "user:" + strconv.Itoa(i)
	}
	return ks
}()

// allower is one limiter under test: Allow of one event on key.
type allower func(ctx context.Context, key string) error

// systems returns both limiters on one client of the shared server, each
// under its own key prefix, at a rate that admits nearly every call.
func systems(tb testing.TB) map[string]allower {
	tb.Helper()
	c := redistest.StandaloneClient(tb)
	ctx := context.Background()
	s, err := redisstore.New(ctx, c, &redisstore.Options{Prefix: redistest.Prefix(tb)})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	hg := ratelimit.New(s.Limits(), nil)
	hgLimit := ratelimit.PerSecond(1_000_000)
	rr := redis_rate.NewLimiter(c)
	rrLimit := redis_rate.PerSecond(1_000_000)
	return map[string]allower{
		"hourglass": func(ctx context.Context, key string) error {
			_, err := hg.Allow(ctx, key, hgLimit)
			return err
		},
		"redis_rate": func(ctx context.Context, key string) error {
			_, err := rr.Allow(ctx, key, rrLimit)
			return err
		},
	}
}

// BenchmarkAllow: decisions per second, one at a time from one goroutine
// and from 16 goroutines, on one hot key and over 100,000 keys. One op is
// one decision.
func BenchmarkAllow(b *testing.B) {
	for _, name := range []string{"hourglass", "redis_rate"} {
		for _, w := range []struct {
			name string
			n    int
		}{{"hot-key", 1}, {"100k-keys", len(keys)}} {
			b.Run(name+"/"+w.name+"/serial", func(b *testing.B) {
				allow := systems(b)[name]
				ctx := context.Background()
				i := 0
				for b.Loop() {
					if err := allow(ctx, keys[i%w.n]); err != nil {
						b.Fatal(err)
					}
					i++
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
			})
			b.Run(name+"/"+w.name+"/parallel16", func(b *testing.B) {
				allow := systems(b)[name]
				ctx := context.Background()
				b.SetParallelism(8) // × GOMAXPROCS (2): 16 goroutines
				b.RunParallel(func(pb *testing.PB) {
					i := 0
					for pb.Next() {
						if err := allow(ctx, keys[i%w.n]); err != nil {
							b.Error(err)
							return
						}
						i += 7919
					}
				})
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
			})
		}
	}
}

// TestMemory logs MEMORY USAGE of one key's GCRA state for both limiters,
// with key names of the same length as the default prefixes make them
// ("hg:rl:{s:user:12345}:g…" and "rate:user:12345").
func TestMemory(t *testing.T) {
	ctx := context.Background()
	c := redistest.StandaloneClient(t)
	s, err := redisstore.New(ctx, c, nil) // the default prefix, "hg:"
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	hg := ratelimit.New(s.Limits(), nil)
	rr := redis_rate.NewLimiter(c)
	usage := func(pattern string) int64 {
		ks, err := c.Keys(ctx, pattern).Result()
		if err != nil || len(ks) != 1 {
			t.Fatalf("keys %q: %v, %v", pattern, ks, err)
		}
		defer c.Del(ctx, ks[0])
		return c.MemoryUsage(ctx, ks[0], 0).Val()
	}
	for _, n := range []int{1, 100} {
		if _, err := hg.AllowN(ctx, "user:12345", n, ratelimit.PerSecond(100)); err != nil {
			t.Fatal(err)
		}
		if _, err := rr.AllowN(ctx, "user:12345", redis_rate.PerSecond(100), n); err != nil {
			t.Fatal(err)
		}
		t.Logf("after %d events at 100/s: hourglass %d B/key, redis_rate %d B/key", n,
			usage("hg:rl:{s:user:12345}:*"), usage("rate:user:12345"))
	}
}

var _ redis.UniversalClient
