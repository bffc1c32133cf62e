package ratelimit_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/internal/testkit/storetest"
	"github.com/hourglass-io/hourglass/memstore"
	"github.com/hourglass-io/hourglass/ratelimit"
)

func newLimiter(t *testing.T, opts *ratelimit.Options) (*ratelimit.Limiter, ratelimit.Store) {
	t.Helper()
	s, err := memstore.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	l, err := ratelimit.New(s.RateLimits(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return l, s.RateLimits()
}

// newClockLimiter is a Limiter on clk over a store on clk.
func newClockLimiter(t *testing.T, clk *storetest.Clock) *ratelimit.Limiter {
	t.Helper()
	s, err := memstore.New(&memstore.Options{Clock: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	l, err := ratelimit.New(s.RateLimits(), &ratelimit.Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestLimitConstructors(t *testing.T) {
	for _, c := range []struct {
		l        ratelimit.Limit
		interval time.Duration
		burst    int
		s        string
	}{
		{ratelimit.PerSecond(100), 10 * time.Millisecond, 100, "100/1s burst 100 gcra"},
		{ratelimit.PerMinute(3), 20 * time.Second, 3, "3/1m0s burst 3 gcra"},
		{ratelimit.PerHour(7), 514285715 * time.Microsecond, 7, "7/1h0m0s burst 7 gcra"},
		{ratelimit.PerDay(1), 24 * time.Hour, 1, "1/24h0m0s burst 1 gcra"},
		{ratelimit.Every(30 * time.Minute), 30 * time.Minute, 1, "1/30m0s burst 1 gcra"},
		{ratelimit.Funnel(10, 10*time.Second, 3), time.Second, 10, "10/10s burst 10 quota 3 gcra"},
		{ratelimit.Limit{Events: 3, Per: time.Second}, 333334 * time.Microsecond, 3, "3/1s burst 3 gcra"},
		{ratelimit.PerMinute(5).WithAlgorithm(ratelimit.SlidingLog), 12 * time.Second, 5, "5/1m0s sliding-log"},
	} {
		if err := c.l.Validate(); err != nil {
			t.Errorf("%v: %v", c.l, err)
		}
		if got := c.l.Interval(); got != c.interval {
			t.Errorf("%v: interval %v, want %v", c.l, got, c.interval)
		}
		if got := c.l.BurstOrDefault(); got != c.burst {
			t.Errorf("%v: burst %d, want %d", c.l, got, c.burst)
		}
		if got := c.l.String(); got != c.s {
			t.Errorf("String %q, want %q", got, c.s)
		}
	}
	for _, a := range []ratelimit.Algorithm{ratelimit.GCRA, ratelimit.SlidingLog, ratelimit.SlidingWindow} {
		if b, err := ratelimit.ParseAlgorithm(a.String()); err != nil || b != a {
			t.Errorf("ParseAlgorithm(%q) = %v, %v", a, b, err)
		}
	}
	if _, err := ratelimit.ParseAlgorithm("token-bucket"); !errors.Is(err, ratelimit.ErrInvalidLimit) {
		t.Errorf("ParseAlgorithm: %v, want ErrInvalidLimit", err)
	}
	if s := ratelimit.Algorithm(7).String(); s != "Algorithm(7)" {
		t.Errorf("String of an unknown algorithm: %q", s)
	}
}

func TestNewRefusesBadOptions(t *testing.T) {
	s, err := memstore.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for name, o := range map[string]*ratelimit.Options{
		"mode":          {Mode: 5},
		"failure":       {Failure: 9},
		"local missing": {Failure: ratelimit.FailLocal},
		"negative log":  {MaxLogEvents: -1},
	} {
		if l, err := ratelimit.New(s.RateLimits(), o); !errors.Is(err, ratelimit.ErrInvalidOption) || l != nil {
			t.Errorf("%s: New = %v, %v; want ErrInvalidOption", name, l, err)
		}
	}
	if _, err := ratelimit.New(nil, nil); !errors.Is(err, ratelimit.ErrInvalidOption) {
		t.Errorf("New with a nil Store: %v, want ErrInvalidOption", err)
	}
}

// TestWaitDeadline: a slot beyond the context's deadline is refused at
// once, and charges nothing.
func TestWaitDeadline(t *testing.T) {
	l, _ := newLimiter(t, nil)
	lim := ratelimit.Every(time.Hour)
	ctx := context.Background()
	if err := l.Wait(ctx, "k", lim); err != nil {
		t.Fatal(err)
	}
	dctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	start := time.Now()
	if err := l.Wait(dctx, "k", lim); !errors.Is(err, ratelimit.ErrWaitTooLong) {
		t.Fatalf("Wait: %v, want ErrWaitTooLong", err)
	}
	if time.Since(start) > 30*time.Second {
		t.Fatal("Wait did not refuse at once")
	}
	r, err := l.Reserve(ctx, "k", -1, lim)
	if err != nil || r.Delay() > time.Hour || r.Delay() < 59*time.Minute {
		t.Fatalf("the refused Wait charged something: next delay %v, %v", r.Delay(), err)
	}
}

// TestWaitCancel: a Wait whose context ends gives its slot back.
func TestWaitCancel(t *testing.T) {
	clk := storetest.NewClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	l := newClockLimiter(t, clk)
	lim := ratelimit.Every(time.Hour)
	ctx := context.Background()
	if err := l.Wait(ctx, "k", lim); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- l.Wait(cctx, "k", lim) }()
	// The waiter sleeps on the clock once it has reserved its slot: the
	// next slot is then two hours away.
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	if err := clk.WaitArmed(wctx, 1); err != nil {
		t.Fatalf("the waiter never waited on the clock: %v", err)
	}
	if r, err := l.Reserve(ctx, "k", 0, lim); err != nil || r.Delay() != 2*time.Hour {
		t.Fatalf("with the waiter's slot reserved, the next is %v away (%v), want 2h", r.Delay(), err)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait: %v, want context.Canceled", err)
	}
	r, err := l.Reserve(ctx, "k", -1, lim)
	if err != nil || r.Delay() != time.Hour {
		t.Fatalf("after the cancelled Wait the next slot is %v away (%v), want 1h", r.Delay(), err)
	}
}

// TestWaitServes: Wait returns once the slot comes on the Limiter's clock,
// not before.
func TestWaitServes(t *testing.T) {
	clk := storetest.NewClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	l := newClockLimiter(t, clk)
	const every = 20 * time.Millisecond
	lim := ratelimit.Every(every)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	served := make(chan error, 3)
	go func() {
		for range 3 {
			err := l.Wait(ctx, "k", lim)
			served <- err
			if err != nil {
				return
			}
		}
	}()
	if err := <-served; err != nil { // the first slot is now
		t.Fatal(err)
	}
	for i := 1; i < 3; i++ {
		if err := clk.WaitArmed(ctx, 1); err != nil {
			t.Fatalf("wait %d did not wait on the clock: %v", i, err)
		}
		select {
		case err := <-served:
			t.Fatalf("wait %d returned (%v) before its slot", i, err)
		default:
		}
		clk.Advance(every)
		if err := <-served; err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Wait(ctx, "", lim); !errors.Is(err, ratelimit.ErrInvalidKey) {
		t.Fatalf("Wait with an empty key: %v", err)
	}
	cancel()
	if err := l.Wait(ctx, "k", lim); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait on an ended context: %v", err)
	}
}

// TestAllowEach: many keys in one call, each decided on its own.
func TestAllowEach(t *testing.T) {
	l, _ := newLimiter(t, nil)
	ctx := context.Background()
	lim := ratelimit.Every(time.Minute)
	res, err := l.AllowEach(ctx, []string{"a", "b", "a"}, 1, lim)
	if err != nil {
		t.Fatal(err)
	}
	if !res[0].Allowed || !res[1].Allowed || res[2].Allowed {
		t.Fatalf("AllowEach: %+v", res)
	}
	if _, err := l.AllowEach(ctx, []string{"a", ""}, 1, lim); !errors.Is(err, ratelimit.ErrInvalidKey) {
		t.Fatalf("AllowEach with an empty key: %v", err)
	}
	if _, err := l.AllowEach(ctx, []string{"a"}, 1, lim.WithAlgorithm(ratelimit.SlidingWindow)); !errors.Is(err, ratelimit.ErrUnsupported) {
		t.Fatalf("AllowEach with a window: %v", err)
	}
}

// TestCancelAnyOrder: reservations cancelled in any order give back as
// much as if they had been cancelled latest first, once every one that
// built on them is cancelled too; one still held keeps what it built on.
func TestCancelAnyOrder(t *testing.T) {
	l, _ := newLimiter(t, nil)
	lim := ratelimit.Every(time.Hour)
	ctx := context.Background()
	if res, err := l.Allow(ctx, "k", lim); err != nil || !res.Allowed {
		t.Fatalf("Allow: %+v %v", res, err)
	}
	rs := make([]*ratelimit.Reservation, 5) // slots 1 h to 5 h away
	for i := range rs {
		r, err := l.Reserve(ctx, "k", -1, lim)
		if err != nil || !r.OK() {
			t.Fatalf("Reserve %d: %v", i, err)
		}
		rs[i] = r
	}
	// next reports how many hours away the next slot is, and gives it back.
	next := func() int {
		t.Helper()
		r, err := l.Reserve(ctx, "k", -1, lim)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Cancel(ctx); err != nil {
			t.Fatal(err)
		}
		return int((r.Delay() + 30*time.Minute) / time.Hour)
	}
	cancel := func(i int) {
		t.Helper()
		if err := rs[i].Cancel(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// The earliest first, the middle one still held: nothing comes back
	// while a later reservation builds on them.
	cancel(0)
	cancel(1)
	if h := next(); h != 6 {
		t.Fatalf("after cancelling the first two, the next slot is %d h away, want 6", h)
	}
	cancel(4)
	cancel(3)
	if h := next(); h != 4 {
		t.Fatalf("with the third still held, the next slot is %d h away, want 4 (after its slot)", h)
	}
	cancel(2)
	if h := next(); h != 1 {
		t.Fatalf("with all five cancelled, the next slot is %d h away, want 1 (as before them)", h)
	}
}

// down is a store whose every GCRA decision fails.
type down struct {
	ratelimit.Store
	err error
}

func (d down) GCRA(context.Context, string, int, []ratelimit.Limit, ratelimit.Op, time.Duration, time.Time) (ratelimit.Decision, error) {
	return ratelimit.Decision{}, d.err
}

// Under FailLocal, when the local store fails too, every call fails the
// same way: one error wrapping ErrStore and both failures, "<store's>;
// local: <local's>", after OnStoreError heard of the store's.
func TestFailLocalBothFail(t *testing.T) {
	ctx := context.Background()
	remote, local := errors.New("remote down"), errors.New("local down")
	var heard []error
	l, err := ratelimit.New(down{err: remote}, &ratelimit.Options{
		Failure: ratelimit.FailLocal, Local: down{err: local},
		OnStoreError: func(err error) { heard = append(heard, err) },
	})
	if err != nil {
		t.Fatal(err)
	}
	lim := ratelimit.PerMinute(2)
	_, errAllow := l.Allow(ctx, "k", lim)
	_, errEach := l.AllowEach(ctx, []string{"k"}, 1, lim)
	_, errRes := l.Reserve(ctx, "k", time.Minute, lim)
	want := "ratelimit: store failed: remote down; local: local down"
	for name, err := range map[string]error{"Allow": errAllow, "AllowEach": errEach, "Reserve": errRes} {
		if err == nil || err.Error() != want || !errors.Is(err, ratelimit.ErrStore) || !errors.Is(err, remote) || !errors.Is(err, local) {
			t.Errorf("%s: %v; want %q wrapping ErrStore and both failures", name, err, want)
		}
	}
	if len(heard) != 3 {
		t.Errorf("OnStoreError heard %d errors, want 3", len(heard))
	}
}
