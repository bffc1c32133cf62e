package memstore

import (
	"context"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hourglass-io/hourglass/ratelimit"
)

// sweepPerCall is how many entries each decision examines for expiry, so
// that idle keys are dropped incrementally without a timer.
const sweepPerCall = 8

// RateLimits is the embedded engine's ratelimit.Store: the same decisions as
// the Redis back end, in process, on the Store's clock. Rate limit state is
// kept in memory only, never in the Store's log: a restart begins every key
// idle (its full burst available). The state of a key is dropped once it
// is idle again (each decision examines a few entries and deletes the
// expired ones), so memory follows the keys in use, not every key ever
// seen. RateLimits is outside the Store's table of parts (part.go): it has no
// deadline, no record and no listener, and it keeps its own mutex, so
// decisions do not wait for the Store's (the job queue's and the other
// parts'); it shares the Store's clock alone. Once the Store is closed
// every decision fails with ratelimit.ErrClosed. It is safe for
// concurrent use.
type RateLimits struct {
	clock  func() time.Time
	closed atomic.Bool

	// mu guards entries.
	mu      sync.Mutex
	entries map[string]*rlEntry
}

// rlEntry is one limit's state on one key. Times are µs since the epoch.
type rlEntry struct {
	expires int64 // the state is that of an idle key from this time on
	tat     int64 // GCRA: theoretical arrival time
	log     []int64
	win     int64 // sliding window: index of the current window
	cur     int64 // events counted in window win
	prev    int64 // events counted in window win-1
}

// RateLimits returns the Store's rate limit store (the same one on every call).
func (s *Store) RateLimits() *RateLimits { return &s.rateLimits }

func (l *RateLimits) init(clock func() time.Time) {
	l.clock = clock
	l.entries = map[string]*rlEntry{}
}

// Len returns how many (key, limit) states are held, for tests of the
// incremental cleanup.
func (l *RateLimits) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.entries)
}

func (l *RateLimits) nowUS() int64 { return l.clock().UnixMicro() }

// decide runs f under the mutex, at the time of the clock, once ctx is
// checked and the entries that expired by then are dropped: every
// decision's scope.
func (l *RateLimits) decide(ctx context.Context, f func(now int64) (ratelimit.Decision, error)) (ratelimit.Decision, error) {
	if err := ctx.Err(); err != nil {
		return ratelimit.Decision{}, err
	}
	if l.closed.Load() {
		return ratelimit.Decision{}, ratelimit.ErrClosed
	}
	now := l.nowUS()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sweep(now)
	return f(now)
}

func us(d time.Duration) int64 { return int64(d / time.Microsecond) }

func dur(u int64) time.Duration { return time.Duration(u) * time.Microsecond }

func entryKey(kind byte, key string, a, b int64) string {
	return string(kind) + strconv.FormatInt(a, 36) + "." + strconv.FormatInt(b, 36) + ":" + key
}

// sweep deletes up to sweepPerCall expired entries. l.mu is held.
func (l *RateLimits) sweep(now int64) {
	i := 0
	for k, e := range l.entries {
		if e.expires <= now {
			delete(l.entries, k)
		}
		if i++; i >= sweepPerCall {
			return
		}
	}
}

// GCRA implements ratelimit.Store.
func (l *RateLimits) GCRA(ctx context.Context, key string, events int, limits []ratelimit.Limit, op ratelimit.Op, maxWait time.Duration, at time.Time) (ratelimit.Decision, error) {
	req := ratelimit.GCRARequest{Op: op, N: events, Limits: limits, MaxWait: maxWait, At: at}
	return l.decide(ctx, func(now int64) (ratelimit.Decision, error) {
		n := len(req.Limits)
		ks := make([]string, n)
		tat := make([]int64, n)
		T := make([]int64, n)
		B := make([]int64, n)
		C := make([]int64, n)
		Q := make([]int64, n)
		for i, lim := range req.Limits {
			T[i], B[i], Q[i] = us(lim.Interval()), int64(lim.BurstOrDefault()), int64(lim.QuotaOrDefault())
			C[i] = int64(req.N) * Q[i]
			ks[i] = entryKey('g', key, T[i], B[i])
			if e := l.entries[ks[i]]; e != nil && e.expires > now {
				tat[i] = e.tat
			}
		}
		d := ratelimit.Decision{Now: time.UnixMicro(now)}
		write := func(i int, t int64) {
			if t <= now {
				delete(l.entries, ks[i])
				return
			}
			l.entries[ks[i]] = &rlEntry{tat: t, expires: t}
		}
		switch req.Op {
		case ratelimit.OpCancel:
			// Give back only what no later reservation builds on: the latest
			// reservation acts at tat - burst*T, and the part of this one's
			// cost that lies before that is in use.
			at := req.At.UnixMicro()
			if at > now {
				for i := range n {
					if tat[i] > now {
						give := min(C[i]*T[i], C[i]*T[i]-(tat[i]-B[i]*T[i]-at))
						if give > 0 {
							tat[i] = max(tat[i]-give, now)
							write(i, tat[i])
							d.OK = true
						}
					}
				}
			}
		case ratelimit.OpRollback:
			// The cost less the time since the admission: later admissions
			// that found the state at or after ours built on at most that
			// much of it, so what is given back was never used by another.
			at := req.At.UnixMicro()
			for i := range n {
				give := C[i]*T[i] - max(now-at, 0)
				if give > 0 && tat[i] > now {
					tat[i] = max(tat[i]-give, now)
					write(i, tat[i])
					d.OK = true
				}
			}
		default:
			act := now
			for i := range n {
				act = max(act, gcraAct(tat[i], now, C[i]*T[i], B[i]*T[i]))
			}
			delay := act - now
			d.Delay = dur(delay)
			if req.Op == ratelimit.OpAllow {
				d.OK = delay == 0
			} else {
				d.OK = req.MaxWait < 0 || delay <= us(req.MaxWait)
			}
			if d.OK {
				for i := range n {
					tat[i] = gcraCharge(tat[i], act, C[i]*T[i])
					write(i, tat[i])
				}
			} else {
				d.RetryAfter = dur(delay)
			}
		}
		d.Remaining = math.MaxInt
		for i := range n {
			base := max(tat[i], now)
			free := max((now+B[i]*T[i]-base)/T[i], 0) / Q[i]
			d.Remaining = min(d.Remaining, int(free))
			d.ResetAfter = max(d.ResetAfter, dur(base-now))
		}
		return d, nil
	})
}

// SlidingLog implements ratelimit.Store.
func (l *RateLimits) SlidingLog(ctx context.Context, key string, n int, limits []ratelimit.Limit) (ratelimit.Decision, error) {
	return l.decide(ctx, func(now int64) (ratelimit.Decision, error) {
		es := make([]*rlEntry, len(limits))
		ks := make([]string, len(limits))
		for i, lim := range limits {
			ks[i] = entryKey('l', key, us(lim.Per), int64(lim.Events))
			e := l.entries[ks[i]]
			if e == nil {
				e = &rlEntry{}
			}
			if k := len(e.log); k > 0 {
				now = max(now, e.log[k-1]) // a clock that went back
			}
			es[i] = e
		}
		d := ratelimit.Decision{Now: time.UnixMicro(now), OK: true}
		for i, lim := range limits {
			e, w := es[i], us(lim.Per)
			cut := 0
			for cut < len(e.log) && e.log[cut] <= now-w {
				cut++
			}
			e.log = e.log[cut:]
			c := int64(n * lim.QuotaOrDefault())
			if over := int64(len(e.log)) + c - int64(lim.Events); over > 0 {
				d.OK = false
				d.RetryAfter = max(d.RetryAfter, dur(e.log[over-1]+w-now))
			}
		}
		d.Remaining = math.MaxInt
		for i, lim := range limits {
			e, w, q := es[i], us(lim.Per), lim.QuotaOrDefault()
			if d.OK {
				for range n * q {
					e.log = append(e.log, now)
				}
			}
			if len(e.log) == 0 {
				delete(l.entries, ks[i])
			} else {
				e.expires = e.log[len(e.log)-1] + w
				l.entries[ks[i]] = e
				d.ResetAfter = max(d.ResetAfter, dur(e.expires-now))
			}
			d.Remaining = min(d.Remaining, (lim.Events-len(e.log))/q)
		}
		return d, nil
	})
}

// SlidingWindow implements ratelimit.Store.
func (l *RateLimits) SlidingWindow(ctx context.Context, key string, n int, limits []ratelimit.Limit) (ratelimit.Decision, error) {
	return l.decide(ctx, func(now int64) (ratelimit.Decision, error) {
		type win struct {
			e          *rlEntry
			w, elapsed int64
			est        float64
			c, q       int64
		}
		ws := make([]win, len(limits))
		ks := make([]string, len(limits))
		d := ratelimit.Decision{Now: time.UnixMicro(now), OK: true}
		for i, lim := range limits {
			w := us(lim.Per)
			ks[i] = entryKey('w', key, w, int64(lim.Events))
			e := l.entries[ks[i]]
			if e == nil || e.expires <= now {
				e = &rlEntry{}
			}
			t := max(now, e.win*w) // a clock that went back
			idx := t / w
			switch {
			case e.win == idx:
			case e.win == idx-1:
				e.prev, e.cur = e.cur, 0
			default:
				e.prev, e.cur = 0, 0
			}
			e.win = idx
			x := win{e: e, w: w, elapsed: t - idx*w, q: int64(lim.QuotaOrDefault())}
			x.c = int64(n) * x.q
			x.est = float64(e.prev)*float64(w-x.elapsed)/float64(w) + float64(e.cur)
			N := int64(lim.Events)
			if x.est+float64(x.c) > float64(N) {
				d.OK = false
				var r int64
				if e.cur+x.c <= N {
					r = int64(math.Ceil(float64(w)-float64(N-x.c-e.cur)*float64(w)/float64(e.prev))) - x.elapsed
				} else {
					r = w - x.elapsed + int64(math.Ceil(float64(w)-float64(N-x.c)*float64(w)/float64(e.cur)))
				}
				d.RetryAfter = max(d.RetryAfter, dur(max(r, 1)))
			}
			ws[i] = x
		}
		d.Remaining = math.MaxInt
		for i, lim := range limits {
			x := ws[i]
			if d.OK {
				x.e.cur += x.c
				x.est += float64(x.c)
			}
			d.Remaining = min(d.Remaining, int(max(math.Floor((float64(lim.Events)-x.est)/float64(x.q)), 0)))
			end := (x.e.win + 1) * x.w // end of the current window
			switch {
			case x.e.cur > 0:
				x.e.expires = end + x.w
			case x.e.prev > 0:
				x.e.expires = end
			default:
				delete(l.entries, ks[i])
				continue
			}
			l.entries[ks[i]] = x.e
			d.ResetAfter = max(d.ResetAfter, dur(x.e.expires-now))
		}
		return d, nil
	})
}
