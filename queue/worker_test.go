package queue_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/internal/testkit/storetest"
	"github.com/hourglass-io/hourglass/memstore"
	"github.com/hourglass-io/hourglass/queue"
)

func newQueue(t *testing.T) *queue.Queue {
	t.Helper()
	s, err := memstore.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	q, err := queue.New(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Close(); s.Close() })
	return q
}

// runWorker runs w until the test ends, and reports Run's error.
func runWorker(t *testing.T, w *queue.Worker) <-chan error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- w.Run(context.Background()) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		w.Shutdown(ctx)
	})
	return done
}

func TestWorkerProcessesEveryJobOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	q := newQueue(t)
	const n = 500
	var mu sync.Mutex
	seen := map[string]int{}
	all := make(chan struct{})
	w, err := queue.NewWorker(q, queue.HandlerFunc(func(ctx context.Context, j queue.Job) error {
		mu.Lock()
		defer mu.Unlock()
		seen[string(j.Body)]++
		if len(seen) == n {
			close(all)
		}
		return nil
	}), &queue.WorkerOptions{Tubes: []string{"a", "b"}, Concurrency: 4})
	if err != nil {
		t.Fatal(err)
	}
	runWorker(t, w)
	for i := range n {
		tube := []string{"a", "b"}[i%2]
		if _, err := q.Put(ctx, tube, queue.NewJob{Body: fmt.Appendf(nil, "%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-all:
	case <-ctx.Done():
		t.Fatalf("only %d of %d jobs handled", len(seen), n)
	}
	if err := w.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	for body, k := range seen {
		if k != 1 {
			t.Errorf("job %s handled %d times", body, k)
		}
	}
	st, err := q.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Ready+st.Reserved+st.Delayed+st.Buried != 0 {
		t.Errorf("jobs left after every handler succeeded: %+v", st)
	}
}

func TestWorkerRetriesThenBuries(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	q := newQueue(t)
	var attempts atomic.Int32
	buried := make(chan struct{})
	w, err := queue.NewWorker(q, queue.HandlerFunc(func(ctx context.Context, j queue.Job) error {
		if attempts.Add(1) == 3 {
			close(buried) // the third failure is the last; the worker buries after it
		}
		return errors.New("downstream refused")
	}), &queue.WorkerOptions{MaxAttempts: 3, Backoff: func(int) time.Duration { return 0 }})
	if err != nil {
		t.Fatal(err)
	}
	runWorker(t, w)
	id, err := q.Put(ctx, "default", queue.NewJob{Body: []byte("x"), Priority: 7})
	if err != nil {
		t.Fatal(err)
	}
	<-buried
	if err := w.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	st, err := q.StatsJob(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != queue.Buried || st.Reserves != 3 || st.Releases != 2 || st.Buries != 1 || st.Priority != 7 {
		t.Fatalf("after 3 failed attempts: %+v, want buried after 3 reserves and 2 releases", st)
	}
}

// TestWorkerBuriesWithTheLastError: a job that fails its last attempt is
// buried with that attempt's error as its last error; each failure before
// it was recorded as the reason of its release.
func TestWorkerBuriesWithTheLastError(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	q := newQueue(t)
	var attempts atomic.Int32
	failed := make(chan int32, 3) // each attempt, as its handler returns
	h := queue.HandlerFunc(func(ctx context.Context, j queue.Job) error {
		n := attempts.Add(1)
		defer func() { failed <- n }()
		if n == 3 {
			panic("nil map write in the handler")
		}
		return fmt.Errorf("attempt %d: payment service: 503 Service Unavailable", n)
	})
	opts := &queue.WorkerOptions{MaxAttempts: 3, Backoff: func(n int) time.Duration {
		if n == 1 {
			return 0
		}
		return time.Hour // the second failure waits, so that its release can be looked at
	}}
	// run runs a worker until attempt n has failed; Shutdown returns once
	// the worker has given the job back.
	run := func(n int32) {
		t.Helper()
		w, err := queue.NewWorker(q, h, opts)
		if err != nil {
			t.Fatal(err)
		}
		runWorker(t, w)
		for got := int32(0); got < n; {
			select {
			case got = <-failed:
			case <-ctx.Done():
				t.Fatalf("attempt %d never ran", n)
			}
		}
		if err := w.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
	}
	id, err := q.Put(ctx, "default", queue.NewJob{Body: []byte("charge")})
	if err != nil {
		t.Fatal(err)
	}
	run(2)
	st, err := q.StatsJob(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != queue.Delayed || st.LastError != "attempt 2: payment service: 503 Service Unavailable" ||
		st.LastErrorAt.IsZero() || !st.LastErrorAt.Equal(st.ReleasedAt) || st.Releases != 2 {
		t.Fatalf("after the second failure: %+v, want released with its error", st)
	}
	// The last attempt panics: buried with the panic as its last error.
	if err := q.KickJob(ctx, id); err != nil {
		t.Fatal(err)
	}
	run(3)
	st, err = q.StatsJob(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != queue.Buried || st.Reserves != 3 || st.Buries != 1 || st.LastError != "queue: handler panicked: nil map write in the handler" ||
		!st.LastErrorAt.Equal(st.BuriedAt) || st.BuriedAt.Before(st.ReleasedAt) || st.ReservedAt.After(st.BuriedAt) {
		t.Fatalf("after the last attempt: %+v, want buried with the handler's error", st)
	}
}

// TestWorkerCutsALongError: a handler's error longer than MaxReasonLen is
// kept cut to it.
func TestWorkerCutsALongError(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	q := newQueue(t)
	long := strings.Repeat("stack frame ", 200)
	handled := make(chan struct{})
	w, err := queue.NewWorker(q, queue.HandlerFunc(func(ctx context.Context, j queue.Job) error {
		defer close(handled)
		return errors.New(long)
	}), &queue.WorkerOptions{MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	runWorker(t, w)
	id, err := q.Put(ctx, "default", queue.NewJob{})
	if err != nil {
		t.Fatal(err)
	}
	<-handled
	if err := w.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	st, err := q.StatsJob(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != queue.Buried || st.LastError != long[:queue.MaxReasonLen] {
		t.Fatalf("%v with a LastError of %d bytes, want buried with the first %d of the handler's error", st.State, len(st.LastError), queue.MaxReasonLen)
	}
}

func TestWorkerBackoffDelaysTheRetry(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	q := newQueue(t)
	failed := make(chan struct{})
	var once sync.Once
	w, err := queue.NewWorker(q, queue.HandlerFunc(func(ctx context.Context, j queue.Job) error {
		once.Do(func() { close(failed) })
		return errors.New("later")
	}), &queue.WorkerOptions{Backoff: func(n int) time.Duration { return time.Duration(n) * time.Hour }})
	if err != nil {
		t.Fatal(err)
	}
	runWorker(t, w)
	id, err := q.Put(ctx, "default", queue.NewJob{Body: []byte("x")})
	if err != nil {
		t.Fatal(err)
	}
	<-failed
	if err := w.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	st, err := q.StatsJob(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != queue.Delayed || st.Delay != time.Hour {
		t.Fatalf("after the first failure: %+v, want delayed by the backoff (1h)", st)
	}
}

// A Worker touches a job whose handler runs long, at three quarters of
// its TTR on the Queue's clock: another reserver does not get the job
// while its handler runs, however many TTRs that clock moves on.
func TestWorkerTouchesLongJobs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	clk := storetest.NewClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	s, err := memstore.New(&memstore.Options{Clock: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	q, err := queue.New(s, &queue.Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Close(); s.Close() })
	const ttr = time.Second
	// Put before the Worker runs: its reserve takes the job at once, and
	// the one timer on the clock is the touch.
	id, err := q.Put(ctx, "default", queue.NewJob{Body: []byte("slow"), TTR: ttr})
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	started := make(chan queue.Job, 1)
	w, err := queue.NewWorker(q, queue.HandlerFunc(func(ctx context.Context, j queue.Job) error {
		started <- j
		<-release
		return nil
	}), nil)
	if err != nil {
		t.Fatal(err)
	}
	runWorker(t, w)
	<-started // the touch was armed before the handler started
	other := q.WithOwner("other")
	for i := range 4 { // 3 TTRs; Advance runs the touch before it returns
		clk.Advance(ttr * 3 / 4)
		if j, err := other.Reserve(ctx, queue.ReserveOptions{Timeout: -1}); !errors.Is(err, queue.ErrTimeout) {
			t.Fatalf("after %v: job %d reserved by another while its handler ran (%v)", time.Duration(i+1)*ttr*3/4, j.ID, err)
		}
	}
	close(release)
	if err := w.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Peek(ctx, id); !errors.Is(err, queue.ErrNotFound) {
		t.Fatalf("job still there after its handler succeeded: %v", err)
	}
}

func TestWorkerShutdownReturnsUnfinishedJobs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	q := newQueue(t)
	started := make(chan struct{})
	w, err := queue.NewWorker(q, queue.HandlerFunc(func(ctx context.Context, j queue.Job) error {
		close(started)
		<-ctx.Done() // runs until the worker gives up on it
		return ctx.Err()
	}), nil)
	if err != nil {
		t.Fatal(err)
	}
	done := runWorker(t, w)
	id, err := q.Put(ctx, "default", queue.NewJob{Body: []byte("x")})
	if err != nil {
		t.Fatal(err)
	}
	<-started
	sctx, scancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer scancel()
	if err := w.Shutdown(sctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown = %v, want the deadline's error", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Run = %v, want nil after Shutdown", err)
	}
	st, err := q.StatsJob(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != queue.Ready || st.Releases != 0 {
		t.Fatalf("job after shutdown: %+v, want ready with no release counted", st)
	}
}
