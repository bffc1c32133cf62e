package main

import (
	"context"
	"fmt"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
)

const (
	asynqQueue    = "default"
	asynqTaskType = "bench"
)

// asynqSys runs the workloads on github.com/hibiken/asynq.
type asynqSys struct{}

func (asynqSys) Name() string { return "asynq" }

func asynqOpen(e *env) (*redis.Client, *asynq.Client) {
	rc := redis.NewClient(&redis.Options{Addr: e.addr})
	return rc, asynq.NewClientFromRedisClient(rc)
}

func (asynqSys) Put(ctx context.Context, e *env) (float64, error) {
	rc, cl := asynqOpen(e)
	defer rc.Close()
	defer cl.Close()
	b := body(e.cfg.body)
	if _, err := cl.EnqueueContext(ctx, asynq.NewTask(asynqTaskType, b)); err != nil { // warm-up
		return 0, err
	}
	cpuBegin(ctx)
	rate, err := timedParallel(ctx, e.cfg.producers, e.cfg.jobs, e.cfg.jobs, func(ctx context.Context, _ int) error {
		_, err := cl.EnqueueContext(ctx, asynq.NewTask(asynqTaskType, b))
		return err
	})
	if err != nil {
		return 0, err
	}
	cpuEnd(ctx, "put", e.cfg.jobs)
	// Every task must be there: the warm-up one and cfg.jobs.
	if n, err := asynqLeft(ctx, e); err != nil || n != int64(e.cfg.jobs)+1 {
		return 0, fmt.Errorf("queue holds %d tasks, want %d (%v)", n, e.cfg.jobs+1, err)
	}
	return rate, nil
}

// PutBatch: asynq has no call that enqueues several tasks.
func (asynqSys) PutBatch(context.Context, *env) (float64, error) { return 0, errUnsupported }

// server starts an asynq.Server (Concurrency cfg.concurrency, the default
// queue, no retention: a completed task is deleted) running h.
func asynqServer(e *env, rc *redis.Client, h func(ctx context.Context, t *asynq.Task) error) (*asynq.Server, error) {
	srv := asynq.NewServerFromRedisClient(rc, asynq.Config{
		Concurrency:              e.cfg.concurrency,
		Queues:                   map[string]int{asynqQueue: 1},
		LogLevel:                 asynq.WarnLevel,
		TaskCheckInterval:        e.cfg.asynqPoll,
		DelayedTaskCheckInterval: e.cfg.asynqPoll,
		ShutdownTimeout:          5 * time.Second,
	})
	if err := srv.Start(asynq.HandlerFunc(h)); err != nil {
		return nil, err
	}
	return srv, nil
}

// asynqLeft counts the tasks of the queue not yet done (pending, active,
// scheduled, retry).
func asynqLeft(ctx context.Context, e *env) (int64, error) {
	p := e.admin.Pipeline()
	q := "asynq:{" + asynqQueue + "}:"
	cmds := []*redis.IntCmd{
		p.LLen(ctx, q+"pending"), p.LLen(ctx, q+"active"),
		p.ZCard(ctx, q+"scheduled"), p.ZCard(ctx, q+"retry"),
	}
	if _, err := p.Exec(ctx); err != nil {
		return 0, err
	}
	var n int64
	for _, c := range cmds {
		n += c.Val()
	}
	return n, nil
}

func (asynqSys) Consume(ctx context.Context, e *env) (float64, error) {
	rc, cl := asynqOpen(e)
	defer rc.Close()
	defer cl.Close()
	b := body(e.cfg.body)
	if err := parallel(ctx, e.cfg.producers, e.cfg.jobs, func(ctx context.Context, _ int) error {
		_, err := cl.EnqueueContext(ctx, asynq.NewTask(asynqTaskType, b))
		return err
	}); err != nil {
		return 0, fmt.Errorf("pre-fill: %w", err)
	}
	cnt := newCounter(e.cfg.jobs)
	cpuBegin(ctx)
	start := time.Now()
	srv, err := asynqServer(e, rc, func(context.Context, *asynq.Task) error {
		cnt.inc()
		return nil
	})
	if err != nil {
		return 0, err
	}
	defer srv.Shutdown()
	if err := cnt.wait(ctx); err != nil {
		return 0, err
	}
	if err := waitEmpty(ctx, func(ctx context.Context) (bool, error) {
		n, err := asynqLeft(ctx, e)
		return n == 0, err
	}); err != nil {
		return 0, err
	}
	rate := float64(e.cfg.jobs) / time.Since(start).Seconds()
	cpuEnd(ctx, "consume", e.cfg.jobs)
	srv.Shutdown()
	// Completed tasks must be gone, not retained.
	q := "asynq:{" + asynqQueue + "}:"
	if n, err := e.admin.ZCard(ctx, q+"completed").Result(); err != nil || n != 0 {
		return 0, fmt.Errorf("asynq retained %d completed tasks (%v)", n, err)
	}
	if keys, err := e.admin.Keys(ctx, q+"t:*").Result(); err != nil || len(keys) != 0 {
		return 0, fmt.Errorf("asynq left %d task hashes (%v)", len(keys), err)
	}
	return rate, nil
}

func (asynqSys) Lateness(ctx context.Context, e *env) (latencyStats, error) {
	rc, cl := asynqOpen(e)
	defer rc.Close()
	defer cl.Close()
	n := e.cfg.delayJobs
	rec := newLateRecorder(n)
	srv, err := asynqServer(e, rc, func(_ context.Context, t *asynq.Task) error {
		rec.add(lateness(t.Payload(), time.Now()))
		return nil
	})
	if err != nil {
		return latencyStats{}, err
	}
	defer srv.Shutdown()
	ds := delays(n, e.cfg.minDelay, e.cfg.maxDelay)
	err = parallel(ctx, e.cfg.producers, n, func(ctx context.Context, i int) error {
		due := time.Now().Add(ds[i])
		_, err := cl.EnqueueContext(ctx, asynq.NewTask(asynqTaskType, dueBody(e.cfg.body, due)), asynq.ProcessAt(due))
		return err
	})
	if err != nil {
		return latencyStats{}, err
	}
	if err := rec.c.wait(ctx); err != nil {
		return latencyStats{}, err
	}
	return rec.stats(), nil
}

func (asynqSys) Memory(ctx context.Context, e *env) (float64, error) {
	rc, cl := asynqOpen(e)
	defer rc.Close()
	defer cl.Close()
	b := body(e.cfg.body)
	put := func(ctx context.Context, _ int) error {
		_, err := cl.EnqueueContext(ctx, asynq.NewTask(asynqTaskType, b), asynq.ProcessIn(time.Hour))
		return err
	}
	if err := put(ctx, 0); err != nil { // warm-up: queue registered, scripts cached
		return 0, err
	}
	return measureMemory(ctx, e, func() error {
		return parallel(ctx, e.cfg.producers, e.cfg.memJobs, put)
	})
}
