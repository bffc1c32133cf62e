package redisstore_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/internal/testkit/redistest"
	"github.com/hourglass-io/hourglass/redisstore"
	"github.com/hourglass-io/hourglass/ttlhash"
	"github.com/redis/go-redis/v9"
)

// BenchmarkTTLHashSweepCPU measures the Redis CPU an expired field costs
// when the sweep keeps up, on a clock of its own, so that the figure does
// not depend on how busy the machine is: fields are loaded with deadlines
// spread over a window, then the clock advances on the Sweeper's grid
// (ttlhash.DefaultGather) and at each point the shards due (as a Sweeper
// keeps them, from each sweep's next due time) are swept in one pipeline,
// and a consumer reads the shards that expired fields and acknowledges
// what it read in its next read, as one that keeps up does (sweepOnGrid). It reports the Redis CPU (INFO cpu) and the
// commands (INFO commandstats) per expired field, of the sweeps, reads and
// acknowledgements together. rate=10k: 100,000 fields over 1,000 hashes
// due over 10 s; rate=2k: 20,000 over 200; rate=100k: 200,000 over 2,000
// due over 2 s; rate=10k,fields=1M: 1,000,000 over 10,000 due over 100 s
// (TTLHashLag's scale). Run with -benchtime=1x.
func BenchmarkTTLHashSweepCPU(b *testing.B) {
	for _, c := range []struct {
		name           string
		fields, hashes int
		window         time.Duration
	}{
		{"rate=10k", 100_000, 1000, 10 * time.Second},
		{"rate=2k", 20_000, 200, 10 * time.Second},
		{"rate=100k", 200_000, 2000, 2 * time.Second},
		{"rate=10k,fields=1M", 1_000_000, 10_000, 100 * time.Second},
	} {
		b.Run(c.name, func(b *testing.B) {
			srv := redistest.Standalone(b)
			rc := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1, PoolSize: 64})
			b.Cleanup(func() { rc.Close() })
			ctx := context.Background()
			t0 := time.Now().Truncate(time.Millisecond)
			var clock atomic.Int64 // ms since t0
			s, err := redisstore.New(ctx, rc, &redisstore.Options{Clock: func() time.Time {
				return t0.Add(time.Duration(clock.Load()) * time.Millisecond)
			}})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { s.Close() })
			h := s.Hashes()
			if err := h.CreateGroup(ctx, "g"); err != nil {
				b.Fatal(err)
			}
			const lead = 20 * time.Second
			value := []byte("0123456789abcdef")
			err = parallel(c.fields, func(i int) error {
				ttl := lead + time.Duration(rand.Int64N(int64(c.window/time.Millisecond)))*time.Millisecond
				_, err := h.Set(ctx, fmt.Sprintf("h%05d", i%c.hashes), ttlSet(ttl, fmt.Sprintf("f%07d", i), value))
				return err
			})
			if err != nil {
				b.Fatal(err)
			}
			rc.ConfigResetStat(ctx)
			cpu0 := redisCPU(b, rc)
			b.ResetTimer()
			expired := sweepOnGrid(b, h, &clock, int64((lead+c.window)/time.Millisecond)+1, ttlhash.DefaultGather)
			b.StopTimer()
			cpu := redisCPU(b, rc) - cpu0
			if expired != c.fields {
				b.Fatalf("expired %d fields, want %d", expired, c.fields)
			}
			calls, fcalls := sweepCommandCalls(b, rc)
			b.Logf("commands by time:%s", commandsByTime(b, rc, c.fields))
			b.ReportMetric(cpu/float64(c.fields)*1e6, "redis-cpu-µs/field")
			b.ReportMetric(float64(calls)/float64(c.fields), "commands/field")
			b.ReportMetric(float64(fcalls)/float64(c.fields), "fcalls/field")
		})
	}
}

// ttlSet is a SetRequest of one field with a TTL.
func ttlSet(ttl time.Duration, field string, value []byte) ttlhash.SetRequest {
	return ttlhash.SetRequest{TTL: ttl, Fields: []ttlhash.Field{{Name: field, Value: value}}}
}

// sweepCommandCalls sums the calls of INFO commandstats: every command, and
// FCALL's alone (the commands a function runs count among every command).
func sweepCommandCalls(b *testing.B, rc *redis.Client) (all, fcalls int64) {
	stats, err := rc.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(stats, "\r\n") {
		name, rest, ok := strings.Cut(strings.TrimPrefix(line, "cmdstat_"), ":")
		if !ok || !strings.HasPrefix(line, "cmdstat_") || name == "info" || name == "config|resetstat" {
			continue
		}
		for _, kv := range strings.Split(rest, ",") {
			if v, ok := strings.CutPrefix(kv, "calls="); ok {
				n, _ := strconv.ParseInt(v, 10, 64)
				all += n
				if name == "fcall" {
					fcalls += n
				}
			}
		}
	}
	return all, fcalls
}
