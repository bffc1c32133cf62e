package ratelimit

import (
	"context"
	"math/rand/v2"
	"time"
)

// Peek reports what key has left under limits without charging anything:
// Remaining and ResetAfter as AllowN would state them, Allowed whether one
// event would pass now. It is a check that counts nothing (Envoy's
// hits_addend of 0). A partitioned key reports one partition, picked at
// random. Errors are AllowN's; the failure policy applies.
func (l *Limiter) Peek(ctx context.Context, key string, limits ...Limit) (Result, error) {
	alg, err := l.check(key, 1, limits)
	if err != nil {
		return Result{}, err
	}
	k := l.partitions(key)
	p := 0
	if k > 1 {
		if limits, err = partitionLimits(1, limits, k); err != nil {
			return Result{}, err
		}
		p = rand.IntN(k)
	}
	// A cost of 0 admits and charges nothing on every store: the
	// decision reads the state and writes it back unchanged.
	peek := func(s Store, skey string) (Decision, error) {
		switch alg {
		case SlidingLog:
			return s.SlidingLog(ctx, skey, 0, limits)
		case SlidingWindow:
			return s.SlidingWindow(ctx, skey, 0, limits)
		}
		return s.GCRA(ctx, skey, 0, limits, OpAllow, 0, time.Time{})
	}
	a, err := l.decide(peek, l.storeKey(key, p, k))
	if err != nil {
		return Result{}, err
	}
	d := a.v
	return Result{Allowed: d.Remaining > 0, Remaining: d.Remaining, ResetAfter: d.ResetAfter, StoreErr: a.storeErr}, nil
}
