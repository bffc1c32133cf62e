package queue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/hourglass-io/hourglass/internal/wait"
)

// Handler processes one job. Returning nil deletes the job; an error
// releases it with a backoff delay, or buries it once it has been reserved
// WorkerOptions.MaxAttempts times, and its text becomes the job's last
// error (JobStats.LastError, cut to MaxReasonLen bytes). The context ends when the worker gives
// up on the job (shutdown deadline), loses it (a touch failed), or the job is
// cancelled (Queue.Cancel, from any process): its cause (context.Cause) is
// then a *CancelError, errors.Is ErrCancelled, and whatever the handler
// returns, the job is gone: it is neither deleted, released nor buried.
type Handler interface {
	HandleJob(ctx context.Context, job Job) error
}

// HandlerFunc adapts a function to a Handler.
type HandlerFunc func(ctx context.Context, job Job) error

// HandleJob calls f(ctx, job).
func (f HandlerFunc) HandleJob(ctx context.Context, job Job) error { return f(ctx, job) }

// WorkerOptions configure a Worker. The zero value (or nil) means the defaults.
type WorkerOptions struct {
	// Tubes to take jobs from; default "default".
	Tubes []string
	// Concurrency is how many jobs run at once; default 1.
	Concurrency int
	// MaxAttempts is how many reservations a job gets before a failure
	// buries it instead of releasing it; default 10.
	MaxAttempts int
	// Backoff is the delay of the release after the n-th failed attempt
	// (n from 1); default 1s·2^(n-1), at most one hour.
	Backoff func(attempt int) time.Duration
	// Logger receives failures of handlers and of the store; default slog.Default().
	Logger *slog.Logger
}

func (o *WorkerOptions) concurrency() int {
	if o == nil || o.Concurrency <= 0 {
		return 1
	}
	return o.Concurrency
}

func (o *WorkerOptions) maxAttempts() int {
	if o == nil || o.MaxAttempts <= 0 {
		return 10
	}
	return o.MaxAttempts
}

func (o *WorkerOptions) backoff(n int) time.Duration {
	if o != nil && o.Backoff != nil {
		return o.Backoff(n)
	}
	if n > 13 {
		return time.Hour
	}
	return min(time.Second<<(n-1), time.Hour)
}

func (o *WorkerOptions) logger() *slog.Logger {
	if o == nil || o.Logger == nil {
		return slog.Default()
	}
	return o.Logger
}

// Worker runs a Handler over the jobs of some tubes, Concurrency at a time.
// While a handler runs past three quarters of its job's TTR (on the
// Queue's Options.Clock), the worker touches the job. A finished job is deleted and the next one reserved in
// one call to the store.
type Worker struct {
	q    *Queue
	h    Handler
	opts WorkerOptions

	mu       sync.Mutex
	running  bool
	stop     context.CancelFunc // stops reserving
	abandon  context.CancelFunc // cancels running handlers
	finished chan struct{}
}

// NewWorker returns a Worker that takes jobs from q for h. Its
// reservations belong to q's owner.
func NewWorker(q *Queue, h Handler, opts *WorkerOptions) (*Worker, error) {
	w := &Worker{q: q, h: h}
	if opts != nil {
		w.opts = *opts
	}
	if _, err := checkTubes(w.opts.Tubes); err != nil {
		return nil, err
	}
	if w.opts.Concurrency < 0 || w.opts.MaxAttempts < 0 {
		return nil, invalid("WorkerOptions", "Concurrency and MaxAttempts must not be negative")
	}
	return w, nil
}

// Run processes jobs until ctx ends or Shutdown is called, and returns once
// every handler has returned and every job still held has been released.
// It returns nil after Shutdown, ctx.Err() when ctx ended, and otherwise
// the error that stopped it.
func (w *Worker) Run(ctx context.Context) error {
	w.mu.Lock()
	if w.running {
		w.mu.Unlock()
		return errors.New("queue: worker already running")
	}
	w.running = true
	rctx, stop := context.WithCancel(ctx)
	hctx, abandon := context.WithCancel(context.WithoutCancel(ctx))
	w.stop, w.abandon = stop, abandon
	w.finished = make(chan struct{})
	w.mu.Unlock()
	defer close(w.finished)
	defer abandon()

	// Cancels of the jobs it will hold are heard from before the first
	// reserve, so none is missed.
	tubes, _ := checkTubes(w.opts.Tubes)
	cn, unlisten, err := w.q.listenCancels(rctx, tubes)
	if err != nil {
		return err
	}
	defer unlisten()
	var wg sync.WaitGroup
	if cn != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cn.check(hctx)
		}()
	}
	errs := make(chan error, w.opts.concurrency())
	var slots sync.WaitGroup
	for range w.opts.concurrency() {
		slots.Add(1)
		go func() {
			defer slots.Done()
			if err := w.loop(rctx, hctx, cn); err != nil {
				errs <- err
				stop()
			}
		}()
	}
	slots.Wait()
	abandon()
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return nil
}

// Shutdown stops reserving, waits for running handlers until ctx ends, then
// cancels the handlers still running and releases their jobs. It returns
// once Run has returned, or ctx.Err() if handlers were cut short.
func (w *Worker) Shutdown(ctx context.Context) error {
	w.mu.Lock()
	if !w.running {
		w.mu.Unlock()
		return nil
	}
	stop, abandon, finished := w.stop, w.abandon, w.finished
	w.mu.Unlock()
	stop()
	select {
	case <-finished:
		return nil
	case <-ctx.Done():
		abandon()
		<-finished
		return ctx.Err()
	}
}

// loop is one of the Concurrency slots: reserve, handle, repeat.
func (w *Worker) loop(rctx, hctx context.Context, cn *cancels) error {
	log := w.opts.logger()
	var done []ID // finished jobs to delete with the next reserve
	ropts := ReserveOptions{Tubes: w.opts.Tubes}
	for {
		if rctx.Err() != nil {
			break
		}
		jobs, delErrs, err := w.q.reserve(rctx, ropts, 1, done)
		if delErrs != nil {
			for i, e := range delErrs {
				if e != nil {
					log.Warn("queue: deleting a finished job", "id", done[i], "err", e)
				}
			}
			done = nil
		} // else the deletes did not happen (the reserve failed first): keep them

		if err != nil {
			if rctx.Err() != nil {
				break
			}
			if errors.Is(err, ErrClosed) {
				return err
			}
			log.Error("queue: reserve", "err", err)
			// A failing store: do not spin (nothing wakes the Waiter).
			_, _ = wait.NewOn(w.q.clock).Wait(rctx, w.q.clock.Now().Add(time.Second), 0)
			continue
		}
		job := jobs[0]
		if w.handle(hctx, job, cn) {
			done = append(done, job.ID)
		}
	}
	if len(done) > 0 {
		// Stopping: delete the finished jobs on their own.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(hctx), 5*time.Second)
		defer cancel()
		errs, err := w.q.DeleteMany(ctx, done)
		if err != nil {
			log.Warn("queue: deleting finished jobs", "ids", done, "err", err)
		}
		for i, e := range errs {
			if e != nil {
				log.Warn("queue: deleting a finished job", "id", done[i], "err", e)
			}
		}
	}
	return nil
}

// handle runs the handler on job, touching it as its TTR nears its end. It
// reports whether the job succeeded (to be deleted); a failed job has been
// released or buried, a cancelled one left alone (it is gone).
func (w *Worker) handle(hctx context.Context, job Job, cn *cancels) bool {
	log := w.opts.logger()
	ctx, cancelCause := context.WithCancelCause(hctx)
	cancel := func() { cancelCause(nil) }
	defer cancel()
	cn.watch(job.ID, cancelCause)
	defer cn.unwatch(job.ID)

	// Touch at 3/4 of the TTR, again and again, until the handler returns.
	var (
		tmu     sync.Mutex
		stopped bool
		timer   wait.Timer
	)
	every := job.TTR * 3 / 4
	var touch func()
	touch = func() {
		tmu.Lock()
		defer tmu.Unlock()
		if stopped {
			return
		}
		tctx, tcancel := context.WithTimeout(ctx, job.TTR/4)
		_, err := w.q.Touch(tctx, job.ID)
		tcancel()
		if err != nil {
			log.Warn("queue: touch failed; the job may go to another worker", "id", job.ID, "err", err)
			cancel()
			return
		}
		timer.Reset(every)
	}
	tmu.Lock()
	timer = w.q.clock.AfterFunc(every, touch)
	tmu.Unlock()
	pctx, span := w.q.startProcess(ctx, job)
	err := w.run(pctx, job)
	tmu.Lock()
	stopped = true
	timer.Stop()
	tmu.Unlock()

	var ce *CancelError
	if errors.As(context.Cause(ctx), &ce) {
		log.Info("queue: job cancelled", "id", job.ID, "reason", ce.Reason)
		if span != nil {
			settled(pctx, "cancel", job.ID, ce.Reason, 0, nil)
			span.End()
		}
		return false
	}
	if err == nil {
		if span != nil {
			// deleted with the worker's next reserve
			settled(pctx, "delete", job.ID, "", 0, nil)
			span.End()
		}
		return true
	}
	if span != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		defer span.End()
	}
	// The job failed or was abandoned: give it back.
	bctx, bcancel := context.WithTimeout(context.WithoutCancel(hctx), 5*time.Second)
	defer bcancel()
	sctx := bctx // with the process span, for the release's or bury's event
	if span != nil {
		sctx = trace.ContextWithSpan(bctx, span)
	}
	switch {
	case hctx.Err() != nil:
		// Shutdown cut the handler short: back to ready, no attempt counted.
		_, e := w.q.store.Unreserve(bctx, w.q.owner, []ID{job.ID})
		if e != nil {
			log.Warn("queue: returning an abandoned job", "id", job.ID, "err", e)
		}
		settled(pctx, "abandon", job.ID, err.Error(), 0, e)
	case int(job.Reserves) >= w.opts.maxAttempts():
		log.Warn("queue: job failed for the last time; burying it", "id", job.ID, "attempts", job.Reserves, "err", err)
		if e := w.q.BuryWithReason(sctx, job.ID, job.Priority, err.Error()); e != nil {
			log.Warn("queue: burying a failed job", "id", job.ID, "err", e)
		}
	default:
		delay := w.opts.backoff(int(job.Reserves))
		log.Info("queue: job failed; releasing it", "id", job.ID, "attempt", job.Reserves, "delay", delay, "err", err)
		if e := w.q.ReleaseWithReason(sctx, job.ID, job.Priority, delay, err.Error()); e != nil {
			log.Warn("queue: releasing a failed job", "id", job.ID, "err", e)
		}
	}
	return false
}

// run calls the handler, turning a panic into an error.
func (w *Worker) run(ctx context.Context, job Job) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("queue: handler panicked: %v", r)
		}
	}()
	return w.h.HandleJob(ctx, job)
}
