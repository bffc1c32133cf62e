package redisstore_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/internal/testkit/redistest"
	"github.com/hourglass-io/hourglass/redisstore"
	"github.com/hourglass-io/hourglass/ttlhash"
	"github.com/redis/go-redis/v9"
)

// The commands Redis runs per expired field, from the write's refining to
// the consumer's acknowledgement, when a Sweeper and a consumer keep up
// with 10,000 deadlines a second: what TTLHashLag's Redis CPU per field is
// made of. Each budget is what this layout spends, with a little room;
// a change that spends more fails here, by command.
var sweepBudget = map[string]float64{
	"fcall":      0.15, // sweeps, on the Sweeper's grid: about one a shard every Gather (0.13)
	"xadd":       1.0,  // one event a field
	"hget":       0.62, // the value of a field whose hash has no other field due in the call, the wheel's chunks (0.56)
	"hdel":       0.80, // the fields, by hash (0.75: 100 fields a hash)
	"hmget":      0.32, // the values of a hash's fields due in one call, the names of a chunk's ids, the pace (0.28)
	"exists":     0.15, // whether hashes emptied: one a call, not one a field (0.13)
	"xreadgroup": 0.13, // a shard's events of one point of the grid in one read (0.11)
	"xack":       0.13, // in the round trip of the next read (0.11)
	"*":          4.4,  // every command, those of the functions included (4.0)
}

// TestTTLHashSweepBudget loads 20,000 fields over 200 hashes due over 2 s
// on a private redis-server with an injected clock, then steps the clock
// on the Sweeper's grid (ttlhash.DefaultGather), sweeps the shards due in
// one pipeline at each point, reads the shards that expired fields and
// acknowledges in the next read, and holds the commands per expired field
// (INFO commandstats) to sweepBudget.
func TestTTLHashSweepBudget(t *testing.T) {
	const fields, hashes = 20_000, 200
	srv := redistest.Standalone(t)
	rc := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1, PoolSize: 32})
	t.Cleanup(func() { rc.Close() })
	ctx := context.Background()
	t0 := time.Now().Truncate(time.Second)
	var clock atomic.Int64 // ms since t0
	s, err := redisstore.New(ctx, rc, &redisstore.Options{Clock: func() time.Time {
		return t0.Add(time.Duration(clock.Load()) * time.Millisecond)
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	h := s.Hashes()
	if err := h.CreateGroup(ctx, "g"); err != nil {
		t.Fatal(err)
	}
	const lead, window = 10 * time.Second, 2 * time.Second
	rnd := rand.New(rand.NewPCG(1, 2))
	ttls := make([]time.Duration, fields)
	for i := range ttls {
		ttls[i] = lead + time.Duration(rnd.Int64N(int64(window/time.Millisecond)))*time.Millisecond
	}
	if err := parallel(fields/100, func(k int) error {
		for i := k * 100; i < k*100+100; i++ {
			if _, err := h.Set(ctx, fmt.Sprintf("h%03d", i%hashes), ttlSet(ttls[i], fmt.Sprintf("f%06d", i), []byte("0123456789abcdef"))); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := rc.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	got := sweepOnGrid(t, h, &clock, int64((lead+window)/time.Millisecond)+1, ttlhash.DefaultGather)
	if got != fields {
		t.Fatalf("expired %d fields, want %d", got, fields)
	}
	calls := commandCalls(t, rc)
	all := int64(0)
	for name, n := range calls {
		if name != "info" && name != "config|resetstat" {
			all += n
		}
	}
	calls["*"] = all
	names := make([]string, 0, len(sweepBudget))
	for name := range sweepBudget {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		per := float64(calls[name]) / fields
		t.Logf("%-10s %.3f per field (budget %.2f)", name, per, sweepBudget[name])
		if per > sweepBudget[name] {
			t.Errorf("%s: %.3f per expired field, over the budget of %.2f", name, per, sweepBudget[name])
		}
	}
}

// sweepOnGrid steps clock (ms) from 0 to until, by step, as a Sweeper
// on its grid does: at each point the shards due (from each one's last
// sweep) are swept in one pipeline, again while one has more, and a
// consumer of group "g" reads the shards that expired fields,
// acknowledging what it read in its next read (the last read's with Ack).
// It returns the fields expired.
func sweepOnGrid(tb testing.TB, h *redisstore.Hashes, clock *atomic.Int64, until int64, step time.Duration) int {
	tb.Helper()
	ctx := context.Background()
	next := make([]int64, h.Shards()) // ms: each shard's next due time, -1 none
	expired := 0
	var due, woken []int
	var ids []string
	for ms := int64(0); ms <= until+step.Milliseconds(); ms += step.Milliseconds() {
		clock.Store(ms)
		due = due[:0]
		for i, t := range next {
			if t >= 0 && t <= ms {
				due = append(due, i)
			}
		}
		for len(due) > 0 {
			rs, err := h.SweepShards(ctx, due, 256)
			if err != nil {
				tb.Fatal(err)
			}
			woken = woken[:0]
			more := due[:0]
			for k, r := range rs {
				i := due[k]
				expired += r.Expired
				if r.Expired > 0 {
					woken = append(woken, i)
				}
				switch {
				case r.More:
					more = append(more, i)
				case r.Next >= 0:
					next[i] = ms + r.Next.Milliseconds()
				default:
					next[i] = -1
				}
			}
			due = more
			for len(woken) > 0 {
				evs, err := h.AckRead(ctx, "g", "c", ids, woken, 256)
				if err != nil {
					tb.Fatal(err)
				}
				ids = ids[:0]
				for _, e := range evs {
					ids = append(ids, e.ID)
				}
				if len(evs) < 256 {
					break
				}
			}
		}
	}
	if len(ids) > 0 {
		if _, err := h.Ack(ctx, "g", ids); err != nil {
			tb.Fatal(err)
		}
	}
	return expired
}
