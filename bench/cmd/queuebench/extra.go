package main

import (
	"context"
	"fmt"
	"time"

	"github.com/hibiken/asynq"
	"github.com/hourglass-io/hourglass/queue"
)

// The workloads beyond the system interface, for the systems that have an
// API for them:
//
//	putdelayed     one-job puts with a delay while Concurrency workers wait
//	               on the same queue (delayedPutter)
//	reservedelete  Reserve then Delete of pre-filled jobs from Concurrency
//	               goroutines (reserveDeleter; the peers' nearest is their
//	               consume, which the targets compare it with)
//	latency        one caller alone: a put, then a reserve and a delete,
//	               each timed (singleCaller), to show what an idle caller pays

type delayedPutter interface {
	PutDelayed(ctx context.Context, e *env) (float64, error)
}

type reserveDeleter interface {
	ReserveDelete(ctx context.Context, e *env) (float64, error)
}

type singleCaller interface {
	// Latency returns the put and the reserve+delete latencies in ms (the
	// second with N == 0 when the system has no reserve).
	Latency(ctx context.Context, e *env) (put, rd latencyStats, err error)
}

// latencyOps is how many operations the latency workload times.
const latencyOps = 5000

// delayFor spreads the delays of putdelayed over 1 to 4 s.
func delayFor(i int) time.Duration { return time.Second + time.Duration(i%3000)*time.Millisecond }

func (hourglass) PutDelayed(ctx context.Context, e *env) (float64, error) {
	h, err := hgOpen(ctx, e, 1)
	if err != nil {
		return 0, err
	}
	defer h.close()
	cnt := newCounter(e.cfg.jobs)
	w, err := queue.NewWorker(h.q, queue.HandlerFunc(func(context.Context, queue.Job) error {
		cnt.inc()
		return nil
	}), &queue.WorkerOptions{Tubes: []string{hgTube}, Concurrency: e.cfg.concurrency})
	if err != nil {
		return 0, err
	}
	stop, err := hgRun(ctx, w)
	if err != nil {
		return 0, err
	}
	defer stop()
	b := body(e.cfg.body)
	rate, err := timedParallel(ctx, e.cfg.producers, e.cfg.jobs, e.cfg.jobs, func(ctx context.Context, i int) error {
		_, err := h.q.Put(ctx, hgTube, queue.NewJob{Body: b, Delay: delayFor(i)})
		return err
	})
	if err != nil {
		return 0, err
	}
	// Every job must come to a worker.
	if err := cnt.wait(ctx); err != nil {
		return 0, err
	}
	return rate, stop()
}

func (asynqSys) PutDelayed(ctx context.Context, e *env) (float64, error) {
	rc, cl := asynqOpen(e)
	defer rc.Close()
	defer cl.Close()
	cnt := newCounter(e.cfg.jobs)
	srv, err := asynqServer(e, rc, func(context.Context, *asynq.Task) error {
		cnt.inc()
		return nil
	})
	if err != nil {
		return 0, err
	}
	defer srv.Shutdown()
	b := body(e.cfg.body)
	rate, err := timedParallel(ctx, e.cfg.producers, e.cfg.jobs, e.cfg.jobs, func(ctx context.Context, i int) error {
		_, err := cl.EnqueueContext(ctx, asynq.NewTask(asynqTaskType, b), asynq.ProcessIn(delayFor(i)))
		return err
	})
	if err != nil {
		return 0, err
	}
	if err := cnt.wait(ctx); err != nil {
		return 0, err
	}
	return rate, nil
}

func (hourglass) ReserveDelete(ctx context.Context, e *env) (float64, error) {
	h, err := hgOpen(ctx, e, 1)
	if err != nil {
		return 0, err
	}
	defer h.close()
	b := body(e.cfg.body)
	if _, err := h.putBatches(ctx, 4, e.cfg.jobs, 1000, func(int) queue.NewJob { return queue.NewJob{Body: b} }); err != nil {
		return 0, fmt.Errorf("pre-fill: %w", err)
	}
	rate, err := timedParallel(ctx, e.cfg.concurrency, e.cfg.jobs, e.cfg.jobs, func(ctx context.Context, _ int) error {
		j, err := h.q.Reserve(ctx, queue.ReserveOptions{Tubes: []string{hgTube}, Timeout: -1})
		if err != nil {
			return err
		}
		return h.q.Delete(ctx, j.ID)
	})
	if err != nil {
		return 0, err
	}
	if err := waitEmpty(ctx, h.empty); err != nil {
		return 0, err
	}
	return rate, nil
}

func (hourglass) Latency(ctx context.Context, e *env) (latencyStats, latencyStats, error) {
	h, err := hgOpen(ctx, e, 1)
	if err != nil {
		return latencyStats{}, latencyStats{}, err
	}
	defer h.close()
	b := body(e.cfg.body)
	put := make([]float64, 0, latencyOps)
	for range latencyOps {
		start := time.Now()
		if _, err := h.q.Put(ctx, hgTube, queue.NewJob{Body: b}); err != nil {
			return latencyStats{}, latencyStats{}, err
		}
		put = append(put, msSince(start))
	}
	rd := make([]float64, 0, latencyOps)
	for range latencyOps {
		start := time.Now()
		j, err := h.q.Reserve(ctx, queue.ReserveOptions{Tubes: []string{hgTube}, Timeout: -1})
		if err != nil {
			return latencyStats{}, latencyStats{}, err
		}
		if err := h.q.Delete(ctx, j.ID); err != nil {
			return latencyStats{}, latencyStats{}, err
		}
		rd = append(rd, msSince(start))
	}
	return summarize(put), summarize(rd), nil
}

func (asynqSys) Latency(ctx context.Context, e *env) (latencyStats, latencyStats, error) {
	rc, cl := asynqOpen(e)
	defer rc.Close()
	defer cl.Close()
	b := body(e.cfg.body)
	put := make([]float64, 0, latencyOps)
	for range latencyOps {
		start := time.Now()
		if _, err := cl.EnqueueContext(ctx, asynq.NewTask(asynqTaskType, b)); err != nil {
			return latencyStats{}, latencyStats{}, err
		}
		put = append(put, msSince(start))
	}
	return summarize(put), latencyStats{}, nil
}

func msSince(t time.Time) float64 { return float64(time.Since(t)) / float64(time.Millisecond) }

// measureLatency runs the latency workload on one system.
func measureLatency(ctx context.Context, e *env, rep *report, round int, sys string, s singleCaller) error {
	return runWith(ctx, e, rep, round, "latency", sys, func(ctx context.Context) (string, []measurement, error) {
		put, rd, err := s.Latency(ctx, e)
		if err != nil {
			return "", nil, err
		}
		ms := []measurement{{"latency_put_p50", put.P50}, {"latency_put_p99", put.P99}}
		text := fmt.Sprintf("put p50 %.3f ms, p99 %.3f ms", put.P50, put.P99)
		if rd.N > 0 {
			ms = append(ms, measurement{"latency_rd_p50", rd.P50}, measurement{"latency_rd_p99", rd.P99})
			text += fmt.Sprintf("; reserve+delete p50 %.3f ms, p99 %.3f ms", rd.P50, rd.P99)
		}
		return text, ms, nil
	})
}
