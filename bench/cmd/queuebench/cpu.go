package main

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Redis CPU per job is Redis's own accounting of the CPU it used (INFO cpu
// used_cpu_user + used_cpu_sys) over the timed phase of a run, divided by
// the jobs (or decisions, or lock cycles) of that phase. Unlike a rate, it
// does not move with the load of the machine, and it is the one resource
// every client of a deployment shares.
//
// runOnce puts a cpuMeter into the context of every run on the standalone
// server; a workload calls cpuBegin at the start of its timed phase and
// cpuEnd at its end, naming the metric. The BullMQ script reads INFO cpu
// itself around its timed phase and passes the figure on with cpuRecord.

type cpuMeterKey struct{}

// cpuMeter collects the Redis CPU figures of one run.
type cpuMeter struct {
	admin *redis.Client

	mu  sync.Mutex
	t0  float64 // used CPU seconds at cpuBegin; < 0 when unknown
	got []measurement
	err error
}

func withCPUMeter(ctx context.Context, admin *redis.Client) (context.Context, *cpuMeter) {
	m := &cpuMeter{admin: admin, t0: -1}
	return context.WithValue(ctx, cpuMeterKey{}, m), m
}

func meterOf(ctx context.Context) *cpuMeter {
	m, _ := ctx.Value(cpuMeterKey{}).(*cpuMeter)
	return m
}

// redisCPUSeconds returns INFO cpu used_cpu_user + used_cpu_sys.
func redisCPUSeconds(ctx context.Context, c *redis.Client) (float64, error) {
	info, err := c.Info(ctx, "cpu").Result()
	if err != nil {
		return 0, err
	}
	u, err1 := strconv.ParseFloat(infoField(info, "used_cpu_user"), 64)
	s, err2 := strconv.ParseFloat(infoField(info, "used_cpu_sys"), 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("INFO cpu: no used_cpu_user/used_cpu_sys in %q", info)
	}
	return u + s, nil
}

// cpuBegin marks the start of a timed phase.
func cpuBegin(ctx context.Context) {
	m := meterOf(ctx)
	if m == nil {
		return
	}
	v, err := redisCPUSeconds(context.WithoutCancel(ctx), m.admin)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err != nil {
		m.err, m.t0 = err, -1
		return
	}
	m.t0 = v
}

// cpuEnd records metric's Redis CPU per job since cpuBegin, in µs, over
// jobs jobs.
func cpuEnd(ctx context.Context, metric string, jobs int) {
	m := meterOf(ctx)
	if m == nil {
		return
	}
	v, err := redisCPUSeconds(context.WithoutCancel(ctx), m.admin)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err != nil {
		m.err = err
		return
	}
	if m.t0 < 0 || jobs <= 0 {
		return
	}
	m.got = append(m.got, measurement{metric + "_cpu", (v - m.t0) * 1e6 / float64(jobs)})
	m.t0 = -1
}

// cpuRecord records a figure measured elsewhere (the BullMQ script), in
// µs of Redis CPU per job.
func cpuRecord(ctx context.Context, metric string, usPerJob float64) {
	m := meterOf(ctx)
	if m == nil || usPerJob <= 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.got = append(m.got, measurement{metric + "_cpu", usPerJob})
}

// measurements returns what the run recorded.
func (m *cpuMeter) measurements() ([]measurement, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.got, m.err
}

// cpuMetricDefs are the Redis CPU rows: one per jobs/s metric that
// measures it.
func cpuMetricDefs() []metricDef {
	api := func(h string) map[string]string { return map[string]string{"hourglass": h} }
	return []metricDef{
		{"put_cpu", "Redis CPU per job, put 1 job per call", "µs", false, nil},
		{"put_batch_cpu", "Redis CPU per job, put in batches", "µs", false, nil},
		{"put_delayed_cpu", "Redis CPU per job, delayed put + delivery with workers waiting", "µs", false, nil},
		{"reserve_delete_cpu", "Redis CPU per job, reserve+delete (peers: their consume)", "µs", false, nil},
		{"consume_cpu", "Redis CPU per job, Worker consume", "µs", false, nil},
		{"bs_put_cpu", "Redis CPU per job, beanstalkd protocol put", "µs", false, api("hourglass serve --store redis://")},
		{"bs_reserve_delete_cpu", "Redis CPU per job, beanstalkd protocol reserve+delete", "µs", false, api("hourglass serve --store redis://")},
		{"gcra_1key_cpu", "Redis CPU per decision, GCRA 1 key", "µs", false, nil},
		{"gcra_10k_cpu", "Redis CPU per decision, GCRA 10k keys", "µs", false, nil},
		{"lock_1_cpu", "Redis CPU per obtain+release, 1 goroutine", "µs", false, nil},
		{"lock_8_cpu", "Redis CPU per obtain+release, 8 goroutines", "µs", false, nil},
	}
}

// rename gives the figures recorded as from the name to: a peer's consume
// is its reserve+delete.
func (m *cpuMeter) rename(from, to string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := range m.got {
		if m.got[i].metric == from {
			m.got[i].metric = to
		}
	}
}
