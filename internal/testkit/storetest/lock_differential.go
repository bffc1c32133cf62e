package storetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/lock"
)

// LockDifferential drives two lock stores with the same seeded random
// operations (acquire with and without a queue, release, refresh, TTL,
// leave, over locks and a semaphore, several tokens), each on its own
// manual clock moved in step, and fails at the first answer on which they
// differ. Fences are compared by what the contract promises (greater than
// the name's last, not below the clock in µs), since their values may
// differ between stores.
func LockDifferential(t *testing.T, seed uint64, steps int, newA, newB NewLockStore) {
	t.Helper()
	ca, cb := NewClock(epoch), NewClock(epoch)
	sa, sb := newA(t, ca), newB(t, cb)
	rng := rand.New(rand.NewPCG(seed, seed^0x2545f4914f6cdd1d))
	ctx := context.Background()
	names := []struct {
		name  string
		limit int
	}{{"a", 1}, {"b", 2}, {"{c}", 1}}
	tokens := []string{"t1", "t2", "t3", "t4"}
	ttls := []time.Duration{time.Second, 2500 * time.Millisecond, 7 * time.Second}
	lastA, lastB := map[string]uint64{}, map[string]uint64{}
	seen := map[string]int{} // outcomes, so a run that tests little shows it
	for step := range steps {
		n := names[rng.IntN(len(names))]
		token := tokens[rng.IntN(len(tokens))]
		ttl := ttls[rng.IntN(len(ttls))]
		var op, ra, rb string
		switch k := rng.IntN(10); {
		case k < 4:
			op = "Acquire"
			req := lock.AcquireRequest{Name: n.name, Token: token, Limit: n.limit, TTL: ttl,
				Queue: rng.IntN(2) == 0, QueueTTL: 2 * time.Second}
			ga, errA := sa.Acquire(ctx, req)
			gb, errB := sb.Acquire(ctx, req)
			ra = grantOutcome(ga, errA, lastA, n.name, ca.Now())
			rb = grantOutcome(gb, errB, lastB, n.name, cb.Now())
		case k < 6:
			op = "Release"
			ra, rb = errOutcome(sa.Release(ctx, n.name, token)), errOutcome(sb.Release(ctx, n.name, token))
		case k < 7:
			op = "Refresh"
			ra, rb = errOutcome(sa.Refresh(ctx, n.name, token, ttl)), errOutcome(sb.Refresh(ctx, n.name, token, ttl))
		case k < 9:
			op = "TTL"
			da, errA := sa.TTL(ctx, n.name, token)
			db, errB := sb.TTL(ctx, n.name, token)
			ra, rb = fmt.Sprint(da, " ", errOutcome(errA)), fmt.Sprint(db, " ", errOutcome(errB))
		default:
			op = "Leave"
			ra, rb = errOutcome(sa.Leave(ctx, n.name, token)), errOutcome(sb.Leave(ctx, n.name, token))
		}
		if ra != rb {
			t.Fatalf("step %d (seed %d): %s(%q, %s) differ:\n  A: %s\n  B: %s", step, seed, op, n.name, token, ra, rb)
		}
		if op == "Acquire" && ra[0] == 'w' {
			seen["Acquire: waits"]++
		} else {
			seen[op+": "+ra]++
		}
		d := []time.Duration{0, time.Microsecond, 3 * time.Millisecond, 100 * time.Millisecond, 400 * time.Millisecond, time.Second}[rng.IntN(6)]
		ca.Advance(d)
		cb.Advance(d)
	}
	for _, o := range []string{"Acquire: acquired, fence above the last and the clock: true", "Acquire: waits", "Release: ok", "Release: ErrNotHeld", "Refresh: ok", "Leave: ok"} {
		if seen[o] == 0 {
			t.Errorf("seed %d: %d steps without one %q", seed, steps, o)
		}
	}
}

// grantOutcome describes a grant for comparison: acquired or not, the wait,
// and whether the fence keeps the contract (then last is updated).
func grantOutcome(g lock.Grant, err error, last map[string]uint64, name string, now time.Time) string {
	if err != nil {
		return errOutcome(err)
	}
	if !g.Acquired {
		return fmt.Sprintf("waits %v (fence %d)", g.Wait, g.Fence)
	}
	ok := g.Fence > last[name] && g.Fence >= uint64(now.UnixMicro())
	last[name] = g.Fence
	return fmt.Sprintf("acquired, fence above the last and the clock: %v", ok)
}

// errOutcome names an error by the sentinel it is.
func errOutcome(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, lock.ErrNotHeld):
		return "ErrNotHeld"
	default:
		return "error: " + err.Error()
	}
}
