package redisstore_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/internal/testkit/redistest"
	"github.com/hourglass-io/hourglass/internal/testkit/storetest"
	"github.com/hourglass-io/hourglass/memstore"
	"github.com/hourglass-io/hourglass/ratelimit"
	"github.com/hourglass-io/hourglass/redisstore"
)

// One function call carrying many decisions (as the runner merges
// concurrent callers' calls) answers each exactly as the embedded engine
// answers the same decisions made one at a time, in order: every operation,
// one limit and several, costs of 0 to 3, the same key several times in a
// call, refusals that must leave a key as it was. On standalone Redis the decisions of a call are on four keys; on
// the cluster, where a call reaches one slot, on one key.
func TestGCRAMergedCallMatchesOneAtATime(t *testing.T) {
	limitSets := [][]ratelimit.Limit{
		{ratelimit.PerSecond(10)},
		// burst 1: a cost of 2 or 3 never passes now, so an allow of it
		// is refused on an idle key and leaves it idle.
		{ratelimit.Every(50 * time.Millisecond)},
		{ratelimit.Every(30 * time.Millisecond).WithBurst(3)},
		{ratelimit.PerSecond(5), ratelimit.PerMinute(40)},
		{ratelimit.Funnel(6, time.Second, 2)},
		{ratelimit.PerSecond(3).WithBurst(1), ratelimit.Every(250 * time.Millisecond), ratelimit.PerHour(100)},
	}
	for _, topo := range topologies {
		t.Run(topo.name, func(t *testing.T) {
			keys := []string{"m-a", "m-b", "m-c", "m-d"}
			if topo.name == "cluster" {
				keys = keys[:1]
			}
			clock := storetest.NewClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
			redisLimits := newStore(t, topo.client(t), &redisstore.Options{Clock: clock.Now}).RateLimits()
			mem, err := memstore.New(&memstore.Options{Clock: clock.Now})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { mem.Close() })
			memLimits := mem.RateLimits()
			ctx := context.Background()
			rng := rand.New(rand.NewPCG(24, 1))
			// Slots of earlier reservations and times of earlier
			// admissions, for cancels and roll backs.
			var ats []time.Time
			for round := range 150 {
				n := 1 + rng.IntN(12)
				ks := make([]string, n)
				reqs := make([]ratelimit.GCRARequest, n)
				for i := range reqs {
					ks[i] = keys[rng.IntN(len(keys))]
					r := ratelimit.GCRARequest{Limits: limitSets[rng.IntN(len(limitSets))], N: rng.IntN(4), MaxWait: -1}
					switch x := rng.IntN(10); {
					case x < 4:
						r.Op = ratelimit.OpAllow
					case x < 7:
						r.Op = ratelimit.OpReserve
						if rng.IntN(2) == 0 {
							r.MaxWait = time.Duration(rng.IntN(400)) * time.Millisecond
						}
					case x < 9:
						r.Op = ratelimit.OpCancel
					default:
						r.Op = ratelimit.OpRollback
					}
					if r.Op == ratelimit.OpCancel || r.Op == ratelimit.OpRollback {
						r.At = clock.Now().Add(time.Duration(rng.IntN(200)-50) * time.Millisecond)
						if len(ats) > 0 && rng.IntN(2) == 0 {
							r.At = ats[rng.IntN(len(ats))]
						}
					}
					reqs[i] = r
				}
				got, err := redisstore.GCRAOneCall(ctx, redisLimits, ks, reqs)
				if err != nil {
					t.Fatalf("round %d: %v", round, err)
				}
				for i, r := range reqs {
					want, err := memLimits.GCRA(ctx, ks[i], r.N, r.Limits, r.Op, r.MaxWait, r.At)
					if err != nil {
						t.Fatal(err)
					}
					if g, w := got[i], want; g.OK != w.OK || g.Remaining != w.Remaining || g.RetryAfter != w.RetryAfter || g.ResetAfter != w.ResetAfter || g.Delay != w.Delay || !g.Now.Equal(w.Now) {
						t.Fatalf("round %d, decision %d of %d (%s, op %d, n %d, limits %v, max wait %v, at %v):\nRedis, one call: %+v\none at a time:   %+v",
							round, i, n, ks[i], r.Op, r.N, r.Limits, r.MaxWait, r.At.Sub(clock.Now()), got[i], want)
					}
					if got[i].OK {
						ats = append(ats, got[i].Now.Add(got[i].Delay))
					}
				}
				clock.Advance(time.Duration(rng.IntN(120)) * time.Millisecond)
			}
		})
	}
}

// State written in the documented layout (a string of the theoretical
// arrival time in µs under <prefix>rl:{s:<key>}:g<interval>.<burst>, base
// 36) is read as it was written: a store holding it carries on from it.
func TestGCRAReadsStoredState(t *testing.T) {
	for _, topo := range topologies {
		t.Run(topo.name, func(t *testing.T) {
			c := topo.client(t)
			clock := storetest.NewClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
			prefix := redistest.Prefix(t)
			s, err := redisstore.New(t.Context(), c, &redisstore.Options{Clock: clock.Now, Prefix: prefix})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			l, err := ratelimit.New(s.RateLimits(), nil)
			if err != nil {
				t.Fatal(err)
			}
			// 10 per second, burst 10: interval 100,000 µs ("255s" in base
			// 36), burst "a". A tat 750 ms ahead leaves room for 2 now.
			key := prefix + "rl:{s:stored}:g255s.a"
			tat := clock.Now().Add(750 * time.Millisecond).UnixMicro()
			if err := c.Set(t.Context(), key, tat, time.Minute).Err(); err != nil {
				t.Fatal(err)
			}
			lim := ratelimit.PerSecond(10)
			res, err := l.Allow(t.Context(), "stored", lim)
			if err != nil || !res.Allowed || res.Remaining != 1 || res.ResetAfter != 850*time.Millisecond {
				t.Fatalf("Allow on stored state: %+v, %v; want allowed, 1 remaining, reset after 850ms", res, err)
			}
			got, err := c.Get(t.Context(), key).Int64()
			if err != nil || got != tat+100_000 {
				t.Fatalf("stored tat %d (%v), want %d", got, err, tat+100_000)
			}
		})
	}
}
