package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/hibiken/asynq"
	"github.com/hourglass-io/hourglass/queue"
)

// The keptmemory workload: used_memory per finished job kept with its
// result for a retention of 60 s. Each system puts cfg.memJobs jobs with a
// cfg.body-byte body and a key of the caller's ("order-<n>": hourglass's
// unique key, asynq's task ID, BullMQ's job ID), runs them, and each run
// ends with a result of about 12 bytes ("result <n>") that the system
// keeps with the job:
//
//   - hourglass: Queue.SetRetention(60 s), Queue.Reserve + Queue.Finish(result),
//     8 goroutines;
//   - asynq: Enqueue(TaskID, Retention(60 s)), a Server whose handler
//     writes the result with ResultWriter;
//   - BullMQ: Queue.add(jobId, removeOnComplete: {age: 60}), a Worker whose
//     processor returns the result.
//
// The figure is (used_memory once every job is kept − before the puts) /
// cfg.memJobs, after a warm-up job.

const keptRetention = 60 * time.Second

func keptKey(i int) string    { return "order-" + strconv.Itoa(i) }
func keptResult(i int) string { return "result " + strconv.Itoa(i) }

// keptRunners adds the runners of the keptmemory workload.
func keptRunners(w string, add func(string, func(context.Context, *env) (string, []measurement, error))) {
	if w != "keptmemory" {
		return
	}
	add("hourglass", keptBytes(hgKeptMemory))
	add("asynq", keptBytes(asynqKeptMemory))
	add("bullmq", keptBytes(bullKeptMemory))
}

func keptBytes(fn func(ctx context.Context, e *env) (float64, error)) func(context.Context, *env) (string, []measurement, error) {
	return func(ctx context.Context, e *env) (string, []measurement, error) {
		v, err := fn(ctx, e)
		if err != nil {
			return "", nil, err
		}
		return fmt.Sprintf("%.0f B per kept job", v), []measurement{{"bytes_per_kept_job", v}}, nil
	}
}

func hgKeptMemory(ctx context.Context, e *env) (float64, error) {
	h, err := hgOpen(ctx, e, 1)
	if err != nil {
		return 0, err
	}
	defer h.close()
	if err := h.q.SetRetention(ctx, hgTube, keptRetention); err != nil {
		return 0, err
	}
	b := body(e.cfg.body)
	run := func(ctx context.Context, i int) error {
		_, err := h.q.Put(ctx, hgTube, queue.NewJob{Body: b, UniqueKey: keptKey(i)})
		return err
	}
	finish := func(ctx context.Context, _ int) error {
		j, err := h.q.Reserve(ctx, queue.ReserveOptions{Tubes: []string{hgTube}, Timeout: 10 * time.Second})
		if err != nil {
			return err
		}
		return h.q.Finish(ctx, j.ID, []byte(keptResult(int(j.ID%1000000))))
	}
	if err := run(ctx, -1); err != nil { // warm-up: tube created, scripts cached
		return 0, err
	}
	if err := finish(ctx, 0); err != nil {
		return 0, err
	}
	n := e.cfg.memJobs
	return measureMemory(ctx, e, func() error {
		if err := parallel(ctx, e.cfg.producers, n, run); err != nil {
			return err
		}
		if err := parallel(ctx, e.cfg.concurrency, n, finish); err != nil {
			return err
		}
		js, err := h.q.LookupKey(ctx, hgTube, keptKey(n-1))
		if err != nil || js.State != queue.Finished {
			return fmt.Errorf("the last job is not kept: %v %v", js.State, err)
		}
		return nil
	})
}

func asynqKeptMemory(ctx context.Context, e *env) (float64, error) {
	rc, cl := asynqOpen(e)
	defer rc.Close()
	defer cl.Close()
	b := body(e.cfg.body)
	n := e.cfg.memJobs
	cnt := newCounter(n + 1)
	srv, err := asynqServer(e, rc, func(_ context.Context, t *asynq.Task) error {
		id := t.ResultWriter().TaskID()
		if _, err := t.ResultWriter().Write([]byte("result " + id[len("order-"):])); err != nil {
			return err
		}
		cnt.inc()
		return nil
	})
	if err != nil {
		return 0, err
	}
	defer srv.Shutdown()
	put := func(ctx context.Context, i int) error {
		_, err := cl.EnqueueContext(ctx, asynq.NewTask(asynqTaskType, b), asynq.TaskID(keptKey(i)), asynq.Retention(keptRetention))
		return err
	}
	if err := put(ctx, -1); err != nil { // warm-up: queue registered, scripts cached
		return 0, err
	}
	ins := asynq.NewInspectorFromRedisClient(rc)
	completed := func() (int, error) {
		qi, err := ins.GetQueueInfo(asynqQueue)
		if err != nil {
			return 0, err
		}
		return qi.Completed, nil
	}
	if err := waitFor(ctx, func() (bool, error) { c, err := completed(); return c == 1, err }); err != nil {
		return 0, fmt.Errorf("warm-up: %w", err)
	}
	return measureMemory(ctx, e, func() error {
		if err := parallel(ctx, e.cfg.producers, n, put); err != nil {
			return err
		}
		return waitFor(ctx, func() (bool, error) { c, err := completed(); return c == n+1, err })
	})
}

func bullKeptMemory(ctx context.Context, e *env) (float64, error) {
	r, err := runNode(ctx, e, "keptmemory")
	return r.BytesPerJob, err
}

// waitFor calls done every 20 ms until it reports true or fails, or ctx
// ends.
func waitFor(ctx context.Context, done func() (bool, error)) error {
	for {
		ok, err := done()
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
