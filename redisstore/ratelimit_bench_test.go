package redisstore_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/hourglass-io/hourglass/internal/testkit/redistest"
	"github.com/hourglass-io/hourglass/ratelimit"
	"github.com/hourglass-io/hourglass/redisstore"
	"github.com/redis/go-redis/v9"
)

// benchKeys are the keys of the many-keys benchmarks.
var benchKeys = func() []string {
	ks := make([]string, 100_000)
	for i := range ks {
		ks[i] = "user:" + strconv.Itoa(i)
	}
	return ks
}()

// benchLimit admits nearly every call, so that the benchmarks measure
// decisions that write.
var benchLimit = ratelimit.PerSecond(1_000_000)

// BenchmarkRateLimitAllow is one Allow at a time from one goroutine (one
// op is one decision), on one hot key and over 100,000 keys.
func BenchmarkRateLimitAllow(b *testing.B) {
	for _, keys := range []struct {
		name string
		n    int
	}{{"hot-key", 1}, {"100k-keys", len(benchKeys)}} {
		b.Run(keys.name, func(b *testing.B) {
			l, err := ratelimit.New(newStore(b, standaloneClient(b), nil).RateLimits(), nil)
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			i := 0
			for b.Loop() {
				if _, err := l.Allow(ctx, benchKeys[i%keys.n], benchLimit); err != nil {
					b.Fatal(err)
				}
				i++
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
		})
	}
}

// BenchmarkRateLimitAllowEach is AllowEach of 100 decisions per round trip
// (one op is one decision).
func BenchmarkRateLimitAllowEach(b *testing.B) {
	for _, keys := range []struct {
		name string
		n    int
	}{{"hot-key", 1}, {"100k-keys", len(benchKeys)}} {
		b.Run(keys.name, func(b *testing.B) {
			l, err := ratelimit.New(newStore(b, standaloneClient(b), nil).RateLimits(), nil)
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			batch := make([]string, 100)
			i := 0
			for b.Loop() {
				if i%100 == 0 {
					for j := range batch {
						batch[j] = benchKeys[(i+j)%keys.n]
					}
					if _, err := l.AllowEach(ctx, batch, 1, benchLimit); err != nil {
						b.Fatal(err)
					}
				}
				i++
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
		})
	}
}

// BenchmarkRateLimitPartitions is Allow on one hot key of a 3-master
// cluster from GOMAXPROCS×16 goroutines, the key whole and split in 3 and
// 6 partitions (one op is one decision).
func BenchmarkRateLimitPartitions(b *testing.B) {
	for _, k := range []int{1, 3, 6} {
		b.Run("partitions="+strconv.Itoa(k), func(b *testing.B) {
			c := redistest.ClusterClient(b)
			s := newStore(b, c, nil)
			l, err := ratelimit.New(s.RateLimits(), &ratelimit.Options{Partitions: func(string) int { return k }})
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			if _, err := l.Allow(ctx, "hot", benchLimit); err != nil { // connect to every master
				b.Fatal(err)
			}
			before := evalsPerMaster(b, c)
			b.SetParallelism(16)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := l.Allow(ctx, "hot", benchLimit); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
			// The busiest master's share of the scripts run: 1 when one
			// master carries the whole key, 1/3 when three share it.
			after := evalsPerMaster(b, c)
			var total, most int64
			for addr, n := range after {
				d := n - before[addr]
				total += d
				most = max(most, d)
			}
			b.ReportMetric(float64(most)/float64(max(total, 1)), "busiest-master-share")
		})
	}
}

// evalsPerMaster reads each master's count of EVALSHA calls.
func evalsPerMaster(b *testing.B, c *redis.ClusterClient) map[string]int64 {
	b.Helper()
	var mu sync.Mutex
	out := map[string]int64{}
	err := c.ForEachMaster(context.Background(), func(ctx context.Context, m *redis.Client) error {
		info, err := m.Info(ctx, "commandstats").Result()
		if err != nil {
			return err
		}
		var n int64
		for _, line := range strings.Split(info, "\n") {
			if rest, ok := strings.CutPrefix(line, "cmdstat_evalsha:calls="); ok {
				n, _ = strconv.ParseInt(rest[:strings.IndexByte(rest, ',')], 10, 64)
			}
		}
		mu.Lock()
		out[m.Options().Addr] = n
		mu.Unlock()
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return out
}

// BenchmarkRateLimitMemory reports MEMORY USAGE of one key's state, for
// each algorithm after one event and at the limit, and the sliding log's
// bytes per entry (one per admitted event). Key names are as long as with
// the default prefix "hg:" ("hg:rl:{s:user:12345}:…"). One op is one key
// written, measured and deleted.
func BenchmarkRateLimitMemory(b *testing.B) {
	ctx := context.Background()
	c := standaloneClient(b)
	s, err := redisstore.New(ctx, c, &redisstore.Options{Prefix: "hg:"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	l, err := ratelimit.New(s.RateLimits(), nil)
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		limit ratelimit.Limit
		n     int
	}{
		{"gcra/one-event", ratelimit.PerMinute(100), 1},
		{"gcra/at-limit", ratelimit.PerMinute(100), 100},
		{"sliding-window/one-event", ratelimit.PerMinute(100).WithAlgorithm(ratelimit.SlidingWindow), 1},
		{"sliding-window/at-limit", ratelimit.PerMinute(100).WithAlgorithm(ratelimit.SlidingWindow), 100},
		{"sliding-log/one-event", ratelimit.PerMinute(100).WithAlgorithm(ratelimit.SlidingLog), 1},
		{"sliding-log/at-limit-100", ratelimit.PerMinute(100).WithAlgorithm(ratelimit.SlidingLog), 100},
		{"sliding-log/at-limit-10000", ratelimit.PerMinute(10000).WithAlgorithm(ratelimit.SlidingLog), 10000},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var bytes int64
			i := 0
			for b.Loop() {
				key := "user:" + strconv.Itoa(10000+i%90000)
				i++
				if _, err := l.AllowN(ctx, key, tc.n, tc.limit); err != nil {
					b.Fatal(err)
				}
				ks, err := c.Keys(ctx, "hg:rl:{s:"+key+"}:*").Result()
				if err != nil || len(ks) != 1 {
					b.Fatalf("keys %v, %v", ks, err)
				}
				bytes = c.MemoryUsage(ctx, ks[0], 0).Val()
				c.Del(ctx, ks[0])
			}
			b.ReportMetric(float64(bytes), "B/key")
			if tc.limit.Algorithm == ratelimit.SlidingLog {
				b.ReportMetric(float64(bytes)/float64(tc.n), "B/event")
			}
		})
	}
}
