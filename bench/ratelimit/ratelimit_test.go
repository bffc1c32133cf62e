package ratelimit_test

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/hourglass-io/hourglass/internal/testkit/redistest"
	"github.com/hourglass-io/hourglass/ratelimit"
	"github.com/hourglass-io/hourglass/redisstore"
	"github.com/redis/go-redis/v9"
)

func TestMain(m *testing.M) { redistest.Main(m) }

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
	hg, err := ratelimit.New(s.RateLimits(), nil)
	if err != nil {
		tb.Fatal(err)
	}
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

// BenchmarkAllow: decisions per second of both limiters, one at a time from
// one goroutine (serial) and from 16 goroutines (parallel16), on one hot
// key and over 100,000 keys. The two alternate in chunks of 200 decisions
// within one benchmark, so that both see the same load on the machine; each
// system's rate is its decisions over the time spent in its own chunks
// (parallel16: over its summed latency divided by 16). One op is one
// decision of either system. The metric hourglass/redis_rate is the ratio.
func BenchmarkAllow(b *testing.B) {
	names := [2]string{"hourglass", "redis_rate"}
	for _, w := range []struct {
		name string
		n    int
	}{{"hot-key", 1}, {"100k-keys", len(keys)}} {
		b.Run(w.name+"/serial", func(b *testing.B) {
			sys := systems(b)
			ctx := context.Background()
			var ops [2]int
			var spent [2]time.Duration
			i := 0
			for b.Loop() {
				k := (i / 200) % 2
				start := time.Now()
				if err := sys[names[k]](ctx, keys[i%w.n]); err != nil {
					b.Fatal(err)
				}
				spent[k] += time.Since(start)
				ops[k]++
				i++
			}
			report(b, names, ops, spent)
		})
		b.Run(w.name+"/parallel16", func(b *testing.B) {
			sys := systems(b)
			ctx := context.Background()
			var mu sync.Mutex
			var ops [2]int
			var spent [2]time.Duration
			var seq atomic.Int64
			b.SetParallelism(8) // × GOMAXPROCS (2): 16 goroutines
			b.RunParallel(func(pb *testing.PB) {
				var o [2]int
				var d [2]time.Duration
				for pb.Next() {
					i := seq.Add(1)
					k := int(i/200) % 2
					start := time.Now()
					if err := sys[names[k]](ctx, keys[int(i*7919)%w.n]); err != nil {
						b.Error(err)
						return
					}
					d[k] += time.Since(start)
					o[k]++
				}
				mu.Lock()
				for k := range 2 {
					ops[k] += o[k]
					spent[k] += d[k] / 16
				}
				mu.Unlock()
			})
			report(b, names, ops, spent)
		})
	}
}

func report(b *testing.B, names [2]string, ops [2]int, spent [2]time.Duration) {
	var rate [2]float64
	for k := range 2 {
		if spent[k] > 0 {
			rate[k] = float64(ops[k]) / spent[k].Seconds()
		}
		b.ReportMetric(rate[k], names[k]+"-decisions/s")
	}
	if rate[1] > 0 {
		b.ReportMetric(rate[0]/rate[1], "hourglass/redis_rate")
	}
	b.ReportMetric(0, "ns/op")
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
	hg, err := ratelimit.New(s.RateLimits(), nil)
	if err != nil {
		t.Fatal(err)
	}
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
