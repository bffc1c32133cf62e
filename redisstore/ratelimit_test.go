package redisstore_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/internal/testkit/redistest"
	"github.com/hourglass-io/hourglass/internal/testkit/storetest"
	"github.com/hourglass-io/hourglass/memstore"
	"github.com/hourglass-io/hourglass/ratelimit"
	"github.com/hourglass-io/hourglass/redisstore"
	"github.com/redis/go-redis/v9"
)

func TestRateLimitConformance(t *testing.T) {
	for _, topo := range topologies {
		t.Run(topo.name, func(t *testing.T) {
			c := topo.client(t)
			storetest.RateLimit(t, func(t *testing.T, clock *storetest.Clock) ratelimit.Store {
				return newStore(t, c, &redisstore.Options{Clock: clock.Now}).RateLimits()
			})
		})
	}
}

// admissions keeps the store's time of every admitted decision of several
// stores.
type admissions struct {
	mu    sync.Mutex
	times []time.Time
}

func (a *admissions) sorted() []time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.SortedFunc(slices.Values(a.times), func(x, y time.Time) int { return x.Compare(y) })
}

// recorder is a ratelimit.Store that passes every call to the Redis store
// under it and notes the slot (the store's time plus the delay) of every
// admitted decision in log, and in the *slot a caller put in its context.
type recorder struct {
	ratelimit.Store
	log *admissions
}

type slotKey struct{}

type slot struct{ at time.Time }

func (r recorder) note(ctx context.Context, d ratelimit.Decision, err error) (ratelimit.Decision, error) {
	if err == nil && d.OK {
		at := d.Now.Add(d.Delay)
		r.log.mu.Lock()
		r.log.times = append(r.log.times, at)
		r.log.mu.Unlock()
		if s, ok := ctx.Value(slotKey{}).(*slot); ok {
			s.at = at
		}
	}
	return d, err
}

func (r recorder) GCRA(ctx context.Context, key string, n int, limits []ratelimit.Limit, op ratelimit.Op, maxWait time.Duration, at time.Time) (ratelimit.Decision, error) {
	d, err := r.Store.GCRA(ctx, key, n, limits, op, maxWait, at)
	if op == ratelimit.OpCancel {
		return d, err
	}
	return r.note(ctx, d, err)
}

func (r recorder) SlidingLog(ctx context.Context, key string, n int, limits []ratelimit.Limit) (ratelimit.Decision, error) {
	d, err := r.Store.SlidingLog(ctx, key, n, limits)
	return r.note(ctx, d, err)
}

// sharedLimiters returns k Limiters, each on its own client and Store,
// sharing one prefix (so one limit), whose admissions go to log. With clk,
// the Stores and the Limiters are on clk; without, on Redis's and the
// machine's.
func sharedLimiters(t *testing.T, client func(testing.TB) redis.UniversalClient, k int, log *admissions, clk *storetest.Clock) []*ratelimit.Limiter {
	t.Helper()
	opts := redisstore.Options{Prefix: redistest.Prefix(t)}
	var lopts ratelimit.Options
	if clk != nil {
		opts.Clock, lopts.Clock = clk.Now, clk
	}
	var ls []*ratelimit.Limiter
	for range k {
		s, err := redisstore.New(context.Background(), client(t), &opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		l, err := ratelimit.New(recorder{Store: s.RateLimits(), log: log}, &lopts)
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
	}
	return ls
}

// TestRateLimitNeverOverAdmits: 64 goroutines over 4 Limiters (4 clients)
// call Allow on one key for a second; on Redis's clock, no window holds
// more than the limit allows.
func TestRateLimitNeverOverAdmits(t *testing.T) {
	for _, topo := range topologies {
		t.Run(topo.name, func(t *testing.T) {
			for _, c := range []struct {
				name  string
				limit ratelimit.Limit
				// ok reports whether the sorted admitted times a[i] and
				// a[j], i < j, may both pass.
				ok func(a []time.Time, i, j int) bool
			}{
				{"gcra", ratelimit.Limit{Events: 200, Per: time.Second, Burst: 20}, func(a []time.Time, i, j int) bool {
					// j-i+1 events within a[j]-a[i]: at most the burst
					// plus one per 5 ms interval.
					return j-i+1 <= 20 || a[j].Sub(a[i]) >= time.Duration(j-i+1-20)*5*time.Millisecond
				}},
				{"sliding-log", ratelimit.Limit{Events: 50, Per: 250 * time.Millisecond, Algorithm: ratelimit.SlidingLog}, func(a []time.Time, i, j int) bool {
					// at most 50 in any 250 ms window
					return j-i < 50 || a[j].Sub(a[i]) >= 250*time.Millisecond
				}},
			} {
				t.Run(c.name, func(t *testing.T) {
					log := &admissions{}
					limiters := sharedLimiters(t, topo.client, 4, log, nil)
					ctx := context.Background()
					var wg sync.WaitGroup
					var calls atomic.Int64
					stop := time.Now().Add(time.Second)
					for g := range 64 {
						l := limiters[g%4]
						wg.Go(func() {
							for time.Now().Before(stop) {
								calls.Add(1)
								if _, err := l.Allow(ctx, "hot", c.limit); err != nil {
									t.Error(err)
									return
								}
							}
						})
					}
					wg.Wait()
					a := log.sorted()
					if len(a) < 50 {
						t.Fatalf("only %d admitted of %d calls", len(a), calls.Load())
					}
					for i := range a {
						for j := i + 1; j < len(a); j++ {
							if !c.ok(a, i, j) {
								t.Fatalf("admitted %d events from %v to %v (%v apart): over the limit %v", j-i+1, a[i], a[j], a[j].Sub(a[i]), c.limit)
							}
						}
					}
					t.Logf("%d calls, %d admitted", calls.Load(), len(a))
				})
			}
		})
	}
}

// TestRateLimitFairWait: 8 contenders, each on its own client, call Wait
// in a loop on one key limited to 100 per second, for 10 s of a manual
// clock that the Stores and the Limiters share and the test moves on, one
// slot (10 ms) at a time, once every contender sleeps on it. Each gets its
// share (Jain's fairness index at least 0.99), every slot is one interval
// after the one before (reservations are served in the order they reached
// Redis), and no Wait returns before its slot or after the next one came.
func TestRateLimitFairWait(t *testing.T) {
	log := &admissions{}
	const (
		contenders = 8
		every      = 10 * time.Millisecond
		slots      = 1000 // 10 s
	)
	clk := storetest.NewClock(time.Now().Truncate(time.Second))
	limiters := sharedLimiters(t, standaloneClient, contenders, log, clk)
	lim := ratelimit.Limit{Events: 100, Per: time.Second, Burst: 1}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	var counts [contenders]int
	var early, late atomic.Int64
	for i, l := range limiters {
		wg.Go(func() {
			for {
				s := &slot{}
				err := l.Wait(context.WithValue(ctx, slotKey{}, s), "downstream", lim)
				if err != nil {
					return // the 10 s are over: ctx ended
				}
				switch back := clk.Now(); {
				case back.Before(s.at):
					early.Add(1)
				case !back.Before(s.at.Add(every)):
					late.Add(1)
				}
				counts[i]++
			}
		})
	}
	wctx, wcancel := context.WithTimeout(ctx, 60*time.Second)
	defer wcancel()
	for n := range slots {
		if err := clk.WaitArmed(wctx, contenders); err != nil {
			t.Fatalf("slot %d: the contenders do not all wait on the clock: %v", n, err)
		}
		clk.Advance(every)
	}
	if err := clk.WaitArmed(wctx, contenders); err != nil {
		t.Fatalf("after the last slot: %v", err)
	}
	cancel()
	wg.Wait()
	sum, sq := 0.0, 0.0
	for _, c := range counts {
		sum += float64(c)
		sq += float64(c) * float64(c)
	}
	jain := sum * sum / (contenders * sq)
	t.Logf("served %v (total %v), Jain's index %.4f", counts, sum, jain)
	if jain < 0.99 {
		t.Errorf("Jain's index %.4f, want at least 0.99 (served %v)", jain, counts)
	}
	if n := early.Load(); n > 0 {
		t.Errorf("%d waits returned before their slot", n)
	}
	if n := late.Load(); n > 0 {
		t.Errorf("%d waits returned after the next slot came", n)
	}
	a := log.sorted()
	for i := 1; i < len(a); i++ {
		if d := a[i].Sub(a[i-1]); d != every {
			t.Fatalf("slots %d and %d %v apart, want %v", i-1, i, d, every)
		}
	}
	// The first slot at once, one a step after, and one reserved ahead by
	// each contender.
	if want := 1 + slots + contenders; len(a) != want {
		t.Errorf("%d slots reserved in %d steps of %v by %d contenders, want %d", len(a), slots, every, contenders, want)
	}
}

// TestRateLimitDifferential drives the embedded engine and Redis with the
// same random decisions and compares every answer.
func TestRateLimitDifferential(t *testing.T) {
	c := standaloneClient(t)
	for seed := uint64(1); seed <= 4; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			storetest.RateLimitDifferential(t, seed, 1500,
				func(t *testing.T, clock *storetest.Clock) ratelimit.Store {
					s, err := memstore.New(&memstore.Options{Clock: clock.Now})
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { s.Close() })
					return s.RateLimits()
				},
				func(t *testing.T, clock *storetest.Clock) ratelimit.Store {
					return newStore(t, c, &redisstore.Options{Clock: clock.Now}).RateLimits()
				})
		})
	}
}

// The slot the GCRA merger groups decisions by is the cluster's own.
func TestKeySlot(t *testing.T) {
	c := redistest.ClusterClient(t)
	for _, key := range []string{"", "a", "hg:rl:{user:7}:g3d.1", "{}x", "x{}y", "{a}{b}", "no-tag", "hg:rl:{~7b7d}:g1.1", "ünïcode"} {
		want, err := c.ClusterKeySlot(t.Context(), key).Result()
		if err != nil {
			t.Fatal(err)
		}
		if got := redisstore.KeySlot(key); int64(got) != want {
			t.Errorf("slot of %q: %d, want %d", key, got, want)
		}
	}
}

// Decisions from many callers on many keys merge into few calls, and each
// caller gets its own decision: 16 goroutines, 200 keys, 5 allowed per key.
func TestGCRAMergedAcrossKeys(t *testing.T) {
	for _, topo := range topologies {
		t.Run(topo.name, func(t *testing.T) {
			l, err := ratelimit.New(newStore(t, topo.client(t), nil).RateLimits(), nil)
			if err != nil {
				t.Fatal(err)
			}
			lim := ratelimit.PerMinute(5)
			var allowed [200]atomic.Int64
			var wg sync.WaitGroup
			for g := range 16 {
				wg.Go(func() {
					for i := range 200 {
						k := (i + g*13) % 200
						res, err := l.Allow(t.Context(), fmt.Sprint("merge-", k), lim)
						if err != nil {
							t.Error(err)
							return
						}
						if res.Allowed {
							allowed[k].Add(1)
						}
					}
				})
			}
			wg.Wait()
			for k := range allowed {
				if n := allowed[k].Load(); n != 5 {
					t.Fatalf("key %d: %d allowed, want 5 (16 calls at 5 a minute)", k, n)
				}
			}
		})
	}
}
