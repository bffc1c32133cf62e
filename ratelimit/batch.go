package ratelimit

import (
	"context"
	"fmt"
	"math/rand/v2"
)

// AllowEach decides n events on each of keys under limits (GCRA only), each
// key on its own, as AllowN would, and returns the results in the order of
// keys. When the Store is a Batcher (Redis) all decisions travel in one
// round trip; otherwise they are made one after the other. A partitioned
// key is tried on one partition only. The failure policy applies to the
// whole batch.
func (l *Limiter) AllowEach(ctx context.Context, keys []string, n int, limits ...Limit) ([]Result, error) {
	skeys := make([]string, len(keys))
	reqs := make([]GCRARequest, len(keys))
	for i, key := range keys {
		alg, err := l.check(key, n, limits)
		if err != nil {
			return nil, err
		}
		if alg != GCRA {
			return nil, fmt.Errorf("%w: AllowEach with %v", ErrUnsupported, alg)
		}
		lims, k := limits, l.partitions(key)
		p := 0
		if k > 1 {
			if lims, err = partitionLimits(n, limits, k); err != nil {
				return nil, err
			}
			p = rand.IntN(k)
		}
		skeys[i] = l.storeKey(key, p, k)
		reqs[i] = GCRARequest{Op: OpAllow, N: n, Limits: lims}
	}
	batch := func(s Store) ([]Decision, error) {
		if b, ok := s.(Batcher); ok {
			return b.GCRABatch(ctx, skeys, reqs)
		}
		out := make([]Decision, len(skeys))
		for i := range skeys {
			d, err := s.GCRA(ctx, skeys[i], reqs[i])
			if err != nil {
				return nil, err
			}
			out[i] = d
		}
		return out, nil
	}
	ds, err := batch(l.store)
	var storeErr error
	if err != nil {
		serr := fmt.Errorf("%w: %w", ErrStore, err)
		switch l.failure {
		case FailOpen:
			l.report(serr)
			out := make([]Result, len(keys))
			for i := range out {
				out[i] = Result{Allowed: true, StoreErr: serr}
			}
			return out, nil
		case FailLocal:
			l.report(serr)
			if ds, err = batch(l.local); err != nil {
				return make([]Result, len(keys)), fmt.Errorf("%w; local: %w", serr, err)
			}
			storeErr = serr
		default:
			return make([]Result, len(keys)), serr
		}
	}
	out := make([]Result, len(ds))
	for i, d := range ds {
		out[i] = Result{Allowed: d.OK, Remaining: d.Remaining, RetryAfter: d.RetryAfter, ResetAfter: d.ResetAfter, StoreErr: storeErr}
	}
	return out, nil
}
