package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// errUnsupported marks a workload a system has no API for.
var errUnsupported = errors.New("not supported")

// parallel runs fn for i in [0, n) on workers goroutines, each taking the
// next index until none is left, the first error, or the end of ctx.
func parallel(ctx context.Context, workers, n int, fn func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := fn(ctx, i); err != nil {
					cancel(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return ctx.Err()
}

// timedParallel is parallel that returns jobs/s for n jobs.
func timedParallel(ctx context.Context, workers, calls, jobs int, fn func(ctx context.Context, i int) error) (float64, error) {
	start := time.Now()
	if err := parallel(ctx, workers, calls, fn); err != nil {
		return 0, err
	}
	return float64(jobs) / time.Since(start).Seconds(), nil
}

// counter counts handled jobs and closes done at the n-th.
type counter struct {
	n    int64
	got  atomic.Int64
	done chan struct{}
}

func newCounter(n int) *counter { return &counter{n: int64(n), done: make(chan struct{})} }

func (c *counter) inc() int64 {
	v := c.got.Add(1)
	if v == c.n {
		close(c.done)
	}
	return v
}

// wait returns when n jobs were handled or ctx ends.
func (c *counter) wait(ctx context.Context) error {
	select {
	case <-c.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%d of %d jobs handled: %w", c.got.Load(), c.n, context.Cause(ctx))
	}
}

// waitEmpty polls empty every 2 ms until it says true or ctx ends.
func waitEmpty(ctx context.Context, empty func(ctx context.Context) (bool, error)) error {
	for {
		ok, err := empty(ctx)
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("queue not empty: %w", context.Cause(ctx))
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// body returns a body of size bytes (at least 8).
func body(size int) []byte {
	b := make([]byte, max(size, 8))
	for i := range b {
		b[i] = 'x'
	}
	return b
}

// dueBody returns a body of size bytes whose first 8 bytes are due in unix
// nanoseconds, big-endian.
func dueBody(size int, due time.Time) []byte {
	b := body(size)
	binary.BigEndian.PutUint64(b, uint64(due.UnixNano()))
	return b
}

// lateness is delivery time minus due time, in ms, of a body made by dueBody.
func lateness(b []byte, at time.Time) float64 {
	due := int64(binary.BigEndian.Uint64(b))
	return float64(at.UnixNano()-due) / 1e6
}

// delays returns n delays spread uniformly over [lo, hi], shuffled with a
// fixed seed so that every system gets the same sequence.
func delays(n int, lo, hi time.Duration) []time.Duration {
	d := make([]time.Duration, n)
	for i := range d {
		if n == 1 {
			d[i] = lo
			continue
		}
		d[i] = lo + time.Duration(float64(hi-lo)*float64(i)/float64(n-1))
	}
	// Fisher-Yates with a small LCG: deterministic across runs and systems.
	s := uint64(12345)
	for i := n - 1; i > 0; i-- {
		s = s*6364136223846793005 + 1442695040888963407
		j := int((s >> 33) % uint64(i+1))
		d[i], d[j] = d[j], d[i]
	}
	return d
}

// latencyStats are lateness percentiles in ms.
type latencyStats struct {
	P50, P99, Max float64
	N             int
}

// lateRecorder collects lateness samples from concurrent handlers.
type lateRecorder struct {
	mu sync.Mutex
	ms []float64
	c  *counter
}

func newLateRecorder(n int) *lateRecorder {
	return &lateRecorder{ms: make([]float64, 0, n), c: newCounter(n)}
}

func (r *lateRecorder) add(ms float64) {
	r.mu.Lock()
	r.ms = append(r.ms, ms)
	r.mu.Unlock()
	r.c.inc()
}

func (r *lateRecorder) stats() latencyStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return summarize(r.ms)
}

func summarize(ms []float64) latencyStats {
	s := append([]float64(nil), ms...)
	sort.Float64s(s)
	if len(s) == 0 {
		return latencyStats{P50: math.NaN(), P99: math.NaN(), Max: math.NaN()}
	}
	return latencyStats{P50: percentile(s, 50), P99: percentile(s, 99), Max: s[len(s)-1], N: len(s)}
}

// percentile of sorted s, nearest rank.
func percentile(s []float64, p float64) float64 {
	k := int(math.Ceil(p/100*float64(len(s)))) - 1
	k = min(max(k, 0), len(s)-1)
	return s[k]
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
