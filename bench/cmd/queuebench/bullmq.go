package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// bullmq runs the workloads on BullMQ through `node bullmq/bench.mjs`,
// which prints one JSON object on stdout.
type bullmq struct{}

func (bullmq) Name() string { return "bullmq" }

// bullResult is what bench.mjs prints.
type bullResult struct {
	Workload    string  `json:"workload"`
	Jobs        int     `json:"jobs"`
	Seconds     float64 `json:"seconds"`
	PerSec      float64 `json:"per_sec"`
	P50         float64 `json:"p50_ms"`
	P99         float64 `json:"p99_ms"`
	Max         float64 `json:"max_ms"`
	BytesPerJob float64 `json:"bytes_per_job"`
	Error       string  `json:"error"`
	// RedisCPUUs is Redis's CPU over the timed phase (INFO cpu), µs.
	RedisCPUUs float64 `json:"redis_cpu_us"`

	// The schedule workloads.
	Schedules        int     `json:"schedules"`
	SetupSeconds     float64 `json:"setup_seconds"`
	Duplicates       int     `json:"duplicates"`
	Unknown          int     `json:"unknown"`
	BytesPerSchedule float64 `json:"bytes_per_schedule"`
}

func runNode(ctx context.Context, e *env, workload string, extra ...string) (bullResult, error) {
	host, port, err := net.SplitHostPort(e.addr)
	if err != nil {
		return bullResult{}, err
	}
	args := []string{e.cfg.bullScript,
		"--host", host, "--port", port, "--workload", workload,
		"--jobs", strconv.Itoa(e.cfg.jobs),
		"--delay-jobs", strconv.Itoa(e.cfg.delayJobs),
		"--mem-jobs", strconv.Itoa(e.cfg.memJobs),
		"--producers", strconv.Itoa(e.cfg.producers),
		"--concurrency", strconv.Itoa(e.cfg.concurrency),
		"--batch", strconv.Itoa(e.cfg.batch),
		"--body", strconv.Itoa(e.cfg.body),
		"--min-delay-ms", strconv.FormatInt(e.cfg.minDelay.Milliseconds(), 10),
		"--max-delay-ms", strconv.FormatInt(e.cfg.maxDelay.Milliseconds(), 10),
		"--timeout-ms", strconv.FormatInt(e.cfg.timeout.Milliseconds(), 10),
		"--ops", strconv.Itoa(e.cfg.ops),
	}
	args = append(args, extra...)
	cmd := exec.CommandContext(ctx, e.cfg.node, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// Kill only the node process we started, by its PID, when ctx ends.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	err = cmd.Run()
	if e.cfg.verbose && stderr.Len() > 0 {
		_, _ = os.Stderr.Write(stderr.Bytes())
	}
	if ctx.Err() != nil {
		return bullResult{}, fmt.Errorf("node %s: %w", workload, context.Cause(ctx))
	}
	out := strings.TrimSpace(stdout.String())
	if i := strings.LastIndexByte(out, '\n'); i >= 0 {
		out = out[i+1:]
	}
	var r bullResult
	if jerr := json.Unmarshal([]byte(out), &r); jerr != nil {
		return bullResult{}, fmt.Errorf("node %s: %v; stdout %q; stderr:\n%s", workload, err, out, tail(stderr.String(), 20))
	}
	if r.Error != "" {
		return bullResult{}, fmt.Errorf("node %s: %s", workload, r.Error)
	}
	if err != nil {
		return bullResult{}, fmt.Errorf("node %s: %v; stderr:\n%s", workload, err, tail(stderr.String(), 20))
	}
	return r, nil
}

// withCPU records r's Redis CPU per job as metric's.
func withCPU(ctx context.Context, metric string, r bullResult, err error) (float64, error) {
	if err == nil && r.Jobs > 0 {
		cpuRecord(ctx, metric, r.RedisCPUUs/float64(r.Jobs))
	}
	return r.PerSec, err
}

func (bullmq) Put(ctx context.Context, e *env) (float64, error) {
	r, err := runNode(ctx, e, "put")
	return withCPU(ctx, "put", r, err)
}

func (bullmq) PutBatch(ctx context.Context, e *env) (float64, error) {
	r, err := runNode(ctx, e, "putbulk")
	return withCPU(ctx, "put_batch", r, err)
}

func (bullmq) Consume(ctx context.Context, e *env) (float64, error) {
	r, err := runNode(ctx, e, "consume")
	return withCPU(ctx, "consume", r, err)
}

// PutDelayed puts cfg.ops jobs delayed by 1 to 4 s while a Worker waits;
// puts/s, and Redis CPU per job until every job was processed.
func (bullmq) PutDelayed(ctx context.Context, e *env) (float64, error) {
	r, err := runNode(ctx, e, "putdelayed")
	return withCPU(ctx, "put_delayed", r, err)
}

func (bullmq) Lateness(ctx context.Context, e *env) (latencyStats, error) {
	r, err := runNode(ctx, e, "lateness")
	return latencyStats{P50: r.P50, P99: r.P99, Max: r.Max, N: r.Jobs}, err
}

func (bullmq) Memory(ctx context.Context, e *env) (float64, error) {
	r, err := runNode(ctx, e, "memory")
	return r.BytesPerJob, err
}

// nodeVersion returns `node --version`, or an error when node is missing.
func nodeVersion(node string) (string, error) {
	out, err := exec.Command(node, "--version").Output()
	return strings.TrimSpace(string(out)), err
}
