package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redis/redis_rate/v10"
	"github.com/hibiken/asynq"
	"github.com/hourglass-io/hourglass/lock"
	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/ratelimit"
	"github.com/redis/go-redis/v9"
)

// The workloads of this file compare one hourglass call with its closest
// peer (asynq, BullMQ, go-redis/redis_rate, bsm/redislock, beanstalkd).
// Each is a list of runners, one per system; the rounds rotate their order.

// runner runs one workload on one system and returns its figures.
type runner struct {
	sys string
	fn  func(ctx context.Context, e *env) (string, []measurement, error)
}

// compareWorkloads are the workloads run by runCompare.
var compareWorkloads = []string{"putdelayed", "reservedelete", "gcra", "lock", "latency", "beanstalk", "schedfires", "schedlateness", "schedmemory", "keptmemory"}

// runners returns the runners of workload w that cfg selects.
func runners(cfg *config, w string) []runner {
	has := func(s string) bool {
		for _, x := range cfg.systems {
			if x == s {
				return true
			}
		}
		return false
	}
	var rs []runner
	add := func(sys string, fn func(ctx context.Context, e *env) (string, []measurement, error)) {
		switch sys {
		case "hourglass", "asynq", "bullmq":
			if !has(sys) {
				return
			}
		}
		rs = append(rs, runner{sys, fn})
	}
	switch w {
	case "putdelayed":
		add("hourglass", rate("put_delayed", hgPutDelayed))
		add("asynq", rate("put_delayed", asynqPutDelayed))
		add("bullmq", rate("put_delayed", bullmq{}.PutDelayed))
	case "reservedelete":
		add("hourglass", rate("reserve_delete", hgReserveDelete))
		add("asynq", rate("reserve_delete", asynqSys{}.Consume))
		add("bullmq", rate("reserve_delete", bullmq{}.Consume))
	case "gcra":
		add("hourglass", gcra(hgAllower))
		add("redis_rate", gcra(redisRateAllower))
	case "lock":
		add("hourglass", locks(hgLocker))
		add("redislock", locks(redislockLocker))
	case "latency":
		add("hourglass", hgLatency)
		add("asynq", asynqLatency)
	case "beanstalk":
		add("hourglass", bsRun(startHourglassServe, true, "bs_"))
		add("hourglass", bsRun(startHourglassMem, false, "bsmem_"))
		add("beanstalkd", bsRun(startBeanstalkd, false, "bs_"))
	default:
		schedRunners(cfg, w, add)
		keptRunners(w, add)
	}
	return rs
}

// rate wraps a jobs/s workload.
func rate(metric string, fn func(ctx context.Context, e *env) (float64, error)) func(context.Context, *env) (string, []measurement, error) {
	return func(ctx context.Context, e *env) (string, []measurement, error) {
		v, err := fn(ctx, e)
		if err != nil {
			return "", nil, err
		}
		if m := meterOf(ctx); m != nil && metric != "consume" {
			m.rename("consume_cpu", metric+"_cpu")
		}
		return fmt.Sprintf("%.0f jobs/s", v), []measurement{{metric, v}}, nil
	}
}

// runCompare runs workload w in round r, its systems in rotated order.
func runCompare(ctx context.Context, e *env, rep *report, r int, w string) error {
	rs := runners(e.cfg, w)
	for i := range rs {
		x := rs[(i+r)%len(rs)]
		if err := runWith(ctx, e, rep, r, w, x.sys, func(ctx context.Context) (string, []measurement, error) {
			return x.fn(ctx, e)
		}); err != nil {
			return err
		}
	}
	return nil
}

// hgPutDelayed: 8 producers put cfg.ops jobs, each delayed by 1 to 4 s,
// while cfg.concurrency goroutines wait in a blocking Reserve on the tube.
// The reserved jobs are deleted; the figure is puts/s.
func hgPutDelayed(ctx context.Context, e *env) (float64, error) {
	h, err := hgOpen(ctx, e, 1)
	if err != nil {
		return 0, err
	}
	defer h.close()
	b := body(e.cfg.body)
	rctx, cancel := context.WithCancel(ctx)
	cnt := newCounter(e.cfg.ops)
	var wg sync.WaitGroup
	for range e.cfg.concurrency {
		wg.Go(func() {
			for rctx.Err() == nil {
				j, err := h.q.Reserve(rctx, queue.ReserveOptions{Tubes: []string{hgTube}})
				if err != nil {
					select { // Redis trouble: do not spin
					case <-rctx.Done():
					case <-time.After(10 * time.Millisecond):
					}
					continue
				}
				if h.q.Delete(rctx, j.ID) == nil {
					cnt.inc()
				}
			}
		})
	}
	defer wg.Wait()
	defer cancel()
	ds := delays(e.cfg.ops, time.Second, 4*time.Second)
	cpuBegin(ctx)
	v, err := timedParallel(ctx, e.cfg.producers, e.cfg.ops, e.cfg.ops, func(ctx context.Context, i int) error {
		_, err := h.q.Put(ctx, hgTube, queue.NewJob{Body: b, Delay: ds[i]})
		return err
	})
	if err != nil {
		return 0, err
	}
	// Redis CPU over the whole life of the jobs: put, wait, delivery, delete.
	if err := cnt.wait(ctx); err != nil {
		return 0, err
	}
	cpuEnd(ctx, "put_delayed", e.cfg.ops)
	return v, nil
}

// asynqPutDelayed is hgPutDelayed with asynq: Enqueue(ProcessIn) while an
// asynq.Server of cfg.concurrency waits on the queue.
func asynqPutDelayed(ctx context.Context, e *env) (float64, error) {
	rc, cl := asynqOpen(e)
	defer rc.Close()
	defer cl.Close()
	cnt := newCounter(e.cfg.ops)
	srv, err := asynqServer(e, rc, func(context.Context, *asynq.Task) error { cnt.inc(); return nil })
	if err != nil {
		return 0, err
	}
	defer srv.Shutdown()
	b := body(e.cfg.body)
	ds := delays(e.cfg.ops, time.Second, 4*time.Second)
	cpuBegin(ctx)
	v, err := timedParallel(ctx, e.cfg.producers, e.cfg.ops, e.cfg.ops, func(ctx context.Context, i int) error {
		_, err := cl.EnqueueContext(ctx, asynq.NewTask(asynqTaskType, b), asynq.ProcessIn(ds[i]))
		return err
	})
	if err != nil {
		return 0, err
	}
	if err := cnt.wait(ctx); err != nil {
		return 0, err
	}
	cpuEnd(ctx, "put_delayed", e.cfg.ops)
	return v, nil
}

// hgReserveDelete preloads cfg.ops ready jobs, then cfg.concurrency
// goroutines Reserve and Delete until all are gone: jobs/s.
func hgReserveDelete(ctx context.Context, e *env) (float64, error) {
	h, err := hgOpen(ctx, e, 1)
	if err != nil {
		return 0, err
	}
	defer h.close()
	b := body(e.cfg.body)
	if _, err := h.putBatches(ctx, 4, e.cfg.ops, 1000, func(int) queue.NewJob { return queue.NewJob{Body: b} }); err != nil {
		return 0, fmt.Errorf("pre-fill: %w", err)
	}
	cpuBegin(ctx)
	v, err := timedParallel(ctx, e.cfg.concurrency, e.cfg.ops, e.cfg.ops, func(ctx context.Context, _ int) error {
		j, err := h.q.Reserve(ctx, queue.ReserveOptions{Tubes: []string{hgTube}, Timeout: 5 * time.Second})
		if err != nil {
			return fmt.Errorf("reserve: %w", err)
		}
		return h.q.Delete(ctx, j.ID)
	})
	if err != nil {
		return 0, err
	}
	cpuEnd(ctx, "reserve_delete", e.cfg.ops)
	if ok, err := h.empty(ctx); err != nil || !ok {
		return 0, fmt.Errorf("tube not empty after %d reserve+delete (%v)", e.cfg.ops, err)
	}
	return v, nil
}

// allowFunc decides one event on key.
type allowFunc func(ctx context.Context, key string) error

// gcraLimit admits every call of the workload, so every decision writes.
const gcraPerSecond = 1_000_000

func hgAllower(ctx context.Context, e *env) (allowFunc, func(), error) {
	h, err := hgOpen(ctx, e, 1)
	if err != nil {
		return nil, nil, err
	}
	l, err := ratelimit.New(h.st.RateLimits(), nil)
	if err != nil {
		h.close()
		return nil, nil, err
	}
	lim := ratelimit.PerSecond(gcraPerSecond)
	return func(ctx context.Context, key string) error {
		r, err := l.Allow(ctx, key, lim)
		if err == nil && !r.Allowed {
			err = errors.New("hourglass: a decision denied; the limit should admit all")
		}
		return err
	}, h.close, nil
}

func redisRateAllower(_ context.Context, e *env) (allowFunc, func(), error) {
	c := redis.NewClient(&redis.Options{Addr: e.addr, PoolSize: 32})
	l := redis_rate.NewLimiter(c)
	lim := redis_rate.PerSecond(gcraPerSecond)
	return func(ctx context.Context, key string) error {
		r, err := l.Allow(ctx, key, lim)
		if err == nil && r.Allowed == 0 {
			err = errors.New("redis_rate: a decision denied; the limit should admit all")
		}
		return err
	}, func() { _ = c.Close() }, nil
}

// gcra: cfg.ops decisions from 16 goroutines on one key, then over 10,000
// keys: decisions/s.
func gcra(open func(context.Context, *env) (allowFunc, func(), error)) func(context.Context, *env) (string, []measurement, error) {
	return func(ctx context.Context, e *env) (string, []measurement, error) {
		allow, closeFn, err := open(ctx, e)
		if err != nil {
			return "", nil, err
		}
		defer closeFn()
		keys := make([]string, 10_000)
		for i := range keys {
			keys[i] = "user:" + strconv.Itoa(i)
		}
		if err := allow(ctx, "warm-up"); err != nil {
			return "", nil, err
		}
		cpuBegin(ctx)
		one, err := timedParallel(ctx, 16, e.cfg.ops, e.cfg.ops, func(ctx context.Context, _ int) error { return allow(ctx, "hot") })
		if err != nil {
			return "", nil, err
		}
		cpuEnd(ctx, "gcra_1key", e.cfg.ops)
		cpuBegin(ctx)
		many, err := timedParallel(ctx, 16, e.cfg.ops, e.cfg.ops, func(ctx context.Context, i int) error { return allow(ctx, keys[i%len(keys)]) })
		if err != nil {
			return "", nil, err
		}
		cpuEnd(ctx, "gcra_10k", e.cfg.ops)
		return fmt.Sprintf("1 key %.0f/s, 10k keys %.0f/s", one, many),
			[]measurement{{"gcra_1key", one}, {"gcra_10k", many}}, nil
	}
}

// obtainFunc obtains the lock name and returns its release.
type obtainFunc func(ctx context.Context, name string) (release func(context.Context) error, err error)

func hgLocker(ctx context.Context, e *env) (obtainFunc, func(), error) {
	h, err := hgOpen(ctx, e, 1)
	if err != nil {
		return nil, nil, err
	}
	c, err := lock.New(h.st.Locks(), nil)
	if err != nil {
		h.close()
		return nil, nil, err
	}
	return func(ctx context.Context, name string) (func(context.Context) error, error) {
		l, err := c.TryObtain(ctx, name, &lock.ObtainOptions{TTL: 10 * time.Second})
		if err != nil {
			return nil, err
		}
		return l.Release, nil
	}, h.close, nil
}

func redislockLocker(_ context.Context, e *env) (obtainFunc, func(), error) {
	c := redis.NewClient(&redis.Options{Addr: e.addr, PoolSize: 32})
	lc := redislock.New(c)
	return func(ctx context.Context, name string) (func(context.Context) error, error) {
		l, err := lc.Obtain(ctx, name, 10*time.Second, nil)
		if err != nil {
			return nil, err
		}
		return l.Release, nil
	}, func() { _ = c.Close() }, nil
}

// locks: cfg.ops uncontended obtain+release from one goroutine on one name,
// then from 8 goroutines each on its own name: pairs/s.
func locks(open func(context.Context, *env) (obtainFunc, func(), error)) func(context.Context, *env) (string, []measurement, error) {
	return func(ctx context.Context, e *env) (string, []measurement, error) {
		obtain, closeFn, err := open(ctx, e)
		if err != nil {
			return "", nil, err
		}
		defer closeFn()
		cycle := func(ctx context.Context, name string) error {
			rel, err := obtain(ctx, name)
			if err != nil {
				return fmt.Errorf("obtain %s: %w", name, err)
			}
			return rel(ctx)
		}
		if err := cycle(ctx, "warm-up"); err != nil {
			return "", nil, err
		}
		n := max(e.cfg.ops/4, 1)
		cpuBegin(ctx)
		one, err := timedParallel(ctx, 1, n, n, func(ctx context.Context, _ int) error { return cycle(ctx, "lock:1") })
		if err != nil {
			return "", nil, err
		}
		cpuEnd(ctx, "lock_1", n)
		// Each of 8 goroutines cycles on its own name.
		cpuBegin(ctx)
		start := time.Now()
		if err := perWorker(ctx, 8, n, func(ctx context.Context, w int) error {
			return cycle(ctx, "lock:g"+strconv.Itoa(w))
		}); err != nil {
			return "", nil, err
		}
		eight := float64(n) / time.Since(start).Seconds()
		cpuEnd(ctx, "lock_8", n)
		return fmt.Sprintf("1 goroutine %.0f/s, 8 goroutines %.0f/s", one, eight),
			[]measurement{{"lock_1", one}, {"lock_8", eight}}, nil
	}
}

// perWorker runs n calls of fn on workers goroutines; fn learns which
// goroutine calls it.
func perWorker(ctx context.Context, workers, n int, fn func(ctx context.Context, w int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var left atomic.Int64
	left.Store(int64(n))
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for ctx.Err() == nil && left.Add(-1) >= 0 {
				if err := fn(ctx, w); err != nil {
					cancel(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return ctx.Err()
}

// latencies runs n calls of fn one after another and returns p50 and p99
// of their durations in µs.
func latencies(ctx context.Context, n int, fn func(ctx context.Context) error) (p50, p99 float64, err error) {
	us := make([]float64, 0, n)
	for range n {
		if err := ctx.Err(); err != nil {
			return 0, 0, err
		}
		t := time.Now()
		if err := fn(ctx); err != nil {
			return 0, 0, err
		}
		us = append(us, float64(time.Since(t).Nanoseconds())/1e3)
	}
	s := summarize(us)
	return s.P50, s.P99, nil
}

// hgLatency: one goroutine puts cfg.latencyOps jobs, one call at a time,
// then one goroutine reserves and deletes them: p50 and p99 of each call
// (Reserve+Delete timed together).
func hgLatency(ctx context.Context, e *env) (string, []measurement, error) {
	h, err := hgOpen(ctx, e, 1)
	if err != nil {
		return "", nil, err
	}
	defer h.close()
	b := body(e.cfg.body)
	n := e.cfg.latencyOps
	if _, err := h.q.Put(ctx, hgTube, queue.NewJob{Body: b}); err != nil { // warm-up
		return "", nil, err
	}
	p50, p99, err := latencies(ctx, n, func(ctx context.Context) error {
		_, err := h.q.Put(ctx, hgTube, queue.NewJob{Body: b})
		return err
	})
	if err != nil {
		return "", nil, err
	}
	r50, r99, err := latencies(ctx, n+1, func(ctx context.Context) error {
		j, err := h.q.Reserve(ctx, queue.ReserveOptions{Tubes: []string{hgTube}, Timeout: -1})
		if err != nil {
			return fmt.Errorf("reserve: %w", err)
		}
		return h.q.Delete(ctx, j.ID)
	})
	if err != nil {
		return "", nil, err
	}
	return fmt.Sprintf("put p50 %.0f µs p99 %.0f µs, reserve+delete p50 %.0f µs p99 %.0f µs", p50, p99, r50, r99),
		[]measurement{{"lat_put_p50", p50}, {"lat_put_p99", p99}, {"lat_rd_p50", r50}, {"lat_rd_p99", r99}}, nil
}

// asynqLatency: one goroutine enqueues cfg.latencyOps tasks, one at a time.
func asynqLatency(ctx context.Context, e *env) (string, []measurement, error) {
	rc, cl := asynqOpen(e)
	defer rc.Close()
	defer cl.Close()
	b := body(e.cfg.body)
	if _, err := cl.EnqueueContext(ctx, asynq.NewTask(asynqTaskType, b)); err != nil {
		return "", nil, err
	}
	p50, p99, err := latencies(ctx, e.cfg.latencyOps, func(ctx context.Context) error {
		_, err := cl.EnqueueContext(ctx, asynq.NewTask(asynqTaskType, b))
		return err
	})
	if err != nil {
		return "", nil, err
	}
	return fmt.Sprintf("enqueue p50 %.0f µs p99 %.0f µs", p50, p99),
		[]measurement{{"lat_put_p50", p50}, {"lat_put_p99", p99}}, nil
}

// pair is a row of the comparison table: hourglass's metric beside a
// peer's. For metrics where lower is better the ratio is still
// hourglass / peer; the table says which way is better. The peer's figure
// is its metric of the same name, or of peerMetric when that is set.
type pair struct{ metric, peer, peerMetric string }

var pairs = []pair{
	{"put", "asynq", ""}, {"put", "bullmq", ""},
	{"put_delayed", "asynq", ""}, {"put_delayed", "bullmq", ""},
	{"reserve_delete", "asynq", ""}, {"reserve_delete", "bullmq", ""},
	{"consume", "asynq", ""}, {"consume", "bullmq", ""},
	{"bs_put", "beanstalkd", ""}, {"bs_reserve_delete", "beanstalkd", ""},
	{"bsmem_put", "beanstalkd", "bs_put"}, {"bsmem_reserve_delete", "beanstalkd", "bs_reserve_delete"},
	{"bs_put_proc_cpu", "beanstalkd", ""}, {"bs_reserve_delete_proc_cpu", "beanstalkd", ""},
	{"bsmem_put_proc_cpu", "beanstalkd", "bs_put_proc_cpu"}, {"bsmem_reserve_delete_proc_cpu", "beanstalkd", "bs_reserve_delete_proc_cpu"},
	{"gcra_1key", "redis_rate", ""}, {"gcra_10k", "redis_rate", ""},
	{"lock_1", "redislock", ""}, {"lock_8", "redislock", ""},
	{"lateness_p50", "bullmq", ""}, {"lateness_p99", "bullmq", ""}, {"lateness_p50", "asynq", ""}, {"lateness_p99", "asynq", ""},
	{"lat_put_p50", "asynq", ""}, {"lat_put_p99", "asynq", ""}, {"lat_rd_p50", "", ""}, {"lat_rd_p99", "", ""},
	{"bytes_per_delayed_job", "asynq", ""}, {"bytes_per_delayed_job", "bullmq", ""},
	{"bytes_per_kept_job", "asynq", ""}, {"bytes_per_kept_job", "bullmq", ""},
	{"put_cpu", "asynq", ""}, {"put_cpu", "bullmq", ""}, {"put_batch_cpu", "bullmq", ""},
	{"put_delayed_cpu", "asynq", ""}, {"put_delayed_cpu", "bullmq", ""},
	{"reserve_delete_cpu", "asynq", ""}, {"reserve_delete_cpu", "bullmq", ""},
	{"consume_cpu", "asynq", ""}, {"consume_cpu", "bullmq", ""},
	{"bs_put_cpu", "", ""}, {"bs_reserve_delete_cpu", "", ""},
	{"gcra_1key_cpu", "redis_rate", ""}, {"gcra_10k_cpu", "redis_rate", ""},
	{"lock_1_cpu", "redislock", ""}, {"lock_8_cpu", "redislock", ""},
	{"sched_fires_1", "asynq", ""}, {"sched_fires_4", "asynq", ""},
	{"sched_jobs_per_tick_1", "asynq", ""}, {"sched_jobs_per_tick_4", "asynq", ""},
	{"sched_unique_1", "asynq", ""}, {"sched_unique_4", "asynq", ""},
	{"sched_processed", "bullmq", ""},
	{"sched_late_p50", "asynq", ""}, {"sched_late_p99", "asynq", ""}, {"sched_late_p50", "bullmq", ""}, {"sched_late_p99", "bullmq", ""},
	{"bytes_per_schedule", "bullmq", ""},
}

// printCompare prints the table what | hourglass | peer | ratio from the
// medians.
func (r *report) printCompare(out io.Writer) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "what	unit	hourglass	peer	ratio hourglass/peer	better")
	rows := 0
	for _, p := range pairs {
		h, ok := r.med(p.metric, "hourglass")
		if !ok {
			continue
		}
		d := metricByID(p.metric)
		better := "higher"
		switch {
		case d.unit == "jobs/tick":
			better = "1.000"
		case !d.higherBetter:
			better = "lower"
		}
		peer, ratio := "-", "-"
		if p.peer != "" {
			pm := p.metric
			if p.peerMetric != "" {
				pm = p.peerMetric
			}
			v, ok := r.med(pm, p.peer)
			if !ok {
				continue
			}
			peer = p.peer + " " + fmtVal(v, d.unit)
			if v != 0 {
				ratio = fmt.Sprintf("%.2f", h/v)
			}
		}
		fmt.Fprintf(tw, "%s	%s	%s	%s	%s	%s\n", d.title, d.unit, fmtVal(h, d.unit), peer, ratio, better)
		rows++
	}
	if rows > 0 {
		fmt.Fprintf(out, "\nhourglass beside its peers (medians)\n\n")
		_ = tw.Flush()
	}
}

// commandStats is one command's line of INFO commandstats.
type commandStats struct{ calls, usec int64 }

// readCommandStats returns INFO commandstats by command name.
func readCommandStats(ctx context.Context, c *redis.Client) (map[string]commandStats, error) {
	info, err := c.Info(ctx, "commandstats").Result()
	if err != nil {
		return nil, err
	}
	m := map[string]commandStats{}
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		name, found := strings.CutPrefix(name, "cmdstat_")
		if !ok || !found {
			continue
		}
		var cs commandStats
		for _, kv := range strings.Split(rest, ",") {
			k, v, _ := strings.Cut(kv, "=")
			switch k {
			case "calls":
				cs.calls, _ = strconv.ParseInt(v, 10, 64)
			case "usec":
				cs.usec, _ = strconv.ParseInt(v, 10, 64)
			}
		}
		m[name] = cs
	}
	return m, nil
}

// cmdDelta is the Redis CPU of one command during one run.
type cmdDelta struct {
	Command     string  `json:"command"`
	Calls       int64   `json:"calls"`
	Usec        int64   `json:"usec"`
	UsecPerCall float64 `json:"usec_per_call"`
}

// redisCPU is what Redis spent on the commands of one hourglass run.
type redisCPU struct {
	Round    int        `json:"round"`
	Workload string     `json:"workload"`
	System   string     `json:"system"`
	Commands []cmdDelta `json:"commands"`
}

// diffCommandStats returns the commands called between a and b, the
// script calls (evalsha, eval, fcall, fcall_ro) first, then by usec.
func diffCommandStats(a, b map[string]commandStats) []cmdDelta {
	var out []cmdDelta
	for name, y := range b {
		x := a[name]
		if name == "info" || y.calls <= x.calls {
			continue
		}
		d := cmdDelta{Command: name, Calls: y.calls - x.calls, Usec: y.usec - x.usec}
		d.UsecPerCall = float64(d.Usec) / float64(d.Calls)
		out = append(out, d)
	}
	script := func(s string) bool {
		switch s {
		case "evalsha", "eval", "evalsha_ro", "eval_ro", "fcall", "fcall_ro":
			return true
		}
		return false
	}
	slices.SortFunc(out, func(p, q cmdDelta) int {
		if script(p.Command) != script(q.Command) {
			if script(p.Command) {
				return -1
			}
			return 1
		}
		return cmp.Compare(q.Usec, p.Usec)
	})
	return out
}

func fmtCommands(ds []cmdDelta) string {
	var parts []string
	for i, d := range ds {
		if i == 6 {
			break
		}
		parts = append(parts, fmt.Sprintf("%s %d calls %.1f µs/call", d.Command, d.Calls, d.UsecPerCall))
	}
	if len(parts) == 0 {
		return "no commands"
	}
	return strings.Join(parts, "; ")
}

// printRedisCPU prints Redis's CPU per command of every hourglass run.
func (r *report) printRedisCPU(out io.Writer) {
	if len(r.RedisCPU) == 0 {
		return
	}
	fmt.Fprintf(out, "\nRedis CPU of the hourglass runs (INFO commandstats deltas; script calls first)\n\n")
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "round\tworkload\tcommand\tcalls\tusec\tµs/call")
	for _, x := range r.RedisCPU {
		for i, d := range x.Commands {
			if i == 8 {
				break
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%d\t%.2f\n", x.Round, x.Workload, d.Command, d.Calls, d.Usec, d.UsecPerCall)
		}
	}
	_ = tw.Flush()
}
