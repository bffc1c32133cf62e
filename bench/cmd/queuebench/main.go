// Command queuebench compares hourglass (redisstore) with asynq and BullMQ,
// and, workload by workload, with go-redis/redis_rate (GCRA), bsm/redislock
// (locks) and beanstalkd (the protocol, against hourglass serve on Redis),
// on one fresh redis-server that it starts itself, alternating the systems
// over several rounds. It prints the medians, the raw figures, the ratios
// hourglass / peer, and Redis's CPU per command of every hourglass run.
//
//	cd bench && go run ./cmd/queuebench [-quick] [-rounds 3] [-json out.json] [-workloads put,gcra,...]
//
// See bench/README.md for what each workload measures.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

type config struct {
	jobs, delayJobs, memJobs int
	ops, latencyOps          int
	producers, concurrency   int
	batch, body              int
	minDelay, maxDelay       time.Duration
	rounds                   int
	timeout                  time.Duration
	systems                  []string
	workloads                []string
	partitions               []int
	clusterMasters           int
	asynqPoll                time.Duration
	schedules                int   // schedules of schedfires
	schedAsynqSchedules      int   // asynq's entries of schedfires
	schedInstances           []int // instance counts of schedfires
	schedLateSchedules       int
	schedLateInstances       int
	schedMemSchedules        int
	schedWarmup, schedWindow time.Duration
	node, bullScript         string
	redisServer, redisCLI    string
	beanstalkd, hourglassSrc string
	maxOtherLoad             float64
	waitIdle                 time.Duration
	retries                  int
	jsonOut                  string
	cpuProfile               string
	verbose                  bool
}

// env is what a workload runs against.
type env struct {
	cfg     *config
	addr    string        // standalone server
	admin   *redis.Client // FLUSHALL and INFO on addr
	cluster []string      // when set, hourglass runs on this cluster instead
	flush   func(context.Context) error
}

// system is one queue implementation. A method returns errUnsupported
// when the system has no API for the workload.
type system interface {
	Name() string
	Put(ctx context.Context, e *env) (float64, error)
	PutBatch(ctx context.Context, e *env) (float64, error)
	Consume(ctx context.Context, e *env) (float64, error)
	Lateness(ctx context.Context, e *env) (latencyStats, error)
	Memory(ctx context.Context, e *env) (float64, error)
}

var allSystems = map[string]system{"hourglass": hourglass{}, "asynq": asynqSys{}, "bullmq": bullmq{}}

var systemOrder = []string{"hourglass", "asynq", "bullmq", "redis_rate", "redislock", "beanstalkd"}

var workloadOrder = []string{"put", "putdelayed", "reservedelete", "consume", "beanstalk", "gcra", "lock", "lateness", "latency", "memory", "cluster", "schedfires", "schedlateness", "schedmemory", "keptmemory"}

// defaultWorkloads are the workloads run when -workloads is not given.
var defaultWorkloads = []string{"put", "consume", "lateness", "memory", "cluster"}

func main() { os.Exit(realMain()) }

func realMain() int {
	cfg, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "queuebench:", err)
		return 2
	}
	defsCache = metricDefs(cfg)
	if cfg.cpuProfile != "" {
		f, err := os.Create(cfg.cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "queuebench:", err)
			return 2
		}
		defer pprof.StopCPUProfile()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep := &report{
		Date:    time.Now().UTC().Format(time.RFC3339),
		Command: "go run ./cmd/queuebench " + strings.Join(os.Args[1:], " "),
		Machine: machine(),
		Config:  cfg.summary(),

		maxOtherLoad: cfg.maxOtherLoad,
	}
	rep.Machine["loadavg_start"] = loadavg()
	if l1, _, _ := strings.Cut(rep.Machine["loadavg_start"], " "); parseFloat(l1) >= 1 {
		logf("warning: load average %s: other work on this machine will skew the figures", rep.Machine["loadavg_start"])
	}
	err = run(ctx, cfg, rep)
	if buildBin != "" { // the hourglass binary of the beanstalk workload
		_ = os.RemoveAll(filepath.Dir(buildBin))
	}
	rep.Machine["loadavg_end"] = loadavg()
	if err != nil {
		rep.Error = err.Error()
	}
	rep.computeTargets()
	rep.print(os.Stdout)
	if cfg.jsonOut != "" {
		if werr := rep.writeJSON(cfg.jsonOut); werr != nil {
			fmt.Fprintln(os.Stderr, "queuebench:", werr)
			return 1
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "queuebench: aborted:", err)
		return 1
	}
	return 0
}

func parseFlags(args []string) (*config, error) {
	fs := flag.NewFlagSet("queuebench", flag.ContinueOnError)
	c := &config{}
	var systems, workloads, parts, schedInstances string
	quick := fs.Bool("quick", false, "scaled-down run: 5000 jobs, 2000 delayed jobs over 0.5-3 s, 5000 jobs for memory, 1 round (explicit flags win)")
	fs.IntVar(&c.jobs, "jobs", 50000, "jobs of the put and consume workloads")
	fs.IntVar(&c.delayJobs, "delay-jobs", 20000, "jobs of the lateness workload")
	fs.IntVar(&c.memJobs, "mem-jobs", 20000, "delayed jobs of the memory workload")
	fs.IntVar(&c.producers, "producers", 8, "concurrent producers")
	fs.IntVar(&c.concurrency, "concurrency", 8, "concurrent consumers")
	fs.IntVar(&c.batch, "batch", 100, "jobs per call of the batch puts (PutMany, addBulk)")
	fs.IntVar(&c.body, "body", 100, "body size in bytes")
	fs.DurationVar(&c.minDelay, "min-delay", 500*time.Millisecond, "shortest delay of the lateness workload")
	fs.DurationVar(&c.maxDelay, "max-delay", 10*time.Second, "longest delay of the lateness workload")
	fs.IntVar(&c.rounds, "rounds", 3, "rounds; each runs every workload on every system, in a rotating order")
	fs.DurationVar(&c.timeout, "timeout", 120*time.Second, "a single workload run that takes longer aborts the benchmark")
	fs.StringVar(&systems, "systems", "hourglass,asynq,bullmq", "queue systems to run beside hourglass (hourglass,asynq,bullmq); the gcra, lock and beanstalk workloads always run their own peer")
	fs.StringVar(&workloads, "workloads", strings.Join(defaultWorkloads, ","), "workloads to run, of "+strings.Join(workloadOrder, ",")+" (cluster is hourglass only)")
	fs.IntVar(&c.ops, "ops", 20000, "jobs, decisions or lock cycles of the putdelayed, reservedelete, beanstalk, gcra and lock workloads")
	fs.IntVar(&c.latencyOps, "latency-ops", 5000, "calls of each single-caller latency series")
	fs.StringVar(&c.beanstalkd, "beanstalkd", "beanstalkd", "beanstalkd binary (the beanstalk workload)")
	fs.StringVar(&c.hourglassSrc, "hourglass-src", "..", "directory of the hourglass module, whose ./cmd/hourglass the beanstalk workload builds")
	fs.StringVar(&parts, "partitions", "1,3", "partition counts K of the cluster workload")
	fs.IntVar(&c.clusterMasters, "cluster-masters", 3, "masters of the cluster workload")
	fs.DurationVar(&c.asynqPoll, "asynq-poll", 0, "asynq TaskCheckInterval and DelayedTaskCheckInterval (0: asynq's defaults, 1 s and 5 s)")
	fs.IntVar(&c.schedules, "sched-schedules", 100000, "schedules (@every 1s) of the schedfires workload")
	fs.IntVar(&c.schedAsynqSchedules, "sched-asynq-schedules", 10000, "asynq's entries per Scheduler in the schedfires workload (asynq collapses with many more)")
	fs.StringVar(&schedInstances, "sched-instances", "1,4", "instance counts of the schedfires workload (schedule.Clients, asynq Schedulers)")
	fs.IntVar(&c.schedLateSchedules, "sched-late-schedules", 1000, "schedules (@every 1s) of the schedlateness workload")
	fs.IntVar(&c.schedLateInstances, "sched-late-instances", 2, "instances (each firing and consuming) of the schedlateness workload")
	fs.IntVar(&c.schedMemSchedules, "sched-mem-schedules", 10000, "schedules of the schedmemory workload")
	fs.DurationVar(&c.schedWarmup, "sched-warmup", 3*time.Second, "schedfires and schedlateness: time from the start of the schedulers to the window")
	fs.DurationVar(&c.schedWindow, "sched-window", 10*time.Second, "schedfires and schedlateness: the measured window")
	fs.Float64Var(&c.maxOtherLoad, "max-other-load", 0.2, "CPU, in cores, that other programs may use during a run before it counts as disturbed")
	fs.DurationVar(&c.waitIdle, "wait-idle", 30*time.Second, "before each run, wait up to this long for other programs to go quiet (0: do not wait)")
	fs.IntVar(&c.retries, "retries", 2, "run a disturbed run again up to this many times, keeping the least disturbed one")
	fs.StringVar(&c.node, "node", "node", "node binary")
	fs.StringVar(&c.bullScript, "bullmq", "bullmq/bench.mjs", "the BullMQ script (run npm install in its directory first)")
	fs.StringVar(&c.redisServer, "redis-server", "redis-server", "redis-server binary")
	fs.StringVar(&c.redisCLI, "redis-cli", "redis-cli", "redis-cli binary (for the cluster)")
	fs.StringVar(&c.jsonOut, "json", "", "write the results as JSON to this file")
	fs.BoolVar(&c.verbose, "v", false, "pass on the stderr of node")
	fs.StringVar(&c.cpuProfile, "cpuprofile", "", "write a CPU profile of this process (the Go clients: hourglass, asynq) to this file")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *quick {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		def := func(name string, apply func()) {
			if !set[name] {
				apply()
			}
		}
		def("jobs", func() { c.jobs = 5000 })
		def("delay-jobs", func() { c.delayJobs = 2000 })
		def("mem-jobs", func() { c.memJobs = 5000 })
		def("max-delay", func() { c.maxDelay = 3 * time.Second })
		def("rounds", func() { c.rounds = 1 })
		def("ops", func() { c.ops = 2000 })
		def("latency-ops", func() { c.latencyOps = 500 })
	}
	for _, s := range splitList(systems) {
		if allSystems[s] == nil {
			return nil, fmt.Errorf("-systems: unknown system %q", s)
		}
		c.systems = append(c.systems, s)
	}
	for _, w := range splitList(workloads) {
		if !slices.Contains(workloadOrder, w) {
			return nil, fmt.Errorf("-workloads: unknown workload %q (have %s)", w, strings.Join(workloadOrder, ","))
		}
		c.workloads = append(c.workloads, w)
	}
	var err error
	if c.schedInstances, err = parseInstances(schedInstances); err != nil {
		return nil, err
	}
	for _, p := range splitList(parts) {
		var k int
		if _, err := fmt.Sscan(p, &k); err != nil || k < 1 || k > 256 {
			return nil, fmt.Errorf("-partitions: bad count %q", p)
		}
		c.partitions = append(c.partitions, k)
	}
	switch {
	case c.jobs < 1 || c.delayJobs < 1 || c.memJobs < 1 || c.producers < 1 || c.concurrency < 1 || c.rounds < 1 || c.ops < 1 || c.latencyOps < 1:
		return nil, errors.New("-jobs, -delay-jobs, -mem-jobs, -ops, -latency-ops, -producers, -concurrency and -rounds must be at least 1")
	case c.batch < 1 || c.batch > 1000:
		return nil, errors.New("-batch must be 1 to 1000")
	case c.body < 8:
		return nil, errors.New("-body must be at least 8 (the lateness workload stores the due time in it)")
	case c.minDelay < time.Millisecond || c.maxDelay < c.minDelay:
		return nil, errors.New("want 1ms <= -min-delay <= -max-delay")
	case c.retries < 0 || c.maxOtherLoad < 0:
		return nil, errors.New("-retries and -max-other-load must not be negative")
	case c.schedules < 1 || c.schedAsynqSchedules < 1 || c.schedLateSchedules < 1 || c.schedLateInstances < 1 || c.schedMemSchedules < 1:
		return nil, errors.New("-sched-schedules, -sched-late-schedules, -sched-late-instances and -sched-mem-schedules must be at least 1")
	case c.schedWarmup < 0 || c.schedWindow < time.Second:
		return nil, errors.New("want -sched-warmup >= 0 and -sched-window >= 1s")
	case c.clusterMasters < 3:
		return nil, errors.New("-cluster-masters must be at least 3")
	}
	return c, nil
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func (c *config) has(workload string) bool { return slices.Contains(c.workloads, workload) }

func (c *config) summary() map[string]any {
	return map[string]any{
		"jobs": c.jobs, "delay_jobs": c.delayJobs, "mem_jobs": c.memJobs, "ops": c.ops, "latency_ops": c.latencyOps,
		"producers": c.producers, "concurrency": c.concurrency, "batch": c.batch, "body": c.body,
		"min_delay_ms": c.minDelay.Milliseconds(), "max_delay_ms": c.maxDelay.Milliseconds(),
		"rounds": c.rounds, "timeout_s": c.timeout.Seconds(), "systems": c.systems, "workloads": c.workloads,
		"partitions": c.partitions, "cluster_masters": c.clusterMasters, "asynq_poll_ms": c.asynqPoll.Milliseconds(),
		"sched_schedules": c.schedules, "sched_asynq_schedules": c.schedAsynqSchedules, "sched_instances": c.schedInstances, "sched_late_schedules": c.schedLateSchedules,
		"sched_late_instances": c.schedLateInstances, "sched_mem_schedules": c.schedMemSchedules,
		"sched_warmup_s": c.schedWarmup.Seconds(), "sched_window_s": c.schedWindow.Seconds(),
		"max_other_load": c.maxOtherLoad, "wait_idle_s": c.waitIdle.Seconds(), "retries": c.retries,
	}
}

// preflight checks the tools the selected runs need.
func preflight(cfg *config, rep *report) error {
	if _, err := exec.LookPath(cfg.redisServer); err != nil {
		return fmt.Errorf("%s not found (apt-get install redis-server): %w", cfg.redisServer, err)
	}
	if out, err := exec.Command(cfg.redisServer, "--version").Output(); err == nil {
		rep.Machine["redis_server"] = strings.TrimSpace(string(out))
	}
	if cfg.has("cluster") {
		if _, err := exec.LookPath(cfg.redisCLI); err != nil {
			return fmt.Errorf("%s not found (apt-get install redis-tools): %w", cfg.redisCLI, err)
		}
	}
	if cfg.has("beanstalk") {
		if _, err := exec.LookPath(cfg.beanstalkd); err != nil {
			return fmt.Errorf("%s not found (apt-get install beanstalkd): %w", cfg.beanstalkd, err)
		}
		if _, err := hourglassBinary(cfg); err != nil {
			return err
		}
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			switch d.Path {
			case "github.com/hibiken/asynq", "github.com/redis/go-redis/v9", "github.com/bsm/redislock", "github.com/go-redis/redis_rate/v10":
				rep.Machine[d.Path] = d.Version
			}
		}
	}
	if slices.Contains(cfg.systems, "bullmq") && hasStandalone(cfg) {
		v, err := nodeVersion(cfg.node)
		if err != nil {
			return fmt.Errorf("%s --version: %w (install Node.js 20 or later, or leave bullmq out of -systems)", cfg.node, err)
		}
		rep.Machine["node"] = v
		pkg := filepath.Join(filepath.Dir(cfg.bullScript), "node_modules", "bullmq", "package.json")
		data, err := os.ReadFile(pkg)
		if err != nil {
			return fmt.Errorf("BullMQ is not installed next to %s: run `npm install` in %s (%w)", cfg.bullScript, filepath.Dir(cfg.bullScript), err)
		}
		var p struct{ Version string }
		if json.Unmarshal(data, &p) == nil {
			rep.Machine["bullmq"] = p.Version
		}
	}
	return nil
}

func hasStandalone(cfg *config) bool {
	for _, w := range cfg.workloads {
		if w != "cluster" {
			return true
		}
	}
	return false
}

func run(ctx context.Context, cfg *config, rep *report) error {
	if err := preflight(cfg, rep); err != nil {
		return err
	}
	if hasStandalone(cfg) {
		if err := runStandalone(ctx, cfg, rep); err != nil {
			return err
		}
	}
	if cfg.has("cluster") {
		return runCluster(ctx, cfg, rep)
	}
	return nil
}

func runStandalone(ctx context.Context, cfg *config, rep *report) error {
	srv, err := startRedis(cfg.redisServer, false)
	if err != nil {
		return err
	}
	defer srv.stop()
	// FLUSHALL of a large run (100,000 schedules and their jobs) can take
	// seconds on a busy machine: more than go-redis's default 3 s.
	admin := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1, ReadTimeout: time.Minute, WriteTimeout: time.Minute})
	defer admin.Close()
	e := &env{cfg: cfg, addr: srv.Addr, admin: admin, flush: func(ctx context.Context) error { return admin.FlushAll(ctx).Err() }}
	logf("redis-server pid %d on %s", srv.cmd.Process.Pid, srv.Addr)

	for r := 0; r < cfg.rounds; r++ {
		order := rotate(cfg.systems, r)
		for _, w := range cfg.workloads {
			if slices.Contains(compareWorkloads, w) {
				if err := runCompare(ctx, e, rep, r, w); err != nil {
					return err
				}
				continue
			}
			for _, name := range order {
				s := allSystems[name]
				var err error
				switch w {
				case "put":
					err = measure(ctx, e, rep, r, "put", name, s.Put)
					if err == nil {
						err = measure(ctx, e, rep, r, "put_batch", name, s.PutBatch)
					}
				case "consume":
					err = measure(ctx, e, rep, r, "consume", name, s.Consume)
				case "lateness":
					err = measureLateness(ctx, e, rep, r, name, s.Lateness)
				case "memory":
					err = measure(ctx, e, rep, r, "bytes_per_delayed_job", name, s.Memory)
				}
				if err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// rotate returns xs rotated left by r: round r starts with a different system.
func rotate(xs []string, r int) []string {
	out := make([]string, len(xs))
	for i := range xs {
		out[i] = xs[(i+r)%len(xs)]
	}
	return out
}

// measure runs one workload on one system and records its figure.
func measure(ctx context.Context, e *env, rep *report, round int, metric, sys string, fn func(context.Context, *env) (float64, error)) error {
	return runWith(ctx, e, rep, round, metric, sys, func(ctx context.Context) (string, []measurement, error) {
		v, err := fn(ctx, e)
		if err != nil {
			return "", nil, err
		}
		return fmt.Sprintf("%.0f %s", v, metricByID(metric).unit), []measurement{{metric, v}}, nil
	})
}

func measureLateness(ctx context.Context, e *env, rep *report, round int, sys string, fn func(context.Context, *env) (latencyStats, error)) error {
	return runWith(ctx, e, rep, round, "lateness", sys, func(ctx context.Context) (string, []measurement, error) {
		l, err := fn(ctx, e)
		if err != nil {
			return "", nil, err
		}
		return fmt.Sprintf("p50 %.1f ms, p99 %.1f ms, max %.1f ms", l.P50, l.P99, l.Max),
			[]measurement{{"lateness_p50", l.P50}, {"lateness_p99", l.P99}, {"lateness_max", l.Max}}, nil
	})
}

// measurement is one figure of one run.
type measurement struct {
	metric string
	value  float64
}

// runWith runs fn (one workload on one system) and records its figures.
// Other programs on the machine skew them, so it first waits (up to
// -wait-idle) for them to go quiet, and runs again (up to -retries times)
// when they used more than -max-other-load cores during the run, keeping the
// run they disturbed least.
func runWith(ctx context.Context, e *env, rep *report, round int, what, sys string, fn func(context.Context) (string, []measurement, error)) error {
	cfg := e.cfg
	var best *attempt
	for try := 0; ; try++ {
		waitIdle(ctx, cfg)
		a, err := runOnce(ctx, e, round, what, sys, fn)
		if errors.Is(err, errUnsupported) {
			return nil
		}
		if err != nil {
			return err
		}
		if best == nil || a.load < best.load {
			best = &a
		}
		if !(a.load > cfg.maxOtherLoad) || try >= cfg.retries {
			break
		}
		logf("round %d/%d  %-22s %-10s %s  (other programs used %.2f cores: running it again)", round+1, cfg.rounds, what, sys, a.msg, a.load)
	}
	for _, m := range best.ms {
		rep.add(m.metric, sys, round, m.value, best.load)
	}
	if best.cpu != nil {
		rep.RedisCPU = append(rep.RedisCPU, redisCPU{Round: round + 1, Workload: what, System: sys, Commands: best.cpu})
		logf("round %d/%d  %-22s %-10s Redis: %s", round+1, cfg.rounds, what, sys, fmtCommands(best.cpu))
	}
	rep.Runs++
	if best.load > cfg.maxOtherLoad {
		rep.Disturbed++
	}
	logf("round %d/%d  %-22s %-10s %s  (%.1f s, other programs %.2f cores)", round+1, cfg.rounds, what, sys, best.msg, best.secs, best.load)
	return nil
}

// attempt is the outcome of one run.
type attempt struct {
	msg  string
	ms   []measurement
	secs float64
	load float64    // cores used by other programs meanwhile
	cpu  []cmdDelta // hourglass on a standalone server: Redis CPU per command
}

// runOnce flushes the server and runs fn under cfg.timeout.
func runOnce(ctx context.Context, e *env, round int, what, sys string, fn func(context.Context) (string, []measurement, error)) (attempt, error) {
	cfg := e.cfg
	if err := e.flush(ctx); err != nil {
		return attempt{}, fmt.Errorf("FLUSHALL: %w", err)
	}
	rctx, cancel := context.WithTimeoutCause(ctx, cfg.timeout, fmt.Errorf("%s on %s took longer than %v", what, sys, cfg.timeout))
	defer cancel()
	// A run that ignores its context past the timeout ends the program.
	watchdog := time.AfterFunc(cfg.timeout+30*time.Second, func() {
		logf("round %d, %s, %s: still running %v after its timeout; exiting", round+1, what, sys, 30*time.Second)
		stopAllServers()
		os.Exit(1)
	})
	defer watchdog.Stop()
	var stats0 map[string]commandStats
	if sys == "hourglass" && e.cluster == nil {
		var err error
		if stats0, err = readCommandStats(ctx, e.admin); err != nil {
			return attempt{}, fmt.Errorf("INFO commandstats: %w", err)
		}
	}
	var meter *cpuMeter
	if e.cluster == nil {
		rctx, meter = withCPUMeter(rctx, e.admin)
	}
	before := sampleCPU()
	msg, ms, err := fn(rctx)
	after := sampleCPU()
	if meter != nil && err == nil {
		got, merr := meter.measurements()
		if merr != nil {
			return attempt{}, fmt.Errorf("round %d, %s, %s: INFO cpu: %w", round+1, what, sys, merr)
		}
		ms = append(ms, got...)
		for _, m := range got {
			msg += fmt.Sprintf("; Redis %.1f µs/job (%s)", m.value, m.metric)
		}
	}
	var cpu []cmdDelta
	if stats0 != nil && err == nil {
		stats1, serr := readCommandStats(ctx, e.admin)
		if serr != nil {
			return attempt{}, fmt.Errorf("INFO commandstats: %w", serr)
		}
		cpu = diffCommandStats(stats0, stats1)
	}
	if err != nil {
		if cause := context.Cause(rctx); cause != nil && !strings.Contains(err.Error(), cause.Error()) {
			err = fmt.Errorf("%w (%v)", cause, err)
		}
		if errors.Is(err, errUnsupported) {
			return attempt{}, err
		}
		return attempt{}, fmt.Errorf("round %d, %s, %s: %w", round+1, what, sys, err)
	}
	return attempt{msg: msg, ms: ms, secs: after.at.Sub(before.at).Seconds(), load: otherLoad(before, after), cpu: cpu}, nil
}

// waitIdle waits, up to cfg.waitIdle, for a half second in which other
// programs use at most cfg.maxOtherLoad cores.
func waitIdle(ctx context.Context, cfg *config) {
	if cfg.waitIdle <= 0 {
		return
	}
	deadline := time.Now().Add(cfg.waitIdle)
	for ctx.Err() == nil {
		a := sampleCPU()
		select {
		case <-ctx.Done():
			return
		case <-time.After(500 * time.Millisecond):
		}
		load := otherLoad(a, sampleCPU())
		if !(load > cfg.maxOtherLoad) {
			return
		}
		if time.Now().After(deadline) {
			logf("other programs still use %.2f cores after waiting %v; going on", load, cfg.waitIdle)
			return
		}
	}
}

func runCluster(ctx context.Context, cfg *config, rep *report) error {
	logf("starting a %d-master cluster", cfg.clusterMasters)
	cl, err := startCluster(cfg.redisServer, cfg.redisCLI, cfg.clusterMasters)
	if err != nil {
		return err
	}
	defer cl.stop()
	var admins []*redis.Client
	for _, a := range cl.addrs() {
		c := redis.NewClient(&redis.Options{Addr: a, MaxRetries: -1, ReadTimeout: time.Minute, WriteTimeout: time.Minute})
		defer c.Close()
		admins = append(admins, c)
	}
	e := &env{cfg: cfg, cluster: cl.addrs(), admin: admins[0], flush: func(ctx context.Context) error {
		for _, c := range admins {
			if err := c.FlushAll(ctx).Err(); err != nil {
				return err
			}
		}
		return nil
	}}
	hg := hourglass{}
	for r := 0; r < cfg.rounds; r++ {
		for i := range cfg.partitions {
			k := cfg.partitions[(i+r)%len(cfg.partitions)]
			put := func(ctx context.Context, e *env) (float64, error) { return hg.ClusterPut(ctx, e, k) }
			con := func(ctx context.Context, e *env) (float64, error) { return hg.ClusterConsume(ctx, e, k) }
			if err := measure(ctx, e, rep, r, fmt.Sprintf("cluster_put_k%d", k), "hourglass", put); err != nil {
				return err
			}
			if err := measure(ctx, e, rep, r, fmt.Sprintf("cluster_consume_k%d", k), "hourglass", con); err != nil {
				return err
			}
		}
	}
	return nil
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s  %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// machine describes where the benchmark ran.
func machine() map[string]string {
	m := map[string]string{
		"cpus": fmt.Sprint(runtime.NumCPU()), "goos": runtime.GOOS, "goarch": runtime.GOARCH, "go": runtime.Version(),
	}
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(line, "model name"); ok {
				m["cpu"] = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		line, _, _ := strings.Cut(string(data), "\n")
		m["memory"] = strings.Join(strings.Fields(strings.TrimPrefix(line, "MemTotal:")), " ")
	}
	return m
}

// loadavg returns the 1, 5 and 15 minute load averages: other work on the
// machine skews every figure, so the report keeps them.
func loadavg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func parseFloat(s string) float64 {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return math.NaN()
	}
	return v
}
