package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/redisstore"
	"github.com/redis/go-redis/v9"
)

const hgTube = "bench"

// hourglass runs the workloads on queue.Queue over redisstore.
type hourglass struct{}

func (hourglass) Name() string { return "hourglass" }

// hgConn is one Queue over one Store over one go-redis client.
type hgConn struct {
	c  redis.UniversalClient
	st *redisstore.Store
	q  *queue.Queue
}

// hgOpen connects to addrs: one address is a standalone server, several
// are the nodes of a cluster. parts is the number of partitions of the tube.
func hgOpen(ctx context.Context, e *env, parts int) (*hgConn, error) {
	var c redis.UniversalClient
	if len(e.cluster) > 0 {
		c = redis.NewClusterClient(&redis.ClusterOptions{Addrs: e.cluster, MaxRetries: -1})
	} else {
		c = redis.NewClient(&redis.Options{Addr: e.addr, MaxRetries: -1})
	}
	var opts *redisstore.Options
	if parts > 1 {
		opts = &redisstore.Options{Partitions: func(string) int { return parts }}
	}
	st, err := redisstore.New(ctx, c, opts)
	if err != nil {
		_ = c.Close()
		return nil, err
	}
	q, err := queue.New(st, nil)
	if err != nil {
		_ = st.Close()
		_ = c.Close()
		return nil, err
	}
	return &hgConn{c: c, st: st, q: q}, nil
}

func (h *hgConn) close() {
	_ = h.q.Close()
	_ = h.st.Close()
	_ = h.c.Close()
}

// empty reports whether the tube holds no job.
func (h *hgConn) empty(ctx context.Context) (bool, error) {
	ts, err := h.q.StatsTube(ctx, hgTube)
	if errors.Is(err, queue.ErrNotFound) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	return ts.Ready+ts.Reserved+ts.Delayed+ts.Buried == 0, nil
}

// putBatches puts n jobs made by mk in PutMany calls of batch jobs each,
// on producers goroutines, and returns jobs/s.
func (h *hgConn) putBatches(ctx context.Context, producers, n, batch int, mk func(i int) queue.NewJob) (float64, error) {
	calls := (n + batch - 1) / batch
	return timedParallel(ctx, producers, calls, n, func(ctx context.Context, c int) error {
		lo, hi := c*batch, min((c+1)*batch, n)
		jobs := make([]queue.NewJob, hi-lo)
		for i := range jobs {
			jobs[i] = mk(lo + i)
		}
		_, err := h.q.PutMany(ctx, hgTube, jobs)
		return err
	})
}

func (hourglass) Put(ctx context.Context, e *env) (float64, error) {
	return hgPut(ctx, e, 1, 1)
}

func (hourglass) PutBatch(ctx context.Context, e *env) (float64, error) {
	return hgPut(ctx, e, 1, e.cfg.batch)
}

// hgPut measures puts of cfg.jobs jobs, batch per call (1: Put).
func hgPut(ctx context.Context, e *env, parts, batch int) (float64, error) {
	h, err := hgOpen(ctx, e, parts)
	if err != nil {
		return 0, err
	}
	defer h.close()
	b := body(e.cfg.body)
	if _, err := h.q.Put(ctx, hgTube, queue.NewJob{Body: b}); err != nil { // warm-up
		return 0, err
	}
	var rate float64
	cpuBegin(ctx)
	if batch == 1 {
		rate, err = timedParallel(ctx, e.cfg.producers, e.cfg.jobs, e.cfg.jobs, func(ctx context.Context, _ int) error {
			_, err := h.q.Put(ctx, hgTube, queue.NewJob{Body: b})
			return err
		})
	} else {
		rate, err = h.putBatches(ctx, e.cfg.producers, e.cfg.jobs, batch, func(int) queue.NewJob { return queue.NewJob{Body: b} })
	}
	if err != nil {
		return 0, err
	}
	cpuEnd(ctx, map[bool]string{true: "put", false: "put_batch"}[batch == 1], e.cfg.jobs)
	// Every job must be there: the warm-up one and cfg.jobs.
	ts, err := h.q.StatsTube(ctx, hgTube)
	if err != nil {
		return 0, err
	}
	if ts.Ready != int64(e.cfg.jobs)+1 {
		return 0, fmt.Errorf("tube holds %d ready jobs, want %d", ts.Ready, e.cfg.jobs+1)
	}
	return rate, nil
}

func (hourglass) Consume(ctx context.Context, e *env) (float64, error) {
	return hgConsume(ctx, e, 1)
}

// hgConsume pre-fills cfg.jobs jobs and measures a queue.Worker draining them.
func hgConsume(ctx context.Context, e *env, parts int) (float64, error) {
	h, err := hgOpen(ctx, e, parts)
	if err != nil {
		return 0, err
	}
	defer h.close()
	b := body(e.cfg.body)
	if _, err := h.putBatches(ctx, 4, e.cfg.jobs, 1000, func(int) queue.NewJob { return queue.NewJob{Body: b} }); err != nil {
		return 0, fmt.Errorf("pre-fill: %w", err)
	}
	cnt := newCounter(e.cfg.jobs)
	w, err := queue.NewWorker(h.q, queue.HandlerFunc(func(context.Context, queue.Job) error {
		cnt.inc()
		return nil
	}), &queue.WorkerOptions{Tubes: []string{hgTube}, Concurrency: e.cfg.concurrency})
	if err != nil {
		return 0, err
	}
	cpuBegin(ctx)
	start := time.Now()
	stop, err := hgRun(ctx, w)
	if err != nil {
		return 0, err
	}
	defer stop()
	if err := cnt.wait(ctx); err != nil {
		return 0, err
	}
	if err := waitEmpty(ctx, h.empty); err != nil {
		return 0, err
	}
	rate := float64(e.cfg.jobs) / time.Since(start).Seconds()
	cpuEnd(ctx, "consume", e.cfg.jobs)
	return rate, stop()
}

// hgRun starts w.Run; the returned stop shuts it down and waits for Run
// (it may be called more than once).
func hgRun(ctx context.Context, w *queue.Worker) (stop func() error, err error) {
	rctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() { errc <- w.Run(rctx) }()
	var res error
	stopped := false
	return func() error {
		if stopped {
			return res
		}
		stopped = true
		sctx, scancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer scancel()
		res = w.Shutdown(sctx)
		cancel()
		select {
		case err := <-errc:
			if err != nil && !errors.Is(err, context.Canceled) && res == nil {
				res = fmt.Errorf("worker: %w", err)
			}
		case <-sctx.Done():
			res = errors.New("worker did not stop within 10 s")
		}
		return res
	}, nil
}

func (hourglass) Lateness(ctx context.Context, e *env) (latencyStats, error) {
	h, err := hgOpen(ctx, e, 1)
	if err != nil {
		return latencyStats{}, err
	}
	defer h.close()
	n := e.cfg.delayJobs
	rec := newLateRecorder(n)
	w, err := queue.NewWorker(h.q, queue.HandlerFunc(func(_ context.Context, j queue.Job) error {
		rec.add(lateness(j.Body, time.Now()))
		return nil
	}), &queue.WorkerOptions{Tubes: []string{hgTube}, Concurrency: e.cfg.concurrency})
	if err != nil {
		return latencyStats{}, err
	}
	stop, err := hgRun(ctx, w)
	if err != nil {
		return latencyStats{}, err
	}
	defer stop()
	ds := delays(n, e.cfg.minDelay, e.cfg.maxDelay)
	err = parallel(ctx, e.cfg.producers, n, func(ctx context.Context, i int) error {
		due := time.Now().Add(ds[i])
		_, err := h.q.Put(ctx, hgTube, queue.NewJob{Body: dueBody(e.cfg.body, due), Delay: ds[i]})
		return err
	})
	if err != nil {
		return latencyStats{}, err
	}
	if err := rec.c.wait(ctx); err != nil {
		return latencyStats{}, err
	}
	return rec.stats(), stop()
}

func (hourglass) Memory(ctx context.Context, e *env) (float64, error) {
	h, err := hgOpen(ctx, e, 1)
	if err != nil {
		return 0, err
	}
	defer h.close()
	b := body(e.cfg.body)
	mk := func(int) queue.NewJob { return queue.NewJob{Body: b, Delay: time.Hour} }
	if _, err := h.q.Put(ctx, hgTube, mk(0)); err != nil { // warm-up: tube created, scripts cached
		return 0, err
	}
	return measureMemory(ctx, e, func() error {
		_, err := h.putBatches(ctx, e.cfg.producers, e.cfg.memJobs, e.cfg.batch, mk)
		return err
	})
}

// measureMemory returns (used_memory after put - before) / cfg.memJobs.
func measureMemory(ctx context.Context, e *env, put func() error) (float64, error) {
	before, err := usedMemory(ctx, e.admin)
	if err != nil {
		return 0, err
	}
	if err := put(); err != nil {
		return 0, err
	}
	after, err := usedMemory(ctx, e.admin)
	if err != nil {
		return 0, err
	}
	return float64(after-before) / float64(e.cfg.memJobs), nil
}

// ClusterPut and ClusterConsume run on e.cluster with parts partitions.
func (hourglass) ClusterPut(ctx context.Context, e *env, parts int) (float64, error) {
	return hgPut(ctx, e, parts, 1)
}

func (hourglass) ClusterConsume(ctx context.Context, e *env, parts int) (float64, error) {
	return hgConsume(ctx, e, parts)
}
