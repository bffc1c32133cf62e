package storetest

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/queue"
)

// The key windows by processes (BenchKeyWindowsProcs): the test binary
// started again as each caller, whose TestMain calls RunWindowsChild.

// windowsPart is the part of a caller of BenchKeyWindowsProcs; its
// fields are "g procs tube keys span-ns start-unix-ns window-ns".
var windowsPart = childPart{env: "HOURGLASS_WINDOWS_CALLER", name: "windows caller"}

// WindowsClient is what a caller process of BenchKeyWindowsProcs does
// with the store (over HTTP to a server, or with a Store of its own on
// Redis): put one job, and finish one with a result.
type WindowsClient struct {
	Put    DebouncePutter
	Finish func(ctx context.Context, id queue.ID, result []byte) error
}

// windowsJob is every put of BenchKeyWindowsProcs: the key's job, held
// for window after the put that made it.
func windowsJob(key string, window time.Duration) queue.NewJob {
	return queue.NewJob{Body: []byte(key), UniqueKey: key, UniqueFor: window, TTR: time.Minute}
}

// The steps of a key, each by a process of its own: the put that makes
// its job and the job's finish (one process), a put inside the window
// and a put after it.
const (
	stepPut     = 'p'
	stepFinish  = 'f'
	stepInside  = 'i'
	stepOutside = 'o'
)

// windowsStep is a step of a key as a caller timed it by its clock.
type windowsStep struct {
	start, end time.Time
	res        queue.PutResult
}

// windowsPlan is when each step of key k is due: its put and finish at
// start + k×span/keys, its put inside the window half a window later, its
// put outside it one and a half windows later; caller g of procs takes
// the puts that make the jobs of the keys k ≡ g, the puts inside of the
// keys k ≡ g-1 and the puts outside of the keys k ≡ g-2 (mod procs).
func windowsPlan(g, procs, keys int, span, window time.Duration, start time.Time) []windowsAction {
	var out []windowsAction
	for k := range keys {
		at := start.Add(time.Duration(k) * span / time.Duration(keys))
		if k%procs == g {
			out = append(out, windowsAction{at, k, stepPut})
		}
		if (k+1)%procs == g {
			out = append(out, windowsAction{at.Add(window / 2), k, stepInside})
		}
		if (k+2)%procs == g {
			out = append(out, windowsAction{at.Add(window * 3 / 2), k, stepOutside})
		}
	}
	slices.SortStableFunc(out, func(a, b windowsAction) int { return a.at.Compare(b.at) })
	return out
}

type windowsAction struct {
	at   time.Time
	key  int
	step byte
}

// RunWindowsChild returns at once unless this process was started as a
// caller by BenchKeyWindowsProcs. Then it opens its client, runs its
// steps at their times, writes one line per step to standard output
// (step, key, start and return in Unix ns, the job's ID, whether the put
// was a duplicate) and exits: 0, or 1 after a failure, written to
// standard error. A TestMain calls it before anything else.
func RunWindowsChild(open func() (WindowsClient, func(), error)) {
	var g, procs, keys int
	var tube string
	var span, start, window int64
	runChild(windowsPart, []any{&g, &procs, &tube, &keys, &span, &start, &window}, open, func(ctx context.Context, c WindowsClient, w io.Writer) error {
		for _, a := range windowsPlan(g, procs, keys, time.Duration(span), time.Duration(window), time.Unix(0, start)) {
			time.Sleep(time.Until(a.at)) // pacing the caller, not waiting for an event
			key := "key-" + strconv.Itoa(a.key)
			t0 := time.Now()
			r, err := c.Put(ctx, tube, windowsJob(key, time.Duration(window)))
			t1 := time.Now()
			if err != nil {
				return fmt.Errorf("put %c of %s: %w", a.step, key, err)
			}
			fmt.Fprintf(w, "%c %d %d %d %d %t\n", a.step, a.key, t0.UnixNano(), t1.UnixNano(), r.ID, r.Duplicate)
			if a.step != stepPut {
				continue
			}
			if r.Duplicate {
				continue // the parent counts it
			}
			t0 = time.Now()
			if err := c.Finish(ctx, r.ID, []byte("done")); err != nil {
				return fmt.Errorf("finish of %s (job %d): %w", key, r.ID, err)
			}
			fmt.Fprintf(w, "%c %d %d %d %d false\n", stepFinish, a.key, t0.UnixNano(), time.Now().UnixNano(), r.ID)
		}
		return nil
	})
}

// BenchKeyWindowsProcs measures the key windows (NewJob.UniqueFor, docs/
// keys.md) with procs processes as the callers: the running test binary
// started again with env added to its environment (what its TestMain's
// RunWindowsChild needs to reach the store), on the real clock. keys
// keys, one every span/keys: each is put (UniqueFor window) and its job
// finished by one process, put again half a window later by another, and
// again one and a half windows later by a third. It counts, from each
// step's times at its caller, the second jobs made by a put surely inside
// the window (it returned before the first put began plus the window,
// floored to the millisecond) and the puts surely after it (begun after
// the first put returned plus the window and a millisecond) that made no
// job; both must be 0. A put that could not be placed on either side
// (the callers fell behind their plan), or inside the window before the
// finish returned, fails the run: it would test nothing. rs is the
// store, read at the end: the tube must hold one job per key, the jobs
// made outside the windows.
func BenchKeyWindowsProcs(b *testing.B, rs queue.Store, procs int, env []string, keys int, span, window time.Duration) {
	ctx := context.Background()
	q, err := queue.New(rs, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer q.Close()
	tube := fmt.Sprintf("windows-%d", time.Now().UnixNano())
	start := time.Now().Add(time.Second) // the processes start first
	steps := make([]map[byte]windowsStep, keys)
	for k := range steps {
		steps[k] = map[byte]windowsStep{}
	}
	b.ResetTimer()
	var wg sync.WaitGroup
	var mu sync.Mutex
	for g := range procs {
		wg.Go(func() {
			out, err := windowsPart.run(ctx, env, g, procs, tube, keys, span.Nanoseconds(), start.UnixNano(), window.Nanoseconds())
			if err != nil {
				b.Errorf("caller process %d: %v", g, err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			for line := range strings.Lines(out) {
				f := strings.Fields(line)
				var k int
				var t0, t1 int64
				var id uint64
				var dup bool
				var err error
				if len(f) == 6 && len(f[0]) == 1 {
					k, err = strconv.Atoi(f[1])
					if err == nil {
						t0, err = strconv.ParseInt(f[2], 10, 64)
					}
					if err == nil {
						t1, err = strconv.ParseInt(f[3], 10, 64)
					}
					if err == nil {
						id, err = strconv.ParseUint(f[4], 10, 64)
					}
					if err == nil {
						dup, err = strconv.ParseBool(f[5])
					}
				}
				if len(f) != 6 || len(f[0]) != 1 || err != nil || k < 0 || k >= keys {
					b.Errorf("caller process %d wrote %q", g, line)
					return
				}
				steps[k][f[0][0]] = windowsStep{time.Unix(0, t0), time.Unix(0, t1), queue.PutResult{ID: queue.ID(id), Duplicate: dup}}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if b.Failed() {
		return
	}
	var made, inside, missed, outside, unplaced, early, absent int
	var insideMargin, outsideMargin []time.Duration
	for k, s := range steps {
		p, okP := s[stepPut]
		f, okF := s[stepFinish]
		in, okI := s[stepInside]
		out, okO := s[stepOutside]
		if !okP || !okI || !okO || (!p.res.Duplicate && !okF) {
			absent++
			b.Errorf("key %d: steps %v missing", k, s)
			continue
		}
		if !p.res.Duplicate {
			made++
		}
		// Inside: returned before the store's instant of the first put
		// (no earlier than its start, floored to the millisecond) plus
		// the window.
		if in.end.Before(p.start.Truncate(time.Millisecond).Add(window)) {
			insideMargin = append(insideMargin, p.start.Truncate(time.Millisecond).Add(window).Sub(in.end))
			if !in.start.After(f.end) {
				early++
			} else if !in.res.Duplicate {
				inside++
			}
		} else {
			unplaced++
		}
		// Outside: begun after the first put returned plus the window and
		// the store clock's grain.
		if lo := p.end.Add(window + time.Millisecond); out.start.After(lo) {
			outsideMargin = append(outsideMargin, out.start.Sub(lo))
			if out.res.Duplicate {
				missed++
			} else {
				outside++
			}
		} else {
			unplaced++
		}
	}
	st, err := q.StatsTube(ctx, tube)
	if err != nil {
		b.Fatal(err)
	}
	minOf := func(d []time.Duration) time.Duration {
		if len(d) == 0 {
			return 0
		}
		return slices.Min(d)
	}
	b.ReportMetric(float64(made), "first-jobs")
	b.ReportMetric(float64(inside), "second-jobs-inside")
	b.ReportMetric(float64(outside), "jobs-outside")
	b.ReportMetric(float64(missed), "missed-outside")
	b.ReportMetric(float64(4*keys)/elapsed.Seconds(), "ops/s")
	b.Logf("%d keys by %d processes, window %v: %d first jobs; inside the window, after the finish, %d second jobs (closest put %v before the window's end); after it %d jobs, %d missed (closest put %v after the window's end); %d puts not placed, %d inside before the finish; the tube holds %d ready jobs",
		keys, procs, window, made, inside, minOf(insideMargin), outside, missed, minOf(outsideMargin), unplaced, early, st.Ready)
	if made != keys || inside != 0 || missed != 0 || outside != keys || unplaced != 0 || early != 0 || absent != 0 || st.Ready != int64(keys) {
		b.Errorf("keys %d: first jobs %d, second jobs inside the window %d, jobs outside %d, missed outside %d, puts not placed %d, inside before the finish %d, keys with a step missing %d, ready jobs left %d",
			keys, made, inside, outside, missed, unplaced, early, absent, st.Ready)
	}
}
