package redisstore_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/internal/testkit/redistest"
	"github.com/hourglass-io/hourglass/internal/testkit/storetest"
	"github.com/hourglass-io/hourglass/redisstore"
	"github.com/hourglass-io/hourglass/ttlhash"
	"github.com/redis/go-redis/v9"
)

// parallel runs f(i) for i in [0, n) on 32 goroutines.
func parallel(n int, f func(i int) error) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	var firstErr error
	var mu sync.Mutex
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := f(i); err != nil {
					mu.Lock()
					firstErr = err
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	return firstErr
}

// BenchmarkTTLHashMemory reports bytes per field, measured as the growth
// of used_memory on a server of its own: a plain hash (HSET), the same
// fields with TTLs through ttlhash (value prefix, timing wheel, id map
// included), and String keys with PX. 8-byte field names; fields per hash
// 100 (dense: 100k fields over 1000 hashes) or 100 (sparse: 2000 fields
// over 20 hashes); TTLs spread uniformly over 10 s or 24 h. Run with
// -benchtime=1x.
func BenchmarkTTLHashMemory(b *testing.B) {
	srv := redistest.Standalone(b)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1})
	b.Cleanup(func() { c.Close() })
	ctx := context.Background()
	for _, n := range []struct {
		name           string
		fields, hashes int
	}{{"dense", 100_000, 1000}, {"sparse", 2000, 20}} {
		for _, size := range []int{16, 200, 1000} {
			for _, spread := range []time.Duration{10 * time.Second, 24 * time.Hour} {
				b.Run(fmt.Sprintf("%s/value=%d/spread=%v", n.name, size, spread), func(b *testing.B) {
					value := make([]byte, size)
					field := func(i int) (string, string) { return fmt.Sprintf("h%04d", i%n.hashes), fmt.Sprintf("f%07d", i) }
					ttl := func() time.Duration {
						return time.Minute + time.Duration(rand.Int64N(int64(spread/time.Millisecond)))*time.Millisecond
					}
					measure := func(load func() error) float64 {
						if err := c.FlushAll(ctx).Err(); err != nil {
							b.Fatal(err)
						}
						s, err := redisstore.New(ctx, c, nil)
						if err != nil {
							b.Fatal(err)
						}
						defer s.Close()
						before := usedMemory(b, c)
						if err := load(); err != nil {
							b.Fatal(err)
						}
						return float64(usedMemory(b, c)-before) / float64(n.fields)
					}
					plain := measure(func() error {
						return parallel(n.fields/100, func(k int) error {
							p := c.Pipeline()
							for i := k * 100; i < k*100+100; i++ {
								h, f := field(i)
								p.HSet(ctx, "plain:"+h, f, value)
							}
							_, err := p.Exec(ctx)
							return err
						})
					})
					strs := measure(func() error {
						return parallel(n.fields/100, func(k int) error {
							p := c.Pipeline()
							for i := k * 100; i < k*100+100; i++ {
								h, f := field(i)
								p.Set(ctx, "s:"+h+":"+f, value, ttl())
							}
							_, err := p.Exec(ctx)
							return err
						})
					})
					var hs *ttlhash.Hashes
					withTTL := measure(func() error {
						s, err := redisstore.New(ctx, c, nil)
						if err != nil {
							return err
						}
						defer s.Close()
						if hs, err = ttlhash.New(s.Hashes(), nil); err != nil {
							return err
						}
						return parallel(n.fields, func(i int) error {
							h, f := field(i)
							_, err := hs.Hash(h).SetTTL(ctx, f, value, ttl())
							return err
						})
					})
					b.ReportMetric(plain, "plain-B/field")
					b.ReportMetric(withTTL, "ttlhash-B/field")
					b.ReportMetric(withTTL-plain, "ttl-overhead-B/field")
					b.ReportMetric(strs, "string-px-B/field")
				})
			}
		}
	}
}

// BenchmarkTTLHashLag loads fields whose deadlines fall uniformly over a
// window, runs 2 Sweepers and one group of 3 consumers, and reports the
// expiry lag (the sweep's removal time minus the deadline, on Redis's
// clock) and the delivery lag (a consumer's handling time minus the
// deadline) at p50, p99 and max, and the expiry rate sustained over the
// window, with the Redis CPU per expired field and where the events
// waited (lagTrace). rate=2k: 20,000 fields over 200 hashes due over 10 s;
// rate=10k: 100,000 fields over 1,000 hashes due over 10 s;
// rate=100k: 200,000 fields over 2,000 hashes due over 2 s; rate=20k,
// 30k, 50k: 200,000, 300,000 and 500,000 fields, 100 a hash, due over 10 s;
// rate=10k,fields=1M: 1,000,000 fields over 10,000 hashes due over 100 s.
// Run with -benchtime=1x.
func BenchmarkTTLHashLag(b *testing.B) {
	for _, c := range []struct {
		name           string
		fields, hashes int
		window, lead   time.Duration
	}{
		{"rate=10k", 100_000, 1000, 10 * time.Second, 20 * time.Second},
		// A fifth of the rate, to compare changes on a machine too busy
		// for one redis-server to keep up with 10k a second.
		{"rate=2k", 20_000, 200, 10 * time.Second, 20 * time.Second},
		{"rate=100k", 200_000, 2000, 2 * time.Second, 20 * time.Second},
		// Between: the highest rate one redis-server keeps up with, its
		// delivery p99 within 25 ms.
		{"rate=20k", 200_000, 2000, 10 * time.Second, 20 * time.Second},
		{"rate=30k", 300_000, 3000, 10 * time.Second, 30 * time.Second},
		{"rate=50k", 500_000, 5000, 10 * time.Second, 40 * time.Second},
		// The scale: 1M fields over 10k hashes, 10k falling due
		// per second for 100 s; about 3 minutes.
		{"rate=10k,fields=1M", 1_000_000, 10_000, 100 * time.Second, 80 * time.Second},
	} {
		b.Run(c.name, func(b *testing.B) {
			srv := redistest.Standalone(b)
			rc := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1, PoolSize: 64})
			b.Cleanup(func() { rc.Close() })
			ctx := context.Background()
			s, err := redisstore.New(ctx, rc, nil)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { s.Close() })
			hs, err := ttlhash.New(s.Hashes(), &ttlhash.Options{Batch: 256})
			if err != nil {
				b.Fatal(err)
			}
			if err := hs.CreateGroup(ctx, "g"); err != nil {
				b.Fatal(err)
			}
			start := time.Now().Add(c.lead)
			deadlines := make([]time.Time, c.fields)
			for i := range deadlines {
				deadlines[i] = start.Add(time.Duration(rand.Int64N(int64(c.window/time.Millisecond))) * time.Millisecond)
			}
			loadStart := time.Now()
			err = parallel(c.fields, func(i int) error {
				ttl := time.Until(deadlines[i]).Truncate(time.Millisecond)
				if ttl <= 0 {
					return fmt.Errorf("loading is slower than the lead of %v", c.lead)
				}
				_, err := hs.Hash(fmt.Sprintf("h%05d", i%c.hashes)).SetTTL(ctx, fmt.Sprintf("f%07d", i), []byte("0123456789abcdef"), ttl)
				return err
			})
			if err != nil {
				b.Fatal(err)
			}
			b.Logf("loaded %d fields in %v", c.fields, time.Since(loadStart))
			rc.ConfigSet(ctx, "slowlog-log-slower-than", "5000")
			rc.SlowLogReset(ctx)
			trace := startLagTrace(b, rc, hs, c.fields)
			for range 2 {
				w, err := ttlhash.NewSweeper(s.Hashes(), nil)
				if err != nil {
					b.Fatal(err)
				}
				w.Start()
				defer w.Close()
			}
			storetest.ConsumeTTLHashLag(b, hs, c.fields, c.lead+c.window+30*time.Second, trace.seen)
			trace.report(b, c.fields)
			if logs, err := rc.SlowLogGet(ctx, 1000).Result(); err == nil {
				var longest time.Duration
				kinds := map[string]int{}
				for _, l := range logs {
					longest = max(longest, l.Duration)
					if len(l.Args) > 0 {
						k := l.Args[0]
						if len(l.Args) > 3 && (strings.EqualFold(k, "evalsha") || strings.EqualFold(k, "fcall")) {
							k += " " + l.Args[3] // the first key names the script's kind
						}
						kinds[k]++
					}
				}
				b.Logf("%d commands took over 5 ms in Redis, the longest %v: %v", len(logs), longest, kinds)
			}
		})
	}
}

// BenchmarkTTLHashSetTTL sets one 200-byte field with a TTL per call
// (storetest.BenchTTLHashSetTTL); BenchmarkHSetPlain is the same with HSET.
func BenchmarkTTLHashSetTTL(b *testing.B) {
	storetest.BenchTTLHashSetTTL(b, newStore(b, standaloneClient(b), nil).Hashes())
}

// BenchmarkHSetPlain is HSET of one 200-byte field per call.
func BenchmarkHSetPlain(b *testing.B) {
	c := standaloneClient(b)
	prefix := redistest.Prefix(b)
	value := make([]byte, 200)
	var n atomic.Int64
	b.SetParallelism(8)
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		for pb.Next() {
			i := n.Add(1)
			if err := c.HSet(ctx, prefix+"h"+strconv.FormatInt(i%1000, 10), "f"+strconv.FormatInt(i%100000, 10), value).Err(); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkTTLHashGet reads one field of 10,000 per call
// (storetest.BenchTTLHashGet); BenchmarkHGetPlain is the same with HGET.
func BenchmarkTTLHashGet(b *testing.B) {
	storetest.BenchTTLHashGet(b, newStore(b, standaloneClient(b), nil).Hashes())
}

// BenchmarkHGetPlain is HGET of one field of 10,000 per call.
func BenchmarkHGetPlain(b *testing.B) {
	c := standaloneClient(b)
	prefix := redistest.Prefix(b)
	ctx := context.Background()
	value := make([]byte, 200)
	if err := parallel(100, func(k int) error {
		p := c.Pipeline()
		for i := k * 100; i < k*100+100; i++ {
			p.HSet(ctx, prefix+"h"+strconv.Itoa(i%100), "f"+strconv.Itoa(i), value)
		}
		_, err := p.Exec(ctx)
		return err
	}); err != nil {
		b.Fatal(err)
	}
	var n atomic.Int64
	b.ResetTimer()
	b.SetParallelism(8)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := int(n.Add(1) % 10000)
			if err := c.HGet(ctx, prefix+"h"+strconv.Itoa(i%100), "f"+strconv.Itoa(i)).Err(); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
