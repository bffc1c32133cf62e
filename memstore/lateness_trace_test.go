package memstore

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/internal/ptimer"
	"github.com/hourglass-io/hourglass/queue"
)

// BenchmarkLatenessStages is BenchmarkLateness with every stage between a
// job's due time and its handler timed: the Store's timer firing (its
// callback's start against the time it was set for), the callback's work
// under the mutex, the wake-up of the tube's listeners, and the waiting
// reserve's return to a handler. It logs the percentiles of each with
// -test.v. Run with -benchtime=1x.
func BenchmarkLatenessStages(b *testing.B) {
	const n = 20000
	ctx := context.Background()
	type fire struct{ planned, start, end time.Time }
	var (
		mu    sync.Mutex
		fires []fire
		wakes []time.Time
	)
	s := must(New(&Options{AfterFunc: func(d time.Duration, f func()) Timer {
		t := &tracedTimer{}
		t.fn = func() {
			start := time.Now()
			t.mu.Lock()
			planned := t.at
			t.mu.Unlock()
			f()
			end := time.Now()
			mu.Lock()
			fires = append(fires, fire{planned, start, end})
			mu.Unlock()
		}
		t.t = ptimer.AfterFunc(d, t.fn)
		t.at = time.Now().Add(d)
		return t
	}}))
	defer s.Close()
	stop, err := s.Listen(ctx, "late", func(string) {
		now := time.Now()
		mu.Lock()
		wakes = append(wakes, now)
		mu.Unlock()
	})
	if err != nil {
		b.Fatal(err)
	}
	defer stop()
	q, err := queue.New(s, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer q.Close()
	type job struct{ due, handled time.Time }
	var (
		jobs = make([]job, 0, n)
		all  = make(chan struct{})
	)
	w, err := queue.NewWorker(q, queue.HandlerFunc(func(ctx context.Context, j queue.Job) error {
		now := time.Now()
		var due int64
		fmt.Sscan(string(j.Body), &due)
		mu.Lock()
		jobs = append(jobs, job{time.Unix(0, due), now})
		if len(jobs) == n {
			close(all)
		}
		mu.Unlock()
		return nil
	}), &queue.WorkerOptions{Tubes: []string{"late"}, Concurrency: 8})
	if err != nil {
		b.Fatal(err)
	}
	go w.Run(ctx)
	defer w.Shutdown(ctx)
	b.ResetTimer()
	putLate(b, ctx, q, n)
	<-all
	b.StopTimer()
	mu.Lock()
	defer mu.Unlock()
	slices.SortFunc(fires, func(a, c fire) int { return a.start.Compare(c.start) })
	slices.SortFunc(wakes, func(a, c time.Time) int { return a.Compare(c) })
	stages := map[string][]time.Duration{}
	order := []string{"lateness (handled-due)", "timer (fired-planned)", "timer (fired-due)", "fire's work (end-start)", "fired->woken", "woken->handled", "due->woken"}
	add := func(k string, d time.Duration) { stages[k] = append(stages[k], d) }
	for _, f := range fires {
		add(order[1], f.start.Sub(f.planned))
		add(order[3], f.end.Sub(f.start))
	}
	for _, j := range jobs {
		add(order[0], j.handled.Sub(j.due))
		// the last wake-up at or before the handler, and the first fire
		// at or after the due time
		wi, _ := slices.BinarySearchFunc(wakes, j.handled, func(a, t time.Time) int { return a.Compare(t) })
		if wi > 0 && !wakes[wi-1].Before(j.due) {
			add(order[6], wakes[wi-1].Sub(j.due))
			add(order[5], j.handled.Sub(wakes[wi-1]))
		}
		fi, _ := slices.BinarySearchFunc(fires, j.due, func(a fire, t time.Time) int { return a.start.Compare(t) })
		if fi < len(fires) && !fires[fi].start.After(j.handled) {
			add(order[2], fires[fi].start.Sub(j.due))
			if wi > 0 && !wakes[wi-1].Before(fires[fi].start) {
				add(order[4], wakes[wi-1].Sub(fires[fi].start))
			}
		}
	}
	pct := func(d []time.Duration) string {
		slices.Sort(d)
		p := func(q float64) float64 { return float64(d[min(len(d)-1, int(q*float64(len(d))))]) / 1e6 }
		return fmt.Sprintf("n=%d p50 %.3f p90 %.3f p99 %.3f max %.3f ms", len(d), p(0.5), p(0.9), p(0.99), p(1))
	}
	for _, k := range order {
		if len(stages[k]) > 0 {
			b.Logf("stage %-26s %s", k, pct(stages[k]))
		}
	}
	l := stages[order[0]]
	b.ReportMetric(float64(l[len(l)/2])/1e6, "p50-ms")
	b.ReportMetric(float64(l[len(l)*99/100])/1e6, "p99-ms")
}

// tracedTimer is the Store's timer with the time it was last set for.
type tracedTimer struct {
	t  ptimer.Stopper
	fn func()

	mu sync.Mutex
	at time.Time
}

func (t *tracedTimer) Reset(d time.Duration) bool {
	t.mu.Lock()
	t.at = time.Now().Add(d)
	t.mu.Unlock()
	return t.t.Reset(d)
}

func (t *tracedTimer) Stop() bool { return t.t.Stop() }
