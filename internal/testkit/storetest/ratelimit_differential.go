package storetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/ratelimit"
)

// RateLimitDifferential drives two rate limit stores with the same seeded
// random decisions (allow, reserve, cancel, over every algorithm, several
// limits at once, costs, quotas), each on its own manual clock moved in
// step, and fails at the first answer on which they differ.
func RateLimitDifferential(t *testing.T, seed uint64, steps int, newA, newB NewRateLimitStore) {
	t.Helper()
	ca, cb := NewClock(epoch), NewClock(epoch)
	la, lb := newLimiter(t, newA(t, ca), nil), newLimiter(t, newB(t, cb), nil)
	rng := rand.New(rand.NewPCG(seed, seed^0x51afd7ed558ccd1d))
	ctx := context.Background()
	sets := [][]ratelimit.Limit{
		{ratelimit.Every(time.Second)},
		{ratelimit.Limit{Events: 3, Per: time.Second, Burst: 2}},
		{ratelimit.Every(300 * time.Millisecond), ratelimit.Limit{Events: 5, Per: 3 * time.Second, Burst: 4}},
		{ratelimit.Funnel(10, 2*time.Second, 3)},
		{ratelimit.Limit{Events: 7, Per: 1700 * time.Millisecond, Burst: 7, Quota: 2}},
		{ratelimit.Limit{Events: 4, Per: time.Second, Algorithm: ratelimit.SlidingLog}},
		{ratelimit.Limit{Events: 3, Per: 700 * time.Millisecond, Algorithm: ratelimit.SlidingLog},
			ratelimit.Limit{Events: 6, Per: 2 * time.Second, Quota: 1, Algorithm: ratelimit.SlidingLog}},
		{ratelimit.Limit{Events: 5, Per: time.Second, Algorithm: ratelimit.SlidingWindow}},
		{ratelimit.Limit{Events: 9, Per: 1300 * time.Millisecond, Quota: 2, Algorithm: ratelimit.SlidingWindow},
			ratelimit.Limit{Events: 20, Per: 5 * time.Second, Algorithm: ratelimit.SlidingWindow}},
	}
	keys := []string{"a", "b", "{c}"}
	type pair struct{ a, b *ratelimit.Reservation }
	var held []pair
	for step := range steps {
		key := keys[rng.IntN(len(keys))]
		set := sets[rng.IntN(len(sets))]
		n := 1 + rng.IntN(2)
		var name string
		var ra, rb string
		switch op := rng.IntN(10); {
		case op < 5 || set[0].Algorithm != ratelimit.GCRA:
			name = "AllowN"
			x, errA := la.AllowN(ctx, key, n, set...)
			y, errB := lb.AllowN(ctx, key, n, set...)
			ra, rb = fmt.Sprintf("%+v %v", x, errA), fmt.Sprintf("%+v %v", y, errB)
		case op < 8:
			name = "ReserveN"
			wait := []time.Duration{-1, 0, 500 * time.Millisecond, 2 * time.Second}[rng.IntN(4)]
			x, errA := la.ReserveN(ctx, key, n, wait, set...)
			y, errB := lb.ReserveN(ctx, key, n, wait, set...)
			ra, rb = fmt.Sprint(errA), fmt.Sprint(errB)
			if x != nil && y != nil {
				ra += fmt.Sprintf(" %v %v", x.OK(), x.Delay())
				rb += fmt.Sprintf(" %v %v", y.OK(), y.Delay())
				held = append(held, pair{x, y})
			}
		default:
			name = "Cancel"
			if len(held) == 0 {
				continue
			}
			i := rng.IntN(len(held))
			p := held[i]
			held = append(held[:i], held[i+1:]...)
			ra, rb = fmt.Sprint(p.a.Cancel(ctx)), fmt.Sprint(p.b.Cancel(ctx))
		}
		if ra != rb {
			t.Fatalf("step %d (seed %d): %s(%q, %d, %v) differ:\n  A: %s\n  B: %s", step, seed, name, key, n, set, ra, rb)
		}
		d := []time.Duration{0, 0, time.Microsecond, 7 * time.Millisecond, 100 * time.Millisecond, 333 * time.Millisecond, time.Second}[rng.IntN(7)]
		ca.Advance(d)
		cb.Advance(d)
	}
}
