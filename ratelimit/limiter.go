package ratelimit

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hourglass-io/hourglass/internal/tracing"
	"github.com/hourglass-io/hourglass/internal/wait"
)

// Limiter decides, on a Store, whether events on a key may pass under the
// limits given with each call. Every decision is one atomic call to the
// store, so any number of Limiters in any number of processes sharing a
// store share its limits; the one state a Limiter keeps is the cancelled
// reservations whose slots a later reservation still built on (see
// Reservation.Cancel). It is safe for concurrent use.
type Limiter struct {
	store    Store
	mode     Mode
	instance string
	failure  FailurePolicy
	local    Store
	onErr    func(error)
	parts    func(string) int
	maxLog   int
	trace    *tracing.Source // the tracer of Options.TracerProvider
	clock    wait.Clock      // Options.Clock, or the machine's

	// held are the cancelled reservations not yet given back, by store
	// key, in the order they were cancelled; a Cancel that gives back
	// retries them latest slot first.
	heldMu sync.Mutex
	held   map[string][]*Reservation
}

// maxHeld bounds the cancelled reservations a Limiter keeps per key, to
// give back once the later ones are cancelled too; the oldest go first.
const maxHeld = 256

// Result is the answer of Allow and AllowN.
type Result struct {
	// Allowed: the events pass and were charged.
	Allowed bool
	// Remaining is how many more events would pass now (the least over the
	// limits).
	Remaining int
	// RetryAfter, when not Allowed, is how long until the same call could
	// pass; zero when Allowed.
	RetryAfter time.Duration
	// ResetAfter is how long until the key is idle again: every limit back
	// to its full burst (or its window empty).
	ResetAfter time.Duration
	// StoreErr is the store's error when the store failed and the FailOpen
	// or FailLocal policy answered instead; nil when the store decided.
	StoreErr error
}

// Allow is shorthand for AllowN(ctx, key, 1, limits...).
func (l *Limiter) Allow(ctx context.Context, key string, limits ...Limit) (Result, error) {
	return l.AllowN(ctx, key, 1, limits...)
}

// AllowN reports whether n events on key pass now under every one of
// limits, and charges them to every limit when they do (all or nothing, in
// one store call). Limits of one call must share one algorithm (GCRA and
// Funnel are both GCRA).
//
// Errors: ErrInvalidKey, ErrInvalidCost, ErrInvalidLimit and ErrImpossible
// for bad input (nothing charged); an error wrapping ErrStore when the
// store failed under FailClosed, with a Result that is not Allowed.
func (l *Limiter) AllowN(ctx context.Context, key string, n int, limits ...Limit) (Result, error) {
	alg, err := l.check(key, n, limits)
	if err != nil {
		return Result{}, err
	}
	k := l.partitions(key)
	if k > 1 {
		if limits, err = partitionLimits(n, limits, k); err != nil {
			return Result{}, err
		}
	}
	decide := func(s Store, skey string) (Decision, error) {
		switch alg {
		case SlidingLog:
			return s.SlidingLog(ctx, skey, n, limits)
		case SlidingWindow:
			return s.SlidingWindow(ctx, skey, n, limits)
		}
		return s.GCRA(ctx, skey, n, limits, OpAllow, 0, time.Time{})
	}
	p := 0
	if k > 1 {
		p = rand.IntN(k)
	}
	a, err := l.decide(decide, l.storeKey(key, p, k))
	if err == nil && a.storeErr == nil && !a.v.OK && k > 1 {
		p = (p + 1 + rand.IntN(k-1)) % k
		a, err = l.decide(decide, l.storeKey(key, p, k))
	}
	return result(a.v, a.storeErr), err
}

// decide makes one decision on skey under the failure policy (FailOpen
// answers allowed).
func (l *Limiter) decide(do func(Store, string) (Decision, error), skey string) (answer[Decision], error) {
	return underPolicy(l, Decision{OK: true}, func(s Store) (Decision, error) { return do(s, skey) })
}

// Reservation is a claimed future slot (ReserveN): the caller may act after
// Delay. Its methods are safe for concurrent use.
type Reservation struct {
	l       *Limiter
	ok      bool
	delay   time.Duration
	act     time.Time // on the Limiter's clock (Options.Clock)
	store   Store     // nil when the policy answered without a store
	skey    string
	n       int
	limits  []Limit
	at      time.Time // the slot, on the store's clock
	storeEr error

	mu       sync.Mutex
	canceled bool
}

// OK reports whether the slot was reserved: false when it lay beyond the
// maximum wait (nothing was charged).
func (r *Reservation) OK() bool { return r.ok }

// Delay is how long after the reservation was made the caller may act. When
// OK is false, it is the delay the slot would have needed.
func (r *Reservation) Delay() time.Duration { return r.delay }

// TimeToAct is when the caller may act, on the Limiter's clock
// (Options.Clock): Delay after the store's reply arrived.
func (r *Reservation) TimeToAct() time.Time { return r.act }

// StoreErr is the store's error when the store failed and the FailOpen or
// FailLocal policy answered instead; nil when the store decided.
func (r *Reservation) StoreErr() error { return r.storeEr }

// Wait blocks until the reservation's slot comes (TimeToAct) and returns
// nil. When ctx ends first it gives the slot back (Cancel, allowed 5 s of
// its own) and returns ctx.Err() itself, or, when giving it back failed,
// an error wrapping both. Wait on a reservation that is not OK returns nil
// at once: check OK first.
func (r *Reservation) Wait(ctx context.Context) error {
	if !r.ok || !r.act.After(r.l.clock.Now()) {
		return nil
	}
	if _, err := wait.NewOn(r.l.clock).Wait(ctx, r.act, 0); err == nil {
		return nil // the slot came: nothing else wakes the Waiter
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := r.Cancel(cctx); err != nil {
		return fmt.Errorf("%w (the slot was not given back: %w)", ctx.Err(), err)
	}
	return ctx.Err()
}

// Cancel gives the reservation's events back if its slot has not come yet,
// so that later callers may use them. Reservations made after it keep
// their slots: only what they do not build on is given back (none of it
// when a later reservation acts after this one's slot, as in
// golang.org/x/time/rate). What a later reservation of the same Limiter
// built on is given back when that one is cancelled too, before its slot:
// reservations of one Limiter cancelled in any order give back as much as
// if they had been cancelled latest first (those of other processes are
// theirs to give back). Cancel on a reservation that is not OK, already
// cancelled or whose time has come does nothing. It returns an error
// wrapping ErrStore when the store failed.
func (r *Reservation) Cancel(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.ok || r.canceled || r.store == nil {
		return nil
	}
	if r.l != nil {
		// A Limiter's cancels go one at a time, so that the one that
		// uncovers kept reservations sees every cancel made before it.
		r.l.heldMu.Lock()
		defer r.l.heldMu.Unlock()
	}
	d, err := r.store.GCRA(ctx, r.skey, r.n, r.limits, OpCancel, 0, r.at)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrStore, err)
	}
	r.canceled = true
	if r.l != nil {
		return r.l.afterCancel(ctx, r, d.OK)
	}
	return nil
}

// afterCancel keeps r, when its cancel gave nothing back, to give back
// once the reservations that built on it are cancelled; when it gave
// something back, it gives back the kept ones of the key that it uncovers,
// latest slot first, until one still gives nothing. heldMu is held.
func (l *Limiter) afterCancel(ctx context.Context, r *Reservation, gave bool) error {
	now := l.clock.Now()
	kept := slices.DeleteFunc(l.held[r.skey], func(h *Reservation) bool { return !h.act.After(now) })
	if !gave {
		if r.act.After(now) {
			kept = append(kept, r)
			if len(kept) > maxHeld {
				kept = kept[len(kept)-maxHeld:]
			}
		}
	} else {
		slices.SortStableFunc(kept, func(a, b *Reservation) int { return b.at.Compare(a.at) })
		for len(kept) > 0 {
			h := kept[0]
			if h.store != r.store || !h.at.Before(r.at) {
				break
			}
			d, err := h.store.GCRA(ctx, h.skey, h.n, h.limits, OpCancel, 0, h.at)
			if err != nil {
				l.setHeld(r.skey, kept)
				return fmt.Errorf("%w: %w", ErrStore, err)
			}
			if !d.OK {
				break
			}
			kept = kept[1:]
		}
	}
	l.setHeld(r.skey, kept)
	return nil
}

// setHeld stores the kept reservations of skey; heldMu is held. When more
// than maxHeldKeys keys keep some, those whose slots have all come are
// dropped, and then, if need be, any: a kept reservation is only a chance
// to give back more later.
func (l *Limiter) setHeld(skey string, kept []*Reservation) {
	if len(kept) == 0 {
		delete(l.held, skey)
		return
	}
	if l.held == nil {
		l.held = map[string][]*Reservation{}
	}
	l.held[skey] = kept
	if len(l.held) <= maxHeldKeys {
		return
	}
	now := l.clock.Now()
	for k, rs := range l.held {
		if !slices.ContainsFunc(rs, func(h *Reservation) bool { return h.act.After(now) }) {
			delete(l.held, k)
		}
	}
	for k := range l.held {
		if len(l.held) <= maxHeldKeys {
			break
		}
		delete(l.held, k)
	}
}

// maxHeldKeys bounds the keys a Limiter keeps cancelled reservations of.
const maxHeldKeys = 1024

// Reserve is shorthand for ReserveN(ctx, key, 1, maxWait, limits...).
func (l *Limiter) Reserve(ctx context.Context, key string, maxWait time.Duration, limits ...Limit) (*Reservation, error) {
	return l.ReserveN(ctx, key, 1, maxWait, limits...)
}

// ReserveN claims, atomically, the earliest slot at which n events on key
// pass under every one of limits (GCRA only), if it lies within maxWait
// (negative: any), and returns it. Callers are given slots in the order
// their reservations reach the store, so those who act at their slot are
// served first come, first served across every process. A reservation whose
// slot lies beyond maxWait is not OK and charges nothing.
//
// Errors: those of AllowN, and ErrUnsupported for window algorithms.
func (l *Limiter) ReserveN(ctx context.Context, key string, n int, maxWait time.Duration, limits ...Limit) (*Reservation, error) {
	alg, err := l.check(key, n, limits)
	if err != nil {
		return nil, err
	}
	if alg != GCRA {
		return nil, fmt.Errorf("%w: Reserve with %v", ErrUnsupported, alg)
	}
	if maxWait < 0 {
		maxWait = -1
	}
	k := l.partitions(key)
	if k > 1 {
		if limits, err = partitionLimits(n, limits, k); err != nil {
			return nil, err
		}
	}
	do := func(s Store, skey string) (Decision, error) {
		return s.GCRA(ctx, skey, n, limits, OpReserve, maxWait, time.Time{})
	}
	p := 0
	if k > 1 {
		p = rand.IntN(k)
	}
	skey := l.storeKey(key, p, k)
	a, err := l.decide(do, skey)
	if err == nil && a.storeErr == nil && !a.v.OK && k > 1 {
		p = (p + 1 + rand.IntN(k-1)) % k
		skey = l.storeKey(key, p, k)
		a, err = l.decide(do, skey)
	}
	if err != nil {
		return nil, err
	}
	d := a.v
	// The slot is Delay after the store's decision, which came before the
	// reply: counting from the reply, a caller never acts early.
	return &Reservation{
		l: l, ok: d.OK, delay: d.Delay, act: l.clock.Now().Add(d.Delay), store: a.by, skey: skey, n: n,
		limits: limits, at: d.Now.Add(d.Delay), storeEr: a.storeErr,
	}, nil
}

// Wait is shorthand for WaitN(ctx, key, 1, limits...).
func (l *Limiter) Wait(ctx context.Context, key string, limits ...Limit) error {
	return l.WaitN(ctx, key, 1, limits...)
}

// WaitN reserves the earliest slot for n events on key (GCRA only) and
// blocks until it comes. Waiters of every process are served in the order
// their reservations reached the store. When the slot lies beyond ctx's
// deadline WaitN returns ErrWaitTooLong at once, charging nothing; when ctx
// ends first, it cancels the reservation and returns ctx's error (see
// Reservation.Wait).
//
// Errors: those of ReserveN, ErrWaitTooLong, ctx.Err(). Under FailOpen a
// store failure lets WaitN return nil at once.
func (l *Limiter) WaitN(ctx context.Context, key string, n int, limits ...Limit) error {
	if tr := l.trace.Tracer(); tr != nil {
		return l.waitTraced(ctx, tr, key, n, limits)
	}
	_, err := l.waitN(ctx, key, n, limits)
	return err
}

// waitN is WaitN, returning the reservation it made (nil when none).
func (l *Limiter) waitN(ctx context.Context, key string, n int, limits []Limit) (*Reservation, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	maxWait := time.Duration(-1)
	if dl, ok := ctx.Deadline(); ok {
		maxWait = max(time.Until(dl), 0) // a context's deadline is on the machine's clock
	}
	r, err := l.ReserveN(ctx, key, n, maxWait, limits...)
	if err != nil {
		return nil, err
	}
	if !r.OK() {
		return r, fmt.Errorf("%w: the slot is %v away", ErrWaitTooLong, r.Delay())
	}
	return r, r.Wait(ctx)
}

// check validates a call and returns its algorithm.
func (l *Limiter) check(key string, n int, limits []Limit) (Algorithm, error) {
	if key == "" {
		return 0, fmt.Errorf("%w: empty key", ErrInvalidKey)
	}
	if n < 1 {
		return 0, fmt.Errorf("%w: n %d, want at least 1", ErrInvalidCost, n)
	}
	if len(limits) == 0 {
		return 0, fmt.Errorf("%w: no limit given", ErrInvalidLimit)
	}
	if len(limits) > 16 {
		return 0, fmt.Errorf("%w: %d limits on one key, want at most 16", ErrInvalidLimit, len(limits))
	}
	alg := limits[0].Algorithm
	for i, lim := range limits {
		if err := lim.Validate(); err != nil {
			return 0, fmt.Errorf("limit %d: %w", i, err)
		}
		if lim.Algorithm != alg {
			return 0, fmt.Errorf("%w: limit %d is %v, limit 0 is %v: the limits of one call share an algorithm", ErrInvalidLimit, i, lim.Algorithm, alg)
		}
		if alg == SlidingLog && lim.Events > l.maxLog {
			return 0, fmt.Errorf("%w: limit %d: a sliding log of %d events exceeds MaxLogEvents %d", ErrInvalidLimit, i, lim.Events, l.maxLog)
		}
	}
	return alg, checkCost(n, limits)
}

// checkCost refuses a cost that no limit's burst can ever hold.
func checkCost(n int, limits []Limit) error {
	for i, lim := range limits {
		capacity := lim.Events
		if lim.Algorithm == GCRA {
			capacity = lim.BurstOrDefault()
		}
		if q := lim.QuotaOrDefault(); n > capacity/q {
			return fmt.Errorf("%w: %d events of quota %d exceed limit %d's capacity %d", ErrImpossible, n, q, i, capacity)
		}
	}
	return nil
}

func (l *Limiter) partitions(key string) int {
	return min(max(l.parts(key), 1), 256)
}

// partitionLimits gives each of k partitions 1/k of every limit: GCRA
// limits keep their events over a period k times longer and a burst of
// max(1, Burst/k); window limits keep their period with max(1, Events/k).
// It refuses what a partition cannot hold.
func partitionLimits(n int, limits []Limit, k int) ([]Limit, error) {
	out := make([]Limit, len(limits))
	for i, lim := range limits {
		if lim.Algorithm == GCRA {
			lim.Burst = max(1, lim.BurstOrDefault()/k)
			lim.Per *= time.Duration(k)
		} else {
			lim.Events = max(1, lim.Events/k)
		}
		if err := lim.Validate(); err != nil {
			return nil, fmt.Errorf("limit %d split in %d partitions: %w", i, k, err)
		}
		out[i] = lim
	}
	return out, checkCost(n, out)
}

// storeKey is the key the store sees: the mode (s, or i and the instance),
// the partition when there are several, and the caller's key. The parts
// before the caller's key are length-prefixed or fixed, so distinct calls
// never share a store key.
func (l *Limiter) storeKey(key string, p, k int) string {
	var b strings.Builder
	if l.mode == PerInstance {
		b.WriteString("i")
		b.WriteString(strconv.Itoa(len(l.instance)))
		b.WriteString(":")
		b.WriteString(l.instance)
	} else {
		b.WriteString("s")
	}
	if k > 1 {
		b.WriteString(".p")
		b.WriteString(strconv.Itoa(p))
		b.WriteString("/")
		b.WriteString(strconv.Itoa(k))
	}
	b.WriteString(":")
	b.WriteString(key)
	return b.String()
}
