package storetest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/ratelimit"
)

// rlRecorder is a ratelimit.Store that records every decision it made with
// the limits it was made for, so that what must hold of any decision is
// checked when the case is over (checkInvariants).
type rlRecorder struct {
	ratelimit.Store

	mu        sync.Mutex
	decisions []rlDecision
}

type rlDecision struct {
	what   string
	key    string
	limits []ratelimit.Limit
	d      ratelimit.Decision
}

// recordRL returns s recording its decisions, a ratelimit.Batcher when s
// is one.
func recordRL(s ratelimit.Store) (ratelimit.Store, *rlRecorder) {
	r := &rlRecorder{Store: s}
	if b, ok := s.(ratelimit.Batcher); ok {
		return rlBatchRecorder{r, b}, r
	}
	return r, r
}

func (r *rlRecorder) note(what, key string, limits []ratelimit.Limit, d ratelimit.Decision, err error) (ratelimit.Decision, error) {
	if err == nil {
		r.mu.Lock()
		r.decisions = append(r.decisions, rlDecision{what, key, limits, d})
		r.mu.Unlock()
	}
	return d, err
}

func (r *rlRecorder) GCRA(ctx context.Context, key string, n int, limits []ratelimit.Limit, op ratelimit.Op, maxWait time.Duration, at time.Time) (ratelimit.Decision, error) {
	d, err := r.Store.GCRA(ctx, key, n, limits, op, maxWait, at)
	return r.note("GCRA", key, limits, d, err)
}

func (r *rlRecorder) SlidingLog(ctx context.Context, key string, n int, limits []ratelimit.Limit) (ratelimit.Decision, error) {
	d, err := r.Store.SlidingLog(ctx, key, n, limits)
	return r.note("SlidingLog", key, limits, d, err)
}

func (r *rlRecorder) SlidingWindow(ctx context.Context, key string, n int, limits []ratelimit.Limit) (ratelimit.Decision, error) {
	d, err := r.Store.SlidingWindow(ctx, key, n, limits)
	return r.note("SlidingWindow", key, limits, d, err)
}

// rlBatchRecorder is an rlRecorder over a Batcher.
type rlBatchRecorder struct {
	*rlRecorder
	b ratelimit.Batcher
}

func (r rlBatchRecorder) GCRABatch(ctx context.Context, keys []string, reqs []ratelimit.GCRARequest) ([]ratelimit.Decision, error) {
	ds, err := r.b.GCRABatch(ctx, keys, reqs)
	if err == nil {
		for i, d := range ds {
			r.note("GCRABatch", keys[i], reqs[i].Limits, d, nil)
		}
	}
	return ds, err
}

// checkInvariants checks every decision the case's store made: what it
// says is left never exceeds what the limits hold (their burst, or their
// events per window) nor goes below 0, an admission has nothing to retry
// after, none of its durations is negative, and it carries the store's
// clock.
func (r *rlRecorder) checkInvariants(t *testing.T) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, dec := range r.decisions {
		most := -1
		for _, l := range dec.limits {
			if c := max(l.Burst, l.Events); most < 0 || c < most {
				most = c
			}
		}
		d := dec.d
		if d.Remaining < 0 || most >= 0 && d.Remaining > most {
			t.Errorf("invariants: %s on %q for %v: %d remaining, want 0 to %d", dec.what, dec.key, dec.limits, d.Remaining, most)
		}
		if d.OK && d.RetryAfter != 0 {
			t.Errorf("invariants: %s on %q for %v: OK with a retry after %v", dec.what, dec.key, dec.limits, d.RetryAfter)
		}
		if d.RetryAfter < 0 || d.ResetAfter < 0 || d.Delay < 0 {
			t.Errorf("invariants: %s on %q for %v: a negative duration in %+v", dec.what, dec.key, dec.limits, d)
		}
		if d.Now.IsZero() {
			t.Errorf("invariants: %s on %q: a decision without the store's clock: %+v", dec.what, dec.key, d)
		}
	}
}
