package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hibiken/asynq"
	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/schedule"
	"github.com/redis/go-redis/v9"
)

// The schedule workloads: hourglass's schedule.Client beside asynq's
// Scheduler and BullMQ's job schedulers (bench.mjs).
//
//   - schedfires: cfg.schedules schedules "@every 1s" (more fires per
//     second than any system puts), cfg.schedInstances instances firing
//     them; after cfg.schedWarmup, the jobs put during cfg.schedWindow per
//     second, and the jobs put per tick fired. BullMQ's schedulers put a
//     tick's job only when a worker takes the previous one, so BullMQ runs
//     with a worker and the figure is jobs processed per second; hourglass
//     runs that way too, beside it.
//   - schedlateness: cfg.schedLateSchedules schedules "@every 1s" and
//     cfg.schedLateInstances instances, each firing and consuming, for
//     cfg.schedWindow: lateness = time the consumer received the job - tick,
//     and duplicates (jobs beyond the first of one schedule and tick).
//   - schedmemory: used_memory per schedule of cfg.schedMemSchedules cron
//     schedules (asynq keeps its schedules in the process's memory).

// schedSpec is the spec of every schedule of the fires and lateness
// workloads; bench.mjs uses the seconds cron pattern "* * * * * *", which
// ticks on the same whole seconds.
const schedSpec = "@every 1s"

// schedName is the name of schedule i; it is also the body of its jobs.
func schedName(i int) string { return "s" + strconv.Itoa(i) }

// hgSchedules opens instances hgConns, sets n schedules through the first
// and returns the conns (closed by the returned func). The jobs' TTR is
// set explicitly: redisstore puts a schedule's job with TTR 0 as a job
// whose reservation ends at once, not with queue.DefaultTTR.
func hgSchedules(ctx context.Context, e *env, instances, n int, spec string) ([]*hgConn, func(), error) {
	var hs []*hgConn
	closeAll := func() {
		for _, h := range hs {
			h.close()
		}
	}
	for range instances {
		h, err := hgOpen(ctx, e, 1)
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		hs = append(hs, h)
	}
	c, err := schedule.New(hs[0].st.Schedules(), nil)
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	if err := parallel(ctx, 16, n, func(ctx context.Context, i int) error {
		name := schedName(i)
		_, err := c.Set(ctx, schedule.Schedule{Name: name, Spec: spec, Job: schedule.Job{Tube: hgTube, Body: []byte(name), TTR: queue.DefaultTTR}})
		return err
	}); err != nil {
		closeAll()
		return nil, nil, fmt.Errorf("set %d schedules: %w", n, err)
	}
	return hs, closeAll, nil
}

// fireKey is one tick of one schedule.
type fireKey struct {
	name string
	tick int64 // unix ms
}

// fireLog records the fires the Clients report (schedule.Options.OnFire).
type fireLog struct {
	mu    sync.Mutex
	n     int64
	ticks map[fireKey]int
	jobs  map[queue.ID]fireKey
}

func newFireLog() *fireLog {
	return &fireLog{ticks: map[fireKey]int{}, jobs: map[queue.ID]fireKey{}}
}

func (l *fireLog) onFire(name string, f schedule.Fire) {
	k := fireKey{name, f.Tick.UnixMilli()}
	l.mu.Lock()
	l.n++
	l.ticks[k]++
	l.jobs[queue.ID(f.JobID)] = k
	l.mu.Unlock()
}

func (l *fireLog) count() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n
}

// hgRunClients starts a schedule.Client on each conn; stop ends them and
// waits.
func hgRunClients(ctx context.Context, hs []*hgConn, log *fireLog) (stop func(), err error) {
	rctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, h := range hs {
		c, err := schedule.New(h.st.Schedules(), &schedule.Options{OnFire: log.onFire})
		if err != nil {
			cancel()
			wg.Wait()
			return nil, err
		}
		wg.Go(func() { _ = c.Run(rctx) })
	}
	return func() { cancel(); wg.Wait() }, nil
}

// pause waits d or until ctx ends.
func pause(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-time.After(d):
		return nil
	}
}

// window waits cfg.schedWarmup, then reads count at the start and end of
// cfg.schedWindow and returns its increase per second.
func window(ctx context.Context, e *env, count func(context.Context) (int64, error)) (float64, error) {
	if err := pause(ctx, e.cfg.schedWarmup); err != nil {
		return 0, err
	}
	n0, err := count(ctx)
	if err != nil {
		return 0, err
	}
	t0 := time.Now()
	if err := pause(ctx, e.cfg.schedWindow); err != nil {
		return 0, err
	}
	n1, err := count(ctx)
	if err != nil {
		return 0, err
	}
	return float64(n1-n0) / time.Since(t0).Seconds(), nil
}

// hgSchedFires: cfg.schedules schedules fired by instances Clients, each on
// its own Store and go-redis client, nothing consuming: jobs put per second
// in the window (the tube's ready jobs), and, over the whole run once the
// Clients stopped, jobs put / distinct ticks fired.
func hgSchedFires(instances int) func(context.Context, *env) (string, []measurement, error) {
	return func(ctx context.Context, e *env) (string, []measurement, error) {
		hs, closeAll, err := hgSchedules(ctx, e, instances, e.cfg.schedules, schedSpec)
		if err != nil {
			return "", nil, err
		}
		defer closeAll()
		ready := func(ctx context.Context) (int64, error) {
			ts, err := hs[0].q.StatsTube(ctx, hgTube)
			return ts.Ready, err
		}
		log := newFireLog()
		stop, err := hgRunClients(ctx, hs, log)
		if err != nil {
			return "", nil, err
		}
		rate, err := window(ctx, e, ready)
		stop()
		if err != nil {
			return "", nil, err
		}
		jobs, err := ready(ctx)
		if err != nil {
			return "", nil, err
		}
		perTick := float64(jobs) / float64(len(log.ticks))
		suffix := strconv.Itoa(instances)
		return fmt.Sprintf("%.0f jobs/s; %d jobs, %d fires reported, %d distinct ticks: %.3f jobs per tick", rate, jobs, log.count(), len(log.ticks), perTick),
			[]measurement{{"sched_fires_" + suffix, rate}, {"sched_jobs_per_tick_" + suffix, perTick}, {"sched_unique_" + suffix, uniquePerSec(rate, perTick)}}, nil
	}
}

// hgSchedProcessed is hgSchedFires with one Client and a queue.Worker
// (Concurrency cfg.concurrency) deleting the jobs: jobs processed per
// second in the window, the measure BullMQ's schedulers allow.
func hgSchedProcessed(ctx context.Context, e *env) (string, []measurement, error) {
	hs, closeAll, err := hgSchedules(ctx, e, 1, e.cfg.schedules, schedSpec)
	if err != nil {
		return "", nil, err
	}
	defer closeAll()
	var done atomic.Int64
	w, err := queue.NewWorker(hs[0].q, queue.HandlerFunc(func(context.Context, queue.Job) error {
		done.Add(1)
		return nil
	}), &queue.WorkerOptions{Tubes: []string{hgTube}, Concurrency: e.cfg.concurrency})
	if err != nil {
		return "", nil, err
	}
	stopW, err := hgRun(ctx, w)
	if err != nil {
		return "", nil, err
	}
	defer stopW()
	log := newFireLog()
	stop, err := hgRunClients(ctx, hs, log)
	if err != nil {
		return "", nil, err
	}
	rate, err := window(ctx, e, func(context.Context) (int64, error) { return done.Load(), nil })
	stop()
	if err != nil {
		return "", nil, err
	}
	return fmt.Sprintf("%.0f jobs processed/s", rate), []measurement{{"sched_processed", rate}}, stopW()
}

// asynqSchedulers starts instances asynq Schedulers, each on its own
// go-redis client, each with cfg's n entries; the hooks count enqueues.
type asynqScheds struct {
	rcs    []*redis.Client
	ss     []*asynq.Scheduler
	pre    []atomic.Int64 // ticks started, per scheduler
	ok     atomic.Int64   // tasks enqueued
	failed atomic.Int64
	post   func(info *asynq.TaskInfo, at time.Time)
}

func startAsynqSchedulers(e *env, instances, n int, spec string, post func(*asynq.TaskInfo, time.Time)) (*asynqScheds, error) {
	a := &asynqScheds{pre: make([]atomic.Int64, instances), post: post}
	for i := range instances {
		rc := redis.NewClient(&redis.Options{Addr: e.addr})
		s := asynq.NewSchedulerFromRedisClient(rc, &asynq.SchedulerOpts{
			LogLevel:       asynq.FatalLevel,
			PreEnqueueFunc: func(*asynq.Task, []asynq.Option) { a.pre[i].Add(1) },
			PostEnqueueFunc: func(info *asynq.TaskInfo, err error) {
				if err != nil {
					a.failed.Add(1)
					return
				}
				a.ok.Add(1)
				if a.post != nil {
					a.post(info, time.Now())
				}
			},
		})
		a.rcs, a.ss = append(a.rcs, rc), append(a.ss, s)
		for k := range n {
			if _, err := s.Register(spec, asynq.NewTask(asynqTaskType, []byte(schedName(k)))); err != nil {
				a.stop()
				return nil, err
			}
		}
	}
	for _, s := range a.ss {
		if err := s.Start(); err != nil {
			a.stop()
			return nil, err
		}
	}
	return a, nil
}

// stop shuts the schedulers down (waiting for their enqueues in flight).
func (a *asynqScheds) stop() {
	var wg sync.WaitGroup
	for _, s := range a.ss {
		wg.Go(s.Shutdown)
	}
	wg.Wait()
	for _, rc := range a.rcs {
		_ = rc.Close()
	}
	a.ss, a.rcs = nil, nil
}

// ticks is the most ticks one scheduler started: every scheduler starts
// the same ticks of the same entries.
func (a *asynqScheds) ticks() int64 {
	var m int64
	for i := range a.pre {
		m = max(m, a.pre[i].Load())
	}
	return m
}

func asynqPending(ctx context.Context, e *env) (int64, error) {
	return e.admin.LLen(ctx, "asynq:{"+asynqQueue+"}:pending").Result()
}

// asynqSchedFires is hgSchedFires with instances asynq Schedulers, each
// with cfg.schedAsynqSchedules entries: jobs enqueued per second in the
// window (the pending list), and, once the schedulers stopped, tasks
// enqueued / ticks started by one scheduler. A Scheduler starts a goroutine
// per entry and tick, each enqueueing on its own; with 100,000 entries one
// Scheduler started one tick in 13 s and took 45 s to shut down, so
// asynq runs with fewer entries (still more fires per second than it
// puts).
func asynqSchedFires(instances int) func(context.Context, *env) (string, []measurement, error) {
	return func(ctx context.Context, e *env) (string, []measurement, error) {
		a, err := startAsynqSchedulers(e, instances, e.cfg.schedAsynqSchedules, schedSpec, nil)
		if err != nil {
			return "", nil, err
		}
		rate, err := window(ctx, e, func(ctx context.Context) (int64, error) { return asynqPending(ctx, e) })
		a.stop()
		if err != nil {
			return "", nil, err
		}
		jobs, err := asynqPending(ctx, e)
		if err != nil {
			return "", nil, err
		}
		perTick := float64(jobs) / float64(a.ticks())
		suffix := strconv.Itoa(instances)
		return fmt.Sprintf("%.0f jobs/s; %d tasks, %d enqueues failed, %d ticks started per scheduler: %.3f jobs per tick", rate, jobs, a.failed.Load(), a.ticks(), perTick),
			[]measurement{{"sched_fires_" + suffix, rate}, {"sched_jobs_per_tick_" + suffix, perTick}, {"sched_unique_" + suffix, uniquePerSec(rate, perTick)}}, nil
	}
}

// lateSample is one job received by a consumer of the lateness workload.
type lateSample struct {
	key fireKey   // schedule and tick; tick 0 until resolved
	id  string    // the system's job id, to find the tick
	at  time.Time // received
}

// lateSamples collects what the consumers received during the window.
type lateSamples struct {
	mu       sync.Mutex
	from, to time.Time
	s        []lateSample
}

func (l *lateSamples) add(x lateSample) {
	l.mu.Lock()
	if !x.at.Before(l.from) && x.at.Before(l.to) {
		l.s = append(l.s, x)
	}
	l.mu.Unlock()
}

// result returns p50 and p99 of the lateness in ms and the duplicates:
// jobs beyond the first of one (schedule, tick).
func (l *lateSamples) result(tickOf func(lateSample) (time.Time, bool)) (latencyStats, int, int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	seen := map[fireKey]int{}
	var ms []float64
	dups, unknown := 0, 0
	for _, x := range l.s {
		t, ok := tickOf(x)
		if !ok {
			unknown++
			continue
		}
		x.key.tick = t.UnixMilli()
		if seen[x.key]++; seen[x.key] > 1 {
			dups++
		}
		ms = append(ms, float64(x.at.Sub(t).Nanoseconds())/1e6)
	}
	if len(ms) == 0 {
		return latencyStats{}, 0, 0, fmt.Errorf("no job received in the window (%d without a known tick)", unknown)
	}
	return summarize(ms), dups, unknown, nil
}

// newLateSamples starts the window after cfg.schedWarmup.
func newLateSamples(e *env) *lateSamples {
	from := time.Now().Add(e.cfg.schedWarmup)
	return &lateSamples{from: from, to: from.Add(e.cfg.schedWindow)}
}

func lateMeasurements(st latencyStats, dups, unknown int) (string, []measurement, error) {
	return fmt.Sprintf("p50 %.1f ms, p99 %.1f ms, max %.1f ms, %d jobs, %d duplicates, %d without a tick", st.P50, st.P99, st.Max, st.N, dups, unknown),
		[]measurement{{"sched_late_p50", st.P50}, {"sched_late_p99", st.P99}, {"sched_dups", float64(dups)}}, nil
}

// hgSchedLateness: cfg.schedLateInstances instances, each a schedule.Client
// and a queue.Worker on its own Store. The tick of a job is exact: the
// Clients report each fire's tick and job ID.
func hgSchedLateness(ctx context.Context, e *env) (string, []measurement, error) {
	n := e.cfg.schedLateInstances
	hs, closeAll, err := hgSchedules(ctx, e, n, e.cfg.schedLateSchedules, schedSpec)
	if err != nil {
		return "", nil, err
	}
	defer closeAll()
	rec := newLateSamples(e)
	for _, h := range hs {
		w, err := queue.NewWorker(h.q, queue.HandlerFunc(func(_ context.Context, j queue.Job) error {
			rec.add(lateSample{key: fireKey{name: string(j.Body)}, id: j.ID.String(), at: time.Now()})
			return nil
		}), &queue.WorkerOptions{Tubes: []string{hgTube}, Concurrency: e.cfg.concurrency})
		if err != nil {
			return "", nil, err
		}
		stop, err := hgRun(ctx, w)
		if err != nil {
			return "", nil, err
		}
		defer stop()
	}
	log := newFireLog()
	stop, err := hgRunClients(ctx, hs, log)
	if err != nil {
		return "", nil, err
	}
	err = pause(ctx, time.Until(rec.to)+200*time.Millisecond)
	stop()
	if err != nil {
		return "", nil, err
	}
	st, dups, unknown, err := rec.result(func(x lateSample) (time.Time, bool) {
		id, _ := strconv.ParseUint(x.id, 10, 64)
		log.mu.Lock()
		k, ok := log.jobs[queue.ID(id)]
		log.mu.Unlock()
		return time.UnixMilli(k.tick), ok && k.name == x.key.name
	})
	if err != nil {
		return "", nil, err
	}
	return lateMeasurements(st, dups, unknown)
}

// asynqSchedLateness: cfg.schedLateInstances asynq Schedulers and as many
// asynq.Servers. asynq does not tell a task's tick; its enqueue hook
// (PostEnqueueFunc, called by the Scheduler right after the enqueue) gives
// the task ID, and the tick is that moment truncated to the second — the
// scheduler starts an enqueue on the whole second, so this holds while an
// enqueue takes less than a second (checked: a hook later than 500 ms past
// the second counts the task as without a tick).
func asynqSchedLateness(ctx context.Context, e *env) (string, []measurement, error) {
	var mu sync.Mutex
	ticks := map[string]time.Time{}
	late := 0
	post := func(info *asynq.TaskInfo, at time.Time) {
		t := at.Truncate(time.Second)
		mu.Lock()
		if at.Sub(t) < 500*time.Millisecond {
			ticks[info.ID] = t
		} else {
			late++
		}
		mu.Unlock()
	}
	rec := newLateSamples(e)
	var srvs []*asynq.Server
	var rcs []*redis.Client
	defer func() {
		for _, s := range srvs {
			s.Shutdown()
		}
		for _, rc := range rcs {
			_ = rc.Close()
		}
	}()
	for range e.cfg.schedLateInstances {
		rc := redis.NewClient(&redis.Options{Addr: e.addr})
		rcs = append(rcs, rc)
		srv, err := asynqServer(e, rc, func(ctx context.Context, t *asynq.Task) error {
			id, _ := asynq.GetTaskID(ctx)
			rec.add(lateSample{key: fireKey{name: string(t.Payload())}, id: id, at: time.Now()})
			return nil
		})
		if err != nil {
			return "", nil, err
		}
		srvs = append(srvs, srv)
	}
	a, err := startAsynqSchedulers(e, e.cfg.schedLateInstances, e.cfg.schedLateSchedules, schedSpec, post)
	if err != nil {
		return "", nil, err
	}
	err = pause(ctx, time.Until(rec.to)+1200*time.Millisecond)
	a.stop()
	if err != nil {
		return "", nil, err
	}
	st, dups, unknown, err := rec.result(func(x lateSample) (time.Time, bool) {
		mu.Lock()
		defer mu.Unlock()
		t, ok := ticks[x.id]
		return t, ok
	})
	if err != nil {
		return "", nil, err
	}
	msg, ms, err := lateMeasurements(st, dups, unknown)
	return fmt.Sprintf("%s (%d enqueues more than 500 ms past the second)", msg, late), ms, err
}

// bullSched runs a schedule workload of bench.mjs with the schedule flags.
func bullSched(workload string, schedules, instances int) func(context.Context, *env) (string, []measurement, error) {
	return func(ctx context.Context, e *env) (string, []measurement, error) {
		r, err := runNode(ctx, e, workload,
			"--schedules", strconv.Itoa(schedules), "--instances", strconv.Itoa(instances),
			"--warmup-ms", strconv.FormatInt(e.cfg.schedWarmup.Milliseconds(), 10),
			"--window-ms", strconv.FormatInt(e.cfg.schedWindow.Milliseconds(), 10))
		if err != nil {
			return "", nil, err
		}
		switch workload {
		case "schedfires":
			return fmt.Sprintf("%.0f jobs processed/s (%d schedulers, created in %.1f s)", r.PerSec, r.Schedules, r.SetupSeconds),
				[]measurement{{"sched_processed", r.PerSec}}, nil
		case "schedlateness":
			st := latencyStats{P50: r.P50, P99: r.P99, Max: r.Max, N: r.Jobs}
			return lateMeasurements(st, r.Duplicates, r.Unknown)
		default:
			return fmt.Sprintf("%.0f B per scheduler", r.BytesPerSchedule), []measurement{{"bytes_per_schedule", r.BytesPerSchedule}}, nil
		}
	}
}

// hgSchedMemory: used_memory per schedule of cfg.schedMemSchedules
// schedules "*/5 * * * *" in Europe/Berlin with a 20-byte body, all on one
// tube (the figure of redisstore's BenchmarkScheduleMemory, which spreads
// them over 50 tubes).
func hgSchedMemory(ctx context.Context, e *env) (string, []measurement, error) {
	h, err := hgOpen(ctx, e, 1)
	if err != nil {
		return "", nil, err
	}
	defer h.close()
	c, err := schedule.New(h.st.Schedules(), nil)
	if err != nil {
		return "", nil, err
	}
	set := func(ctx context.Context, i int) error {
		_, err := c.Set(ctx, schedule.Schedule{Name: schedName(i), Spec: schedMemSpec, Zone: schedMemZone,
			Job: schedule.Job{Tube: hgTube, Body: []byte(schedMemBody)}})
		return err
	}
	if err := set(ctx, -1); err != nil { // warm-up: tube and directories exist, scripts loaded
		return "", nil, err
	}
	before, err := usedMemory(ctx, e.admin)
	if err != nil {
		return "", nil, err
	}
	n := e.cfg.schedMemSchedules
	if err := parallel(ctx, 8, n, set); err != nil {
		return "", nil, err
	}
	after, err := usedMemory(ctx, e.admin)
	if err != nil {
		return "", nil, err
	}
	v := float64(after-before) / float64(n)
	return fmt.Sprintf("%.0f B per schedule", v), []measurement{{"bytes_per_schedule", v}}, nil
}

// The schedules of the memory workload, the same on BullMQ.
const (
	schedMemSpec = "*/5 * * * *"
	schedMemZone = "Europe/Berlin"
	schedMemBody = "01234567890123456789"
)

// schedRunners adds the runners of the schedule workloads.
func schedRunners(cfg *config, w string, add func(string, func(context.Context, *env) (string, []measurement, error))) {
	switch w {
	case "schedfires":
		for _, n := range cfg.schedInstances {
			add("hourglass", hgSchedFires(n))
			add("asynq", asynqSchedFires(n))
		}
		add("hourglass", hgSchedProcessed)
		add("bullmq", bullSched("schedfires", cfg.schedules, 1))
	case "schedlateness":
		add("hourglass", hgSchedLateness)
		add("asynq", asynqSchedLateness)
		add("bullmq", bullSched("schedlateness", cfg.schedLateSchedules, cfg.schedLateInstances))
	case "schedmemory":
		add("hourglass", hgSchedMemory)
		add("bullmq", bullSched("schedmemory", cfg.schedMemSchedules, 1))
	}
}

// uniquePerSec is the jobs put per second that are the first of their
// (schedule, tick): a tick enqueued by several instances counts once, so
// systems that put a tick more than once compare on what their users get.
func uniquePerSec(rate, perTick float64) float64 {
	if perTick <= 0 {
		return 0
	}
	return rate / perTick
}

// schedMetricDefs are the rows of the schedule workloads.
func schedMetricDefs(cfg *config) []metricDef {
	var defs []metricDef
	k := fmtCount(cfg.schedules)
	ka := fmtCount(cfg.schedAsynqSchedules)
	for _, n := range cfg.schedInstances {
		s := strconv.Itoa(n)
		api := map[string]string{"hourglass": s + " schedule.Client, " + k + " schedules", "asynq": s + " Scheduler, " + ka + " entries"}
		defs = append(defs,
			metricDef{"sched_fires_" + s, fmt.Sprintf("schedule jobs put/s, @every 1s, saturated, %d instance(s)", n), "jobs/s", true, api},
			metricDef{"sched_jobs_per_tick_" + s, fmt.Sprintf("schedule jobs per tick, %d instance(s)", n), "jobs/tick", false, api},
			metricDef{"sched_unique_" + s, fmt.Sprintf("schedule unique jobs/s (put/s / jobs per tick), %d instance(s)", n), "jobs/s", true, api})
	}
	return append(defs,
		metricDef{"sched_processed", fmt.Sprintf("schedule jobs processed/s, %s schedules, 1 instance + worker", k), "jobs/s", true,
			map[string]string{"hourglass": "schedule.Client + queue.Worker", "bullmq": "upsertJobScheduler + Worker"}},
		metricDef{"sched_late_p50", fmt.Sprintf("schedule tick-to-consumer p50, %d instances", cfg.schedLateInstances), "ms", false, nil},
		metricDef{"sched_late_p99", fmt.Sprintf("schedule tick-to-consumer p99, %d instances", cfg.schedLateInstances), "ms", false, nil},
		metricDef{"sched_dups", "schedule duplicate jobs in the lateness window", "jobs", false, nil},
		metricDef{"bytes_per_schedule", "bytes per schedule (*/5 * * * *, 20-byte body)", "B", false,
			map[string]string{"hourglass": "schedule.Client.Set", "bullmq": "upsertJobScheduler"}},
	)
}

// fmtCount writes 100000 as 100k.
func fmtCount(n int) string {
	if n >= 1000 && n%1000 == 0 {
		return strconv.Itoa(n/1000) + "k"
	}
	return strconv.Itoa(n)
}

// parseInstances parses the -sched-instances list.
func parseInstances(s string) ([]int, error) {
	var out []int
	for _, f := range splitList(s) {
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 || n > 64 {
			return nil, fmt.Errorf("-sched-instances: bad count %q", f)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("-sched-instances: empty %q", strings.TrimSpace(s))
	}
	return out, nil
}
