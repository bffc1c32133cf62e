package storetest

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/queue"
)

// BenchKeyWindows measures the key windows (NewJob.UniqueFor): keys jobs,
// each put, finished and put again inside its window, then again once the
// window has closed on the stores' clock (advanced by advance), by one
// caller per store in stores (processes sharing the back end), each
// taking every key in turn. It reports the second jobs made inside the
// windows and the jobs missed outside them (both must be 0).
func BenchKeyWindows(b *testing.B, stores []queue.Store, advance func(time.Duration), keys int) {
	ctx := context.Background()
	qs := make([]*queue.Queue, len(stores))
	for i, s := range stores {
		q, err := queue.New(s, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer q.Close()
		qs[i] = q
	}
	const window = 10 * time.Second
	tube := "windows"
	// each runs f(q, key) for every key, the keys dealt out to the callers.
	each := func(f func(q *queue.Queue, key string) error) {
		var next atomic.Int64
		var wg sync.WaitGroup
		var mu sync.Mutex
		var first error
		for _, q := range qs {
			wg.Go(func() {
				for {
					k := int(next.Add(1)) - 1
					if k >= keys {
						return
					}
					if err := f(q, "key-"+strconv.Itoa(k)); err != nil {
						mu.Lock()
						first = cmpErr(first, err)
						mu.Unlock()
						return
					}
				}
			})
		}
		wg.Wait()
		if first != nil {
			b.Fatal(first)
		}
	}
	var made, inside, outside, missed atomic.Int64
	ids := make([]atomic.Uint64, keys)
	idx := func(key string) int { n, _ := strconv.Atoi(key[4:]); return n }
	b.ResetTimer()
	start := time.Now()
	each(func(q *queue.Queue, key string) error {
		r, err := q.PutMany(ctx, tube, []queue.NewJob{{Body: []byte(key), UniqueKey: key, UniqueFor: window}})
		if err == nil && !r[0].Duplicate {
			made.Add(1)
			ids[idx(key)].Store(uint64(r[0].ID))
		}
		return err
	})
	each(func(q *queue.Queue, key string) error {
		return q.Finish(ctx, queue.ID(ids[idx(key)].Load()), []byte("done"))
	})
	each(func(q *queue.Queue, key string) error {
		r, err := q.PutMany(ctx, tube, []queue.NewJob{{Body: []byte(key), UniqueKey: key, UniqueFor: window}})
		if err == nil && !r[0].Duplicate {
			inside.Add(1)
		}
		return err
	})
	advance(window)
	each(func(q *queue.Queue, key string) error {
		r, err := q.PutMany(ctx, tube, []queue.NewJob{{Body: []byte(key), UniqueKey: key, UniqueFor: window}})
		if err == nil && r[0].Duplicate {
			missed.Add(1)
		} else if err == nil {
			outside.Add(1)
		}
		return err
	})
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(made.Load()), "first-jobs")
	b.ReportMetric(float64(inside.Load()), "second-jobs-inside")
	b.ReportMetric(float64(outside.Load()), "jobs-outside")
	b.ReportMetric(float64(missed.Load()), "missed-outside")
	b.ReportMetric(float64(4*keys)/elapsed.Seconds(), "ops/s")
	if made.Load() != int64(keys) || inside.Load() != 0 || missed.Load() != 0 || outside.Load() != int64(keys) {
		b.Errorf("keys %d: first jobs %d, second jobs inside the window %d, jobs outside %d, missed outside %d",
			keys, made.Load(), inside.Load(), outside.Load(), missed.Load())
	}
}

func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

// BenchRetention measures kept jobs: jobs jobs of one tube with the
// given retention, each put with a key ("order-<k>") and a 100-byte body
// and finished with a result ("result <k>") by
// callers goroutines; each must be found by its key until its time, and
// the tube (which lives while it keeps jobs) gone soon after the last
// one's time with nothing else running. memory returns the bytes the back
// end holds (the caller's measure); it is read before the run, with every
// job kept, and once the tube is gone.
func BenchRetention(b *testing.B, s queue.Store, memory func() int64, jobs, callers int, retain time.Duration) {
	ctx := context.Background()
	q, err := queue.New(s, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer q.Close()
	tube := "retained"
	if err := q.SetRetention(ctx, tube, retain); err != nil {
		b.Fatal(err)
	}
	before := memory()
	b.ResetTimer()
	ids := make([]queue.ID, jobs)
	for i := 0; i < jobs; i += 1000 {
		batch := make([]queue.NewJob, 0, 1000)
		for k := i; k < min(i+1000, jobs); k++ {
			batch = append(batch, queue.NewJob{Body: retentionBody(k), UniqueKey: "order-" + strconv.Itoa(k), TTR: time.Minute})
		}
		r, err := q.PutMany(ctx, tube, batch)
		if err != nil {
			b.Fatal(err)
		}
		for n, p := range r {
			ids[i+n] = p.ID
		}
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Value
	for range callers {
		wg.Go(func() {
			for {
				k := int(next.Add(1)) - 1
				if k >= jobs {
					return
				}
				if err := q.Finish(ctx, ids[k], []byte("result "+strconv.Itoa(k))); err != nil {
					failed.Store(err)
					return
				}
			}
		})
	}
	wg.Wait()
	lastDone := time.Now()
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	kept := memory()
	// Every job is found by its key, finished, with its result.
	lost := 0
	for k := 0; k < jobs; k++ {
		js, err := q.LookupKey(ctx, tube, "order-"+strconv.Itoa(k))
		if err != nil || js.State != queue.Finished || string(js.Result) != "result "+strconv.Itoa(k) {
			lost++
		}
	}
	lookedUp := time.Now()
	// The last deadline is at most lastDone + retain; watch the tube go.
	deadline := lastDone.Add(retain)
	var gone time.Time
	for {
		names, err := q.Tubes(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if !slices.Contains(names, tube) {
			gone = time.Now()
			break
		}
		if time.Since(deadline) > 30*time.Second {
			b.Fatalf("the tube still keeps jobs 30 s after the last deadline")
		}
		waitTick(10 * time.Millisecond)
	}
	after := memory()
	b.StopTimer()
	b.ReportMetric(float64(lost), "not-found-by-key")
	b.ReportMetric(float64(kept-before)/float64(jobs), "bytes/kept-job")
	b.ReportMetric(float64(after-before), "bytes-left-after")
	b.ReportMetric(float64(gone.Sub(deadline).Milliseconds()), "ms-gone-after-last-deadline")
	b.ReportMetric(lookedUp.Sub(lastDone).Seconds(), "s-lookups")
	if lost > 0 || gone.Sub(deadline) > time.Second {
		b.Errorf("%d of %d jobs not found by key before their time; tube gone %v after the last deadline", lost, jobs, gone.Sub(deadline))
	}
	fmt.Printf("retention %v: %d jobs kept, %.0f bytes each; gone %v after the last deadline; memory before %d, kept %d, after %d\n",
		retain, jobs, float64(kept-before)/float64(jobs), gone.Sub(deadline), before, kept, after)
}

// retentionBody is the body of BenchRetention's job k: 100 bytes, as
// bench/cmd/queuebench's keptmemory workload puts, so that both measure
// the same kept job.
func retentionBody(k int) []byte {
	b := []byte("job " + strconv.Itoa(k))
	for len(b) < 100 {
		b = append(b, ' ')
	}
	return b
}

// waitTick waits d: the measurement's sampling period (a benchmark's
// observation, not a wait for an event it could be told of).
func waitTick(d time.Duration) {
	t := time.NewTimer(d)
	<-t.C
}
