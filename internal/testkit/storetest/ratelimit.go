package storetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/ratelimit"
)

// NewRateLimitStore returns a fresh ratelimit.Store (its keys shared with
// no other store) whose clock is clock.Now. It registers its own cleanup
// with t.
type NewRateLimitStore func(t *testing.T, clock *Clock) ratelimit.Store

// RateLimit runs the conformance suite for the ratelimit.Store contract
// against stores made by newStore, one fresh store per subtest, through
// ratelimit.Limiter as users drive it. Every case moves the injected clock
// itself, so admitted counts, delays and retry times are checked exactly,
// to the microsecond.
func RateLimit(t *testing.T, newStore NewRateLimitStore) {
	cases := []struct {
		name string
		run  func(t *testing.T, r *rlEnv)
	}{
		{"Steps", testRLSteps},
		{"EveryThirtyMinutes", testRLEveryThirtyMinutes},
		{"Burst", testRLBurst},
		{"UnevenInterval", testRLUnevenInterval},
		{"Funnel", testRLFunnel},
		{"Reserve", testRLReserve},
		{"Cancel", testRLCancel},
		{"CancelBuiltOn", testRLCancelBuiltOn},
		{"AllowAll", testRLAllowAll},
		{"RollbackBound", testRLRollbackBound},
		{"ReserveSeveralLimits", testRLReserveSeveral},
		{"SeveralLimits", testRLSeveralLimits},
		{"CostOverBurst", testRLCostOverBurst},
		{"BadInput", testRLBadInput},
		{"SlidingLog", testRLSlidingLog},
		{"SlidingLogSeveral", testRLSlidingLogSeveral},
		{"SlidingWindow", testRLSlidingWindow},
		{"KeysApart", testRLKeysApart},
		{"Modes", testRLModes},
		{"Partitions", testRLPartitions},
		{"Concurrent", testRLConcurrent},
		{"Batch", testRLBatch},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			clock := NewClock(epoch)
			s, rec := recordRL(newStore(t, clock))
			c.run(t, &rlEnv{t: t, ctx: context.Background(), clock: clock, store: s, l: newLimiter(t, s, nil)})
			rec.checkInvariants(t)
		})
	}
}

type rlEnv struct {
	t     *testing.T
	ctx   context.Context
	clock *Clock
	store ratelimit.Store
	l     *ratelimit.Limiter
}

// allow calls AllowN and fails the test on an error.
func (r *rlEnv) allow(key string, n int, limits ...ratelimit.Limit) ratelimit.Result {
	r.t.Helper()
	res, err := r.l.AllowN(r.ctx, key, n, limits...)
	if err != nil {
		r.t.Fatalf("AllowN(%q, %d, %v): %v", key, n, limits, err)
	}
	return res
}

// count calls Allow up to max times and returns how many were allowed.
func (r *rlEnv) count(max int, key string, limits ...ratelimit.Limit) int {
	r.t.Helper()
	got := 0
	for range max {
		if r.allow(key, 1, limits...).Allowed {
			got++
		}
	}
	return got
}

func (r *rlEnv) want(step string, got, want any) {
	r.t.Helper()
	if got != want {
		r.t.Errorf("%s: got %v, want %v", step, got, want)
	}
}

func (r *rlEnv) reserve(key string, n int, maxWait time.Duration, limits ...ratelimit.Limit) *ratelimit.Reservation {
	r.t.Helper()
	res, err := r.l.ReserveN(r.ctx, key, n, maxWait, limits...)
	if err != nil {
		r.t.Fatalf("ReserveN(%q, %d, %v): %v", key, n, maxWait, err)
	}
	return res
}

// testRLSteps: 10 per second, burst 10, over a sequence of steps.
func testRLSteps(t *testing.T, r *rlEnv) {
	lim := ratelimit.PerSecond(10)
	res := r.allow("k", 1, lim)
	r.want("first", res, ratelimit.Result{Allowed: true, Remaining: 9, ResetAfter: 100 * time.Millisecond})
	r.want("burst", r.count(20, "k", lim), 9)
	res = r.allow("k", 1, lim)
	r.want("denied", res, ratelimit.Result{Allowed: false, Remaining: 0, RetryAfter: 100 * time.Millisecond, ResetAfter: time.Second})
	r.clock.Advance(99 * time.Millisecond)
	res = r.allow("k", 1, lim)
	r.want("1ms early", res, ratelimit.Result{Allowed: false, RetryAfter: time.Millisecond, ResetAfter: 901 * time.Millisecond})
	r.clock.Advance(time.Millisecond)
	r.want("after 100ms", r.count(5, "k", lim), 1)
	r.clock.Advance(350 * time.Millisecond)
	r.want("after 350ms more", r.count(5, "k", lim), 3)
	r.clock.Advance(10 * time.Second)
	r.want("idle again", r.count(20, "k", lim), 10)
	// A steady 10 per second for 3 seconds admits exactly 30.
	got := 0
	for range 300 {
		r.clock.Advance(10 * time.Millisecond)
		got += r.count(1, "k", lim)
	}
	r.want("steady 3s", got, 30)
	// AllowN takes several at once, or none.
	r.clock.Advance(10 * time.Second)
	r.want("AllowN 7", r.allow("k", 7, lim).Allowed, true)
	res = r.allow("k", 4, lim)
	r.want("AllowN 4 of 3 left", res, ratelimit.Result{Allowed: false, Remaining: 3, RetryAfter: 100 * time.Millisecond, ResetAfter: 700 * time.Millisecond})
	r.want("AllowN 3", r.allow("k", 3, lim).Allowed, true)
}

// testRLEveryThirtyMinutes: one per 30 minutes is exact.
func testRLEveryThirtyMinutes(t *testing.T, r *rlEnv) {
	sms := ratelimit.Every(30 * time.Minute)
	r.want("first", r.allow("+15550100", 1, sms), ratelimit.Result{Allowed: true, ResetAfter: 30 * time.Minute})
	r.want("second", r.allow("+15550100", 1, sms), ratelimit.Result{RetryAfter: 30 * time.Minute, ResetAfter: 30 * time.Minute})
	r.want("other number", r.allow("+15550101", 1, sms).Allowed, true)
	r.clock.Advance(30*time.Minute - time.Microsecond)
	r.want("1µs early", r.allow("+15550100", 1, sms), ratelimit.Result{RetryAfter: time.Microsecond, ResetAfter: time.Microsecond})
	r.clock.Advance(time.Microsecond)
	r.want("on time", r.count(3, "+15550100", sms), 1)
	// Over 24 hours of a call every minute: exactly 48.
	got := 0
	for range 24 * 60 {
		r.clock.Advance(time.Minute)
		got += r.count(1, "+15550100", sms)
	}
	r.want("a day", got, 48)
}

// testRLBurst: Burst is exactly how many pass at one instant.
func testRLBurst(t *testing.T, r *rlEnv) {
	lim := ratelimit.Limit{Events: 10, Per: time.Second, Burst: 3}
	r.want("at once", r.count(10, "k", lim), 3)
	r.want("retry", r.allow("k", 1, lim).RetryAfter, 100*time.Millisecond)
	r.clock.Advance(time.Hour)
	r.want("after an hour, still 3", r.count(10, "k", lim), 3)
	r.clock.Advance(200 * time.Millisecond)
	r.want("two intervals later", r.count(10, "k", lim), 2)
	// Burst zero means Events.
	r.want("default burst", r.count(20, "d", ratelimit.Limit{Events: 5, Per: time.Second}), 5)
}

// testRLUnevenInterval: 3 per second is an interval of 333,334 µs.
func testRLUnevenInterval(t *testing.T, r *rlEnv) {
	lim := ratelimit.Limit{Events: 3, Per: time.Second, Burst: 1}
	r.want("interval", lim.Interval(), 333334*time.Microsecond)
	r.want("first", r.count(2, "k", lim), 1)
	r.clock.Advance(333333 * time.Microsecond)
	r.want("1µs early", r.count(1, "k", lim), 0)
	r.clock.Advance(time.Microsecond)
	r.want("on time", r.count(1, "k", lim), 1)
}

// testRLFunnel: capacity 10 draining in 10 s, 3 per call.
func testRLFunnel(t *testing.T, r *rlEnv) {
	f := ratelimit.Funnel(10, 10*time.Second, 3)
	r.want("full funnel", r.count(10, "k", f), 3)
	res := r.allow("k", 1, f)
	r.want("retry", res, ratelimit.Result{RetryAfter: 2 * time.Second, ResetAfter: 9 * time.Second})
	r.clock.Advance(2 * time.Second)
	r.want("after 2s", r.count(10, "k", f), 1)
	r.clock.Advance(3 * time.Second)
	r.want("after 3s more", r.count(10, "k", f), 1)
	r.clock.Advance(10 * time.Second)
	res = r.allow("k", 1, f)
	r.want("drained", res, ratelimit.Result{Allowed: true, Remaining: 2, ResetAfter: 3 * time.Second})
	// A slow funnel refills by the microsecond, not the second.
	slow := ratelimit.Funnel(2, 2*time.Hour, 1)
	r.want("slow", r.count(5, "s", slow), 2)
	r.clock.Advance(time.Hour - time.Millisecond)
	r.want("slow early", r.count(1, "s", slow), 0)
	r.clock.Advance(time.Millisecond)
	r.want("slow after an hour", r.count(1, "s", slow), 1)
}

// testRLReserve: reservations claim future slots in order.
func testRLReserve(t *testing.T, r *rlEnv) {
	lim := ratelimit.Every(time.Second)
	for i := range 3 {
		res := r.reserve("k", 1, -1, lim)
		r.want("ok", res.OK(), true)
		r.want("delay", res.Delay(), time.Duration(i)*time.Second)
	}
	res := r.reserve("k", 1, 2999*time.Millisecond, lim)
	r.want("beyond max wait", res.OK(), false)
	r.want("needed", res.Delay(), 3*time.Second)
	res = r.reserve("k", 1, 3*time.Second, lim)
	r.want("within max wait", res.OK(), true)
	r.want("not charged before", res.Delay(), 3*time.Second)
	r.want("allow while reserved", r.allow("k", 1, lim).RetryAfter, 4*time.Second)
	r.clock.Advance(4 * time.Second)
	r.want("all slots used", r.count(3, "k", lim), 1)
	// Reserve on an idle key with a zero max wait is Allow.
	r.want("zero wait", r.reserve("z", 1, 0, lim).OK(), true)
	r.want("zero wait, none left", r.reserve("z", 1, 0, lim).OK(), false)
	// Window algorithms do not reserve.
	_, err := r.l.Reserve(r.ctx, "k", time.Second, lim.WithAlgorithm(ratelimit.SlidingLog))
	if !errors.Is(err, ratelimit.ErrUnsupported) {
		t.Errorf("Reserve with a sliding log: %v, want ErrUnsupported", err)
	}
	if err := r.l.Wait(r.ctx, "k", lim.WithAlgorithm(ratelimit.SlidingWindow)); !errors.Is(err, ratelimit.ErrUnsupported) {
		t.Errorf("Wait with a sliding window: %v, want ErrUnsupported", err)
	}
}

// testRLCancel: Cancel gives back what no later reservation uses.
func testRLCancel(t *testing.T, r *rlEnv) {
	lim := ratelimit.Every(time.Second)
	r1 := r.reserve("k", 1, -1, lim) // now
	r2 := r.reserve("k", 1, -1, lim) // +1s
	r3 := r.reserve("k", 1, -1, lim) // +2s
	r.want("r3", r3.Delay(), 2*time.Second)
	if err := r3.Cancel(r.ctx); err != nil {
		t.Fatal(err)
	}
	r.want("after cancelling the last", r.reserve("k", 1, -1, lim).Delay(), 2*time.Second)
	// Cancelling r2 (+1s) while the reservation at +2s builds on it gives
	// nothing back (as golang.org/x/time/rate): the next caller gets +3s;
	// +2s would put two events in one interval with a burst of 1.
	if err := r2.Cancel(r.ctx); err != nil {
		t.Fatal(err)
	}
	if err := r2.Cancel(r.ctx); err != nil { // twice gives back once
		t.Fatal(err)
	}
	r.want("after cancelling a middle one", r.reserve("k", 1, -1, lim).Delay(), 3*time.Second)
	// A reservation whose time has come gives nothing back.
	r.clock.Advance(10 * time.Second)
	r4 := r.reserve("k", 1, -1, lim)
	r.want("r4", r4.Delay(), time.Duration(0))
	r.clock.Advance(time.Millisecond)
	if err := r4.Cancel(r.ctx); err != nil {
		t.Fatal(err)
	}
	r.want("r4 used", r.allow("k", 1, lim).RetryAfter, 999*time.Millisecond)
	// Cancel on a refused reservation does nothing.
	r5 := r.reserve("k", 1, time.Millisecond, lim)
	r.want("r5", r5.OK(), false)
	if err := r5.Cancel(r.ctx); err != nil {
		t.Fatal(err)
	}
	r.want("still used", r.allow("k", 1, lim).RetryAfter, 999*time.Millisecond)
	_ = r1
}

// testRLCancelBuiltOn: 10/s with a burst of 1, all at one instant:
// reserve (0), A (100 ms), B (200 ms), cancel A, reserve C: C comes at
// 300 ms, after B, not at B's instant. Then random reservations and
// cancels at random instants never admit more than the burst plus the
// rate over any span.
func testRLCancelBuiltOn(t *testing.T, r *rlEnv) {
	lim := ratelimit.Every(100 * time.Millisecond).WithBurst(1)
	r.want("first", r.reserve("k", 1, -1, lim).Delay(), time.Duration(0))
	a := r.reserve("k", 1, -1, lim)
	r.want("A", a.Delay(), 100*time.Millisecond)
	r.want("B", r.reserve("k", 1, -1, lim).Delay(), 200*time.Millisecond)
	if err := a.Cancel(r.ctx); err != nil {
		t.Fatal(err)
	}
	r.want("C", r.reserve("k", 1, -1, lim).Delay(), 300*time.Millisecond)

	for _, burst := range []int{1, 3} {
		lim := ratelimit.Every(100 * time.Millisecond).WithBurst(burst)
		key := fmt.Sprint("rand", burst)
		rng := rand.New(rand.NewPCG(uint64(burst), 7))
		type held struct {
			res *ratelimit.Reservation
			act time.Time // on the store's clock
			out bool      // cancelled before its time
		}
		var all []*held
		for range 300 {
			switch {
			case rng.IntN(3) == 0 && len(all) > 0:
				h := all[rng.IntN(len(all))]
				if !h.out && r.clock.Now().Before(h.act) {
					if err := h.res.Cancel(r.ctx); err != nil {
						t.Fatal(err)
					}
					h.out = true
				}
			case rng.IntN(4) == 0:
				r.clock.Advance(time.Duration(rng.IntN(150)) * time.Millisecond)
			default:
				res := r.reserve(key, 1, -1, lim)
				all = append(all, &held{res: res, act: r.clock.Now().Add(res.Delay())})
			}
		}
		var acts []time.Time
		for _, h := range all {
			if !h.out {
				acts = append(acts, h.act)
			}
		}
		slices.SortFunc(acts, func(x, y time.Time) int { return x.Compare(y) })
		for i := range acts {
			for j := i; j < len(acts); j++ {
				span := acts[j].Sub(acts[i])
				if allowed := burst + int(span/(100*time.Millisecond)); j-i+1 > allowed {
					t.Fatalf("burst %d: %d events admitted in %v, at most %d allowed", burst, j-i+1, span, allowed)
				}
			}
		}
	}
}

// testRLAllowAll: several keys decided together are charged all or none;
// each says whether it had room on its own.
func testRLAllowAll(t *testing.T, r *rlEnv) {
	a := ratelimit.Every(100 * time.Millisecond).WithBurst(2)
	b := ratelimit.Every(100 * time.Millisecond).WithBurst(1)
	reqs := []ratelimit.Request{{Key: "A", N: 1, Limits: []ratelimit.Limit{a}}, {Key: "B", N: 1, Limits: []ratelimit.Limit{b}}}
	ok, res, err := r.l.AllowAll(r.ctx, reqs)
	if err != nil || !ok || !res[0].Allowed || !res[1].Allowed {
		t.Fatalf("first AllowAll: %v %+v %v, want both passed", ok, res, err)
	}
	ok, res, err = r.l.AllowAll(r.ctx, reqs)
	if err != nil || ok {
		t.Fatalf("second AllowAll: %v %v, want refused", ok, err)
	}
	r.want("A had room", res[0].Allowed, true)
	r.want("B had none", res[1].Allowed, false)
	r.want("A's remaining after the roll back", res[0].Remaining, 1)
	r.want("B's retry", res[1].RetryAfter, 100*time.Millisecond)
	r.want("A admits what the roll back gave back", r.count(5, "A", a), 1)
	r.want("B full", r.count(5, "B", b), 0)

	// Bad input anywhere charges nothing.
	bad := []ratelimit.Request{{Key: "C", N: 1, Limits: []ratelimit.Limit{a}}, {Key: "D", N: 1, Limits: []ratelimit.Limit{ratelimit.PerSecond(5).WithAlgorithm(ratelimit.SlidingLog)}}}
	if _, _, err := r.l.AllowAll(r.ctx, bad); !errors.Is(err, ratelimit.ErrUnsupported) {
		t.Fatalf("AllowAll with a sliding log: %v, want ErrUnsupported", err)
	}
	bad[1] = ratelimit.Request{Key: "D", N: 0, Limits: []ratelimit.Limit{a}}
	if _, _, err := r.l.AllowAll(r.ctx, bad); !errors.Is(err, ratelimit.ErrInvalidCost) {
		t.Fatalf("AllowAll with a cost of 0: %v, want ErrInvalidCost", err)
	}
	r.want("C untouched", r.count(5, "C", a), 2)
}

// testRLRollbackBound: admissions at random instants, some rolled back
// later (after others were admitted): the admissions left never exceed the
// burst plus the rate over any span, and a roll back with no time passed
// and nothing admitted since gives everything back.
func testRLRollbackBound(t *testing.T, r *rlEnv) {
	lim := ratelimit.Every(100 * time.Millisecond).WithBurst(1)
	lims := []ratelimit.Limit{lim}
	d, err := r.store.GCRA(r.ctx, "whole", 1, lims, ratelimit.OpAllow, 0, time.Time{})
	if err != nil || !d.OK {
		t.Fatalf("allow: %+v %v", d, err)
	}
	if d, err := r.store.GCRA(r.ctx, "whole", 1, lims, ratelimit.OpRollback, 0, d.Now); err != nil || !d.OK || d.Remaining != 1 {
		t.Fatalf("roll back at once: %+v %v, want OK with 1 remaining", d, err)
	}

	for _, burst := range []int{1, 3} {
		lim := ratelimit.Every(100 * time.Millisecond).WithBurst(burst)
		lims := []ratelimit.Limit{lim}
		key := fmt.Sprint("rand", burst)
		rng := rand.New(rand.NewPCG(uint64(burst), 11))
		type admitted struct {
			at  time.Time
			out bool
		}
		var all []*admitted
		for range 400 {
			switch {
			case rng.IntN(10) == 0 && len(all) > 0:
				h := all[len(all)-1-rng.IntN(min(len(all), 3))]
				if !h.out {
					if _, err := r.store.GCRA(r.ctx, key, 1, lims, ratelimit.OpRollback, 0, h.at); err != nil {
						t.Fatal(err)
					}
					h.out = true
				}
			case rng.IntN(3) == 0:
				r.clock.Advance(time.Duration(rng.IntN(120)) * time.Millisecond)
			default:
				d, err := r.store.GCRA(r.ctx, key, 1, lims, ratelimit.OpAllow, 0, time.Time{})
				if err != nil {
					t.Fatal(err)
				}
				if d.OK {
					all = append(all, &admitted{at: d.Now})
				}
			}
		}
		var ats []time.Time
		for _, h := range all {
			if !h.out {
				ats = append(ats, h.at)
			}
		}
		for i := range ats {
			for j := i; j < len(ats); j++ {
				span := ats[j].Sub(ats[i])
				if allowed := burst + int(span/(100*time.Millisecond)); j-i+1 > allowed {
					t.Fatalf("burst %d: %d admissions left in %v, at most %d allowed", burst, j-i+1, span, allowed)
				}
			}
		}
		if len(ats) < 20 {
			t.Fatalf("burst %d: only %d admissions left; the sequence tests little", burst, len(ats))
		}
	}
}

// testRLReserveSeveral: a reservation over several limits waits for the
// strictest and charges every one.
func testRLReserveSeveral(t *testing.T, r *rlEnv) {
	perSec := ratelimit.Every(100 * time.Millisecond).WithBurst(1)
	perMin := ratelimit.Limit{Events: 2, Per: time.Minute, Burst: 2}
	r.want("1", r.reserve("k", 1, -1, perSec, perMin).Delay(), time.Duration(0))
	r.want("2", r.reserve("k", 1, -1, perSec, perMin).Delay(), 100*time.Millisecond)
	r.want("3", r.reserve("k", 1, -1, perSec, perMin).Delay(), 30*time.Second)
	r.want("per second alone", r.reserve("k", 1, -1, perSec).Delay(), 30*time.Second+100*time.Millisecond)
}

// testRLSeveralLimits: every limit of a call is checked and charged
// together, or none is.
func testRLSeveralLimits(t *testing.T, r *rlEnv) {
	perSec := ratelimit.Every(time.Second)
	perHour := ratelimit.PerHour(3)
	for range 3 {
		r.want("allowed", r.allow("k", 1, perSec, perHour).Allowed, true)
		r.clock.Advance(time.Second)
	}
	res := r.allow("k", 1, perSec, perHour)
	r.want("per hour", res, ratelimit.Result{RetryAfter: 20*time.Minute - 3*time.Second, ResetAfter: time.Hour - 3*time.Second})
	// The refusal charged neither limit.
	r.want("per second not charged", r.allow("k", 1, perSec).Allowed, true)
	r.clock.Advance(20*time.Minute - 3*time.Second)
	r.want("after 20 min", r.count(5, "k", perSec, perHour), 1)
}

// testRLCostOverBurst: a cost no burst can hold is impossible, not a retry.
func testRLCostOverBurst(t *testing.T, r *rlEnv) {
	lim := ratelimit.Limit{Events: 10, Per: time.Second, Burst: 3}
	for _, c := range []struct {
		name string
		err  error
	}{
		{"AllowN", func() error { _, err := r.l.AllowN(r.ctx, "k", 4, lim); return err }()},
		{"ReserveN", func() error { _, err := r.l.ReserveN(r.ctx, "k", 4, -1, lim); return err }()},
		{"WaitN", r.l.WaitN(r.ctx, "k", 4, lim)},
		{"Funnel", func() error { _, err := r.l.Allow(r.ctx, "k", ratelimit.Funnel(10, time.Second, 11)); return err }()},
		{"SlidingLog", func() error {
			_, err := r.l.AllowN(r.ctx, "k", 11, ratelimit.Limit{Events: 10, Per: time.Second, Algorithm: ratelimit.SlidingLog})
			return err
		}()},
		{"SlidingWindow", func() error {
			_, err := r.l.AllowN(r.ctx, "k", 11, ratelimit.Limit{Events: 10, Per: time.Second, Algorithm: ratelimit.SlidingWindow})
			return err
		}()},
	} {
		if !errors.Is(c.err, ratelimit.ErrImpossible) {
			t.Errorf("%s: %v, want ErrImpossible", c.name, c.err)
		}
	}
	r.want("nothing charged", r.count(5, "k", lim), 3)
}

// testRLBadInput: bad input is refused with a typed error and charges
// nothing.
func testRLBadInput(t *testing.T, r *rlEnv) {
	good := ratelimit.Every(time.Second)
	for _, c := range []struct {
		name   string
		key    string
		n      int
		limits []ratelimit.Limit
		want   error
	}{
		{"empty key", "", 1, []ratelimit.Limit{good}, ratelimit.ErrInvalidKey},
		{"n 0", "k", 0, []ratelimit.Limit{good}, ratelimit.ErrInvalidCost},
		{"n -1", "k", -1, []ratelimit.Limit{good}, ratelimit.ErrInvalidCost},
		{"no limit", "k", 1, nil, ratelimit.ErrInvalidLimit},
		{"zero limit", "k", 1, []ratelimit.Limit{{}}, ratelimit.ErrInvalidLimit},
		{"no events", "k", 1, []ratelimit.Limit{{Per: time.Second}}, ratelimit.ErrInvalidLimit},
		{"no period", "k", 1, []ratelimit.Limit{{Events: 1}}, ratelimit.ErrInvalidLimit},
		{"negative burst", "k", 1, []ratelimit.Limit{{Events: 1, Per: time.Second, Burst: -1}}, ratelimit.ErrInvalidLimit},
		{"negative quota", "k", 1, []ratelimit.Limit{{Events: 1, Per: time.Second, Quota: -1}}, ratelimit.ErrInvalidLimit},
		{"unknown algorithm", "k", 1, []ratelimit.Limit{{Events: 1, Per: time.Second, Algorithm: 9}}, ratelimit.ErrInvalidLimit},
		{"nanoseconds", "k", 1, []ratelimit.Limit{{Events: 1, Per: 1500 * time.Nanosecond}}, ratelimit.ErrInvalidLimit},
		{"faster than 1/µs", "k", 1, []ratelimit.Limit{{Events: 2000, Per: time.Millisecond}}, ratelimit.ErrInvalidLimit},
		{"period too long", "k", 1, []ratelimit.Limit{{Events: 1, Per: 100 * 365 * 24 * time.Hour}}, ratelimit.ErrInvalidLimit},
		{"mixed algorithms", "k", 1, []ratelimit.Limit{good, good.WithAlgorithm(ratelimit.SlidingLog)}, ratelimit.ErrInvalidLimit},
		{"log too long", "k", 1, []ratelimit.Limit{{Events: 20000, Per: time.Hour, Algorithm: ratelimit.SlidingLog}}, ratelimit.ErrInvalidLimit},
	} {
		_, err := r.l.AllowN(r.ctx, c.key, c.n, c.limits...)
		if !errors.Is(err, c.want) {
			t.Errorf("AllowN %s: %v, want %v", c.name, err, c.want)
		}
		_, err = r.l.ReserveN(r.ctx, c.key, c.n, time.Second, c.limits...)
		if !errors.Is(err, c.want) {
			t.Errorf("ReserveN %s: %v, want %v", c.name, err, c.want)
		}
	}
	r.want("nothing charged", r.allow("k", 1, good), ratelimit.Result{Allowed: true, ResetAfter: time.Second})
}

// testRLSlidingLog: at most Events in any window of Per, exactly.
func testRLSlidingLog(t *testing.T, r *rlEnv) {
	lim := ratelimit.Limit{Events: 3, Per: 10 * time.Second, Algorithm: ratelimit.SlidingLog}
	r.want("t0", r.allow("k", 1, lim), ratelimit.Result{Allowed: true, Remaining: 2, ResetAfter: 10 * time.Second})
	r.clock.Advance(time.Second)
	r.want("t1", r.count(1, "k", lim), 1)
	r.clock.Advance(time.Second)
	r.want("t2", r.count(5, "k", lim), 1)
	r.clock.Advance(time.Second)
	r.want("t3", r.allow("k", 1, lim), ratelimit.Result{RetryAfter: 7 * time.Second, ResetAfter: 9 * time.Second})
	r.clock.Advance(7*time.Second - time.Microsecond)
	r.want("1µs early", r.count(1, "k", lim), 0)
	r.clock.Advance(time.Microsecond)
	r.want("t10", r.count(5, "k", lim), 1)
	r.want("AllowN 2 needs two gone", r.allow("k", 2, lim).RetryAfter, 2*time.Second)
	r.clock.Advance(2 * time.Second)
	r.want("AllowN 2", r.allow("k", 2, lim).Allowed, true)
	// Any 10 s window of calls every 250 ms holds at most 3.
	r.clock.Advance(time.Minute)
	var times []time.Time
	for range 400 {
		r.clock.Advance(250 * time.Millisecond)
		if r.allow("w", 1, lim).Allowed {
			times = append(times, r.clock.Now())
		}
	}
	for i := 3; i < len(times); i++ {
		if d := times[i].Sub(times[i-3]); d < 10*time.Second {
			t.Fatalf("4 admitted within %v", d)
		}
	}
	r.want("admitted in 100 s", len(times), 30)
}

// testRLSlidingLogSeveral: several logs on one key, all or nothing, with
// quotas.
func testRLSlidingLogSeveral(t *testing.T, r *rlEnv) {
	a := ratelimit.Limit{Events: 2, Per: time.Second, Algorithm: ratelimit.SlidingLog}
	b := ratelimit.Limit{Events: 5, Per: time.Minute, Algorithm: ratelimit.SlidingLog}
	got := 0
	for range 10 {
		got += r.count(5, "k", a, b)
		r.clock.Advance(time.Second)
	}
	r.want("five in the minute", got, 5)
	r.want("a alone", r.count(5, "k", a), 2)
	q := ratelimit.Limit{Events: 6, Per: time.Second, Quota: 2, Algorithm: ratelimit.SlidingLog}
	r.want("quota 2 of 6", r.count(5, "q", q), 3)
}

// testRLSlidingWindow: two counters, the last window weighted.
func testRLSlidingWindow(t *testing.T, r *rlEnv) {
	lim := ratelimit.Limit{Events: 10, Per: 10 * time.Second, Algorithm: ratelimit.SlidingWindow}
	// epoch lies 5 s into a 10 s window.
	r.want("first window", r.count(20, "k", lim), 10)
	res := r.allow("k", 1, lim)
	// The next window starts in 5 s; 10*(1-x) <= 9 from x = 0.1, 1 s in.
	r.want("denied", res.RetryAfter, 6*time.Second)
	r.want("denied, remaining", res.Remaining, 0)
	r.clock.Advance(6 * time.Second)
	r.want("1 s into the next", r.count(20, "k", lim), 1)
	r.clock.Advance(4 * time.Second) // half way: 10*0.5 + 1 = 6
	r.want("half way", r.count(20, "k", lim), 4)
	r.clock.Advance(30 * time.Second)
	r.want("idle", r.allow("k", 1, lim), ratelimit.Result{Allowed: true, Remaining: 9, ResetAfter: 15 * time.Second})
}

// testRLKeysApart: keys and limits do not share state.
func testRLKeysApart(t *testing.T, r *rlEnv) {
	lim := ratelimit.Every(time.Minute)
	for _, k := range []string{"a", "b", "{a}", "a}", "{", "}", "~x61", "a:b", "ключ", "s:a"} {
		r.want(k, r.count(3, k, lim), 1)
	}
	r.want("another limit on a", r.count(3, "a", ratelimit.Every(time.Hour)), 1)
	r.want("log on a", r.count(3, "a", lim.WithAlgorithm(ratelimit.SlidingLog)), 1)
	r.want("window on a", r.count(3, "a", lim.WithAlgorithm(ratelimit.SlidingWindow)), 1)
}

// testRLModes: Shared limiters share; PerInstance ones each get the limit.
func testRLModes(t *testing.T, r *rlEnv) {
	lim := ratelimit.PerMinute(2)
	a := newLimiter(t, r.store, &ratelimit.Options{Mode: ratelimit.PerInstance, Instance: "a"})
	b := newLimiter(t, r.store, &ratelimit.Options{Mode: ratelimit.PerInstance, Instance: "b"})
	s2 := newLimiter(t, r.store, nil)
	n := 0
	for _, l := range []*ratelimit.Limiter{a, b, r.l, s2} {
		for range 3 {
			if res, err := l.Allow(r.ctx, "k", lim); err != nil {
				t.Fatal(err)
			} else if res.Allowed {
				n++
			}
		}
	}
	r.want("a 2, b 2, shared 2", n, 6)
}

// testRLPartitions: a partitioned key never admits more than its limit.
func testRLPartitions(t *testing.T, r *rlEnv) {
	l := newLimiter(t, r.store, &ratelimit.Options{Partitions: func(string) int { return 4 }})
	lim := ratelimit.Limit{Events: 8, Per: time.Second, Burst: 8}
	n := 0
	for range 100 {
		res, err := l.Allow(r.ctx, "hot", lim)
		if err != nil {
			t.Fatal(err)
		}
		if res.Allowed {
			n++
		}
	}
	if n > 8 || n < 4 {
		t.Errorf("admitted %d at one instant, want 4 to 8", n)
	}
	// Each partition holds 2 per second: 8 per second in all.
	r.clock.Advance(10 * time.Second)
	n = 0
	for range 1000 {
		r.clock.Advance(time.Millisecond)
		res, err := l.Allow(r.ctx, "hot", lim)
		if err != nil {
			t.Fatal(err)
		}
		if res.Allowed {
			n++
		}
	}
	if n > 8+8 {
		t.Errorf("admitted %d in one second, want at most 16 (8 per second and a burst of 8)", n)
	}
	// A cost above a partition's burst is impossible.
	if _, err := l.AllowN(r.ctx, "hot", 3, lim); !errors.Is(err, ratelimit.ErrImpossible) {
		t.Errorf("AllowN 3 over partitions of burst 2: %v, want ErrImpossible", err)
	}
}

// testRLConcurrent: concurrent callers at one instant get exactly the burst.
func testRLConcurrent(t *testing.T, r *rlEnv) {
	lim := ratelimit.Limit{Events: 50, Per: time.Second, Burst: 50}
	var n atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 20 {
				res, err := r.l.Allow(r.ctx, "k", lim)
				if err != nil {
					t.Error(err)
					return
				}
				if res.Allowed {
					n.Add(1)
				}
			}
		})
	}
	wg.Wait()
	r.want("admitted", n.Load(), int64(50))
}

// newLimiter returns a Limiter over s with opts, failing the test when New
// refuses them.
func newLimiter(t *testing.T, s ratelimit.Store, opts *ratelimit.Options) *ratelimit.Limiter {
	t.Helper()
	l, err := ratelimit.New(s, opts)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// testRLBatch: a store that decides in batches (ratelimit.Batcher) gives
// each request of a batch the decision that the same GCRA calls, one by
// one in the batch's order, give on keys of their own.
func testRLBatch(t *testing.T, r *rlEnv) {
	b, ok := r.store.(ratelimit.Batcher)
	if !ok {
		return // decides one call at a time
	}
	lims := []ratelimit.Limit{ratelimit.PerSecond(2)}
	reqs := []ratelimit.GCRARequest{
		{Op: ratelimit.OpAllow, N: 1, Limits: lims},
		{Op: ratelimit.OpAllow, N: 2, Limits: lims},
		{Op: ratelimit.OpAllow, N: 1, Limits: lims},
		{Op: ratelimit.OpReserve, N: 1, Limits: lims, MaxWait: time.Second},
		{Op: ratelimit.OpAllow, N: 1, Limits: lims},
	}
	keys := []string{"ba", "bb", "ba", "ba", "bb"}
	for round := range 2 {
		got, err := b.GCRABatch(r.ctx, keys, reqs)
		if err != nil {
			t.Fatalf("GCRABatch: %v", err)
		}
		for i, q := range reqs {
			want, err := r.store.GCRA(r.ctx, "one-"+keys[i], q.N, q.Limits, q.Op, q.MaxWait, q.At)
			if err != nil {
				t.Fatalf("GCRA: %v", err)
			}
			r.want(fmt.Sprintf("round %d, request %d on %s", round, i, keys[i]), got[i], want)
		}
		r.clock.Advance(700 * time.Millisecond)
	}
}
