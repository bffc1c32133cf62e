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
		skey, lims, err := l.gcraKey(key, n, limits, "AllowEach")
		if err != nil {
			return nil, err
		}
		skeys[i] = skey
		reqs[i] = GCRARequest{Op: OpAllow, N: n, Limits: lims}
	}
	a, err := l.batch(ctx, skeys, reqs)
	if err != nil {
		return make([]Result, len(keys)), err
	}
	ds, storeErr := a.v, a.storeErr
	if ds == nil { // FailOpen
		out := make([]Result, len(keys))
		for i := range out {
			out[i] = Result{Allowed: true, StoreErr: storeErr}
		}
		return out, nil
	}
	out := make([]Result, len(ds))
	for i, d := range ds {
		out[i] = result(d, storeErr)
	}
	return out, nil
}

func result(d Decision, storeErr error) Result {
	return Result{Allowed: d.OK, Remaining: d.Remaining, RetryAfter: d.RetryAfter, ResetAfter: d.ResetAfter, StoreErr: storeErr}
}

// Request is one key's part of an AllowAll: N events on Key under Limits
// (GCRA only).
type Request struct {
	Key    string
	N      int
	Limits []Limit
}

// AllowAll decides every request together: the events of all of them are
// charged when each passes under its own limits, and none of them when any
// does not. It reports whether they passed, and per request whether it had
// room on its own (Allowed) with what remains after the call. Every
// decision travels in one round trip on a Batcher (Redis); when one does
// not pass, the charges of those that did are rolled back in a second
// (OpRollback), which gives back each cost less the time between the two
// calls, so a rollback never frees more than was taken: meanwhile other
// callers may find those keys fuller than they end up, never emptier. A
// partitioned key is tried on one partition only. The failure policy
// applies to the whole call (FailOpen: all pass).
//
// Errors: those of AllowN for each request (nothing charged), and
// ErrUnsupported for window algorithms.
func (l *Limiter) AllowAll(ctx context.Context, reqs []Request) (bool, []Result, error) {
	skeys := make([]string, len(reqs))
	greqs := make([]GCRARequest, len(reqs))
	for i, r := range reqs {
		skey, lims, err := l.gcraKey(r.Key, r.N, r.Limits, "AllowAll")
		if err != nil {
			return false, nil, err
		}
		skeys[i] = skey
		greqs[i] = GCRARequest{Op: OpAllow, N: r.N, Limits: lims}
	}
	out := make([]Result, len(reqs))
	a, err := l.batch(ctx, skeys, greqs)
	if err != nil {
		return false, out, err
	}
	ds, storeErr := a.v, a.storeErr
	if ds == nil { // FailOpen
		for i := range out {
			out[i] = Result{Allowed: true, StoreErr: storeErr}
		}
		return true, out, nil
	}
	all := true
	for i, d := range ds {
		out[i] = result(d, storeErr)
		all = all && d.OK
	}
	if all {
		return true, out, nil
	}
	var back []int
	for i, d := range ds {
		if d.OK {
			greqs[i].Op, greqs[i].At = OpRollback, d.Now
			back = append(back, i)
		}
	}
	if len(back) == 0 {
		return false, out, nil
	}
	bkeys := make([]string, len(back))
	breqs := make([]GCRARequest, len(back))
	for j, i := range back {
		bkeys[j], breqs[j] = skeys[i], greqs[i]
	}
	b, err := l.batch(context.WithoutCancel(ctx), bkeys, breqs)
	if err != nil {
		return false, out, err
	}
	bs := b.v
	if bs != nil {
		for j, i := range back {
			out[i].Remaining, out[i].ResetAfter = bs[j].Remaining, bs[j].ResetAfter
		}
	}
	return false, out, nil
}

// gcraKey checks a GCRA call on key and returns its store key (one
// partition, picked at random, of a partitioned key) and its limits.
func (l *Limiter) gcraKey(key string, n int, limits []Limit, what string) (string, []Limit, error) {
	alg, err := l.check(key, n, limits)
	if err != nil {
		return "", nil, err
	}
	if alg != GCRA {
		return "", nil, fmt.Errorf("%w: %s with %v", ErrUnsupported, what, alg)
	}
	k := l.partitions(key)
	p := 0
	if k > 1 {
		if limits, err = partitionLimits(n, limits, k); err != nil {
			return "", nil, err
		}
		p = rand.IntN(k)
	}
	return l.storeKey(key, p, k), limits, nil
}

// batch runs GCRA decisions in one round trip on a Batcher, else one after
// the other, under the failure policy: FailOpen answers no decisions (nil),
// every request passing.
func (l *Limiter) batch(ctx context.Context, skeys []string, reqs []GCRARequest) (answer[[]Decision], error) {
	return underPolicy(l, nil, func(s Store) ([]Decision, error) {
		if b, ok := s.(Batcher); ok {
			return b.GCRABatch(ctx, skeys, reqs)
		}
		out := make([]Decision, len(skeys))
		for i := range skeys {
			q := reqs[i]
			d, err := s.GCRA(ctx, skeys[i], q.N, q.Limits, q.Op, q.MaxWait, q.At)
			if err != nil {
				return nil, err
			}
			out[i] = d
		}
		return out, nil
	})
}
