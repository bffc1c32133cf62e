// Command tubelimitbench measures how closely a rate-limited tube holds
// its rate under many workers in several processes, beside BullMQ's
// queue-wide limiter in the same run, on one fresh redis-server that it
// starts itself.
//
// For each system and round it fills a queue with more jobs than the rate
// lets through, starts -procs worker processes of -workers workers each at
// one instant, lets them take jobs for -duration, and records when each job
// was handed out. hourglass: a tube with limit -rate per second (GCRA,
// burst -burst), workers calling Queue.Reserve and Delete on redisstore.
// BullMQ: a Worker per process with concurrency -workers and the limiter
// {max: rate, duration: 1000}. It prints, per run, the rate achieved over
// the whole window against the limit, the most jobs handed out in any
// sliding second, and Redis's CPU per job.
//
//	cd bench && go run ./cmd/tubelimitbench [-rate 1000] [-duration 60s] [-procs 4] [-workers 4] [-rounds 1]
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/ratelimit"
	"github.com/hourglass-io/hourglass/redisstore"
	"github.com/redis/go-redis/v9"
)

type config struct {
	rate, burst    int
	procs, workers int
	duration       time.Duration
	rounds         int
	systems        []string
	node, script   string
	redisServer    string
	worker         bool // run as one worker process of hourglass
	addr           string
	startNS        int64
	jsonOut        string
}

const tube = "limited"

func main() {
	var c config
	var systems string
	flag.IntVar(&c.rate, "rate", 1000, "the limit: jobs per second")
	flag.IntVar(&c.burst, "burst", 1, "hourglass: the GCRA burst (BullMQ's limiter has none: its window is one second)")
	flag.IntVar(&c.procs, "procs", 4, "worker processes")
	flag.IntVar(&c.workers, "workers", 4, "workers per process (goroutines; BullMQ's concurrency)")
	flag.DurationVar(&c.duration, "duration", 60*time.Second, "how long the workers take jobs")
	flag.IntVar(&c.rounds, "rounds", 1, "rounds, alternating the systems")
	flag.StringVar(&systems, "systems", "hourglass,bullmq", "systems to run")
	flag.StringVar(&c.node, "node", "node", "node binary")
	flag.StringVar(&c.script, "bullmq", "bullmq/ratelimit.mjs", "the BullMQ script (npm ci in its directory first)")
	flag.StringVar(&c.redisServer, "redis-server", "redis-server", "redis-server binary")
	flag.StringVar(&c.jsonOut, "json", "", "write the results as JSON to this file")
	flag.BoolVar(&c.worker, "worker", false, "internal: run as a worker process")
	flag.StringVar(&c.addr, "addr", "", "internal: the Redis of a worker process")
	flag.Int64Var(&c.startNS, "start", 0, "internal: when a worker process starts taking jobs (Unix ns)")
	flag.Parse()
	c.systems = strings.Split(systems, ",")
	if c.worker {
		if err := hourglassWorker(&c); err != nil {
			fmt.Fprintln(os.Stderr, "tubelimitbench worker:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(&c); err != nil {
		fmt.Fprintln(os.Stderr, "tubelimitbench:", err)
		os.Exit(1)
	}
}

// result is one run of one system.
type result struct {
	System      string  `json:"system"`
	Round       int     `json:"round"`
	Jobs        int     `json:"jobs"`         // handed out within the window
	Rate        float64 `json:"rate"`         // Jobs / duration
	Error       float64 `json:"error"`        // (Rate - limit) / limit
	MaxSecond   int     `json:"max_second"`   // most jobs in any sliding second
	CPUPerJobUS float64 `json:"cpu_us_job"`   // Redis CPU (user+sys) per job
	Late        float64 `json:"first_job_ms"` // the first job after the start
}

func run(c *config) error {
	ctx := context.Background()
	addr, stop, err := startRedis(c.redisServer)
	if err != nil {
		return err
	}
	defer stop()
	admin := redis.NewClient(&redis.Options{Addr: addr})
	defer admin.Close()
	var results []result
	for round := 1; round <= c.rounds; round++ {
		order := slices.Clone(c.systems)
		if round%2 == 0 {
			slices.Reverse(order)
		}
		for _, sys := range order {
			if err := admin.FlushAll(ctx).Err(); err != nil {
				return err
			}
			var times []int64
			var start int64
			var cpuBefore float64
			switch sys {
			case "hourglass":
				if err := hourglassFill(ctx, c, addr); err != nil {
					return err
				}
				start = time.Now().Add(2 * time.Second).UnixNano()
				cpuBefore = redisCPU(ctx, admin)
				times, err = spawn(c.procs, func() *exec.Cmd {
					return exec.Command(os.Args[0], "-worker", "-addr", addr, "-workers", strconv.Itoa(c.workers),
						"-duration", c.duration.String(), "-start", strconv.FormatInt(start, 10))
				}, 1)
			case "bullmq":
				_, port, _ := net.SplitHostPort(addr)
				fill := exec.Command(c.node, c.script, "--port", port, "--role", "fill", "--jobs", strconv.Itoa(jobsFor(c)))
				if out, err := fill.CombinedOutput(); err != nil {
					return fmt.Errorf("bullmq fill: %v: %s", err, out)
				}
				start = time.Now().Add(3 * time.Second).UnixNano()
				cpuBefore = redisCPU(ctx, admin)
				times, err = spawn(c.procs, func() *exec.Cmd {
					return exec.Command(c.node, c.script, "--port", port, "--role", "work", "--concurrency", strconv.Itoa(c.workers),
						"--max", strconv.Itoa(c.rate), "--duration-ms", "1000",
						"--start-ms", strconv.FormatInt(start/1e6, 10), "--run-ms", strconv.FormatInt(c.duration.Milliseconds(), 10))
				}, int64(time.Millisecond))
			default:
				return fmt.Errorf("unknown system %q", sys)
			}
			if err != nil {
				return fmt.Errorf("%s: %w", sys, err)
			}
			cpu := redisCPU(ctx, admin) - cpuBefore
			r := summarize(c, sys, round, start, times)
			if r.Jobs > 0 {
				r.CPUPerJobUS = cpu / float64(r.Jobs) * 1e6
			}
			results = append(results, r)
			fmt.Printf("%-9s round %d: %6d jobs in %v = %8.2f/s (limit %d/s, %+.2f%%), most in any second %d, first job %.1f ms after the start, Redis CPU %.1f µs/job\n",
				r.System, r.Round, r.Jobs, c.duration, r.Rate, c.rate, 100*r.Error, r.MaxSecond, r.Late, r.CPUPerJobUS)
		}
	}
	if c.jsonOut != "" {
		b, _ := json.MarshalIndent(map[string]any{
			"command": "go run ./cmd/tubelimitbench " + strings.Join(os.Args[1:], " "),
			"date":    time.Now().UTC().Format(time.RFC3339),
			"rate":    c.rate, "burst": c.burst, "procs": c.procs, "workers": c.workers, "duration": c.duration.String(),
			"results": results,
		}, "", "  ")
		return os.WriteFile(c.jsonOut, b, 0o644)
	}
	return nil
}

// jobsFor is how many jobs a run needs: more than the rate lets through.
func jobsFor(c *config) int {
	return int(float64(c.rate)*c.duration.Seconds()*1.2) + c.burst + 1000
}

// summarize reads the hand-out times (Unix ns) of a run started at start.
func summarize(c *config, sys string, round int, start int64, times []int64) result {
	end := start + int64(c.duration)
	var in []int64
	for _, t := range times {
		if t >= start && t < end {
			in = append(in, t)
		}
	}
	slices.Sort(in)
	r := result{System: sys, Round: round, Jobs: len(in)}
	r.Rate = float64(len(in)) / c.duration.Seconds()
	r.Error = (r.Rate - float64(c.rate)) / float64(c.rate)
	for i, j := 0, 0; j < len(in); j++ {
		for in[j]-in[i] >= int64(time.Second) {
			i++
		}
		r.MaxSecond = max(r.MaxSecond, j-i+1)
	}
	if len(in) > 0 {
		r.Late = float64(in[0]-start) / 1e6
	}
	return r
}

// spawn runs n processes and gathers the times (in units of unit ns) each
// prints as {"times": [...]} on its last line of output.
func spawn(n int, mk func() *exec.Cmd, unit int64) ([]int64, error) {
	var (
		mu    sync.Mutex
		all   []int64
		first error
		wg    sync.WaitGroup
	)
	for range n {
		cmd := mk()
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			return nil, err
		}
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		wg.Go(func() {
			var last string
			sc := bufio.NewScanner(out)
			sc.Buffer(make([]byte, 1<<20), 1<<30)
			for sc.Scan() {
				last = sc.Text()
			}
			err := cmd.Wait()
			var r struct{ Times []float64 }
			if jerr := json.Unmarshal([]byte(last), &r); err == nil && jerr != nil {
				err = fmt.Errorf("reading %q: %v", last, jerr)
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				first = errors.Join(first, err)
				return
			}
			for _, t := range r.Times {
				all = append(all, int64(t)*unit)
			}
		})
	}
	wg.Wait()
	return all, first
}

// hourglassFill limits the tube and fills it.
func hourglassFill(ctx context.Context, c *config, addr string) error {
	rc := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer rc.Close()
	s, err := redisstore.New(ctx, rc, nil)
	if err != nil {
		return err
	}
	defer s.Close()
	q, err := queue.New(s, nil)
	if err != nil {
		return err
	}
	defer q.Close()
	l := queue.Limits{Rate: ratelimit.Limit{Events: c.rate, Per: time.Second, Burst: c.burst}}
	if err := q.SetLimits(ctx, tube, l); err != nil {
		return err
	}
	jobs := make([]queue.NewJob, 1000)
	for i := range jobs {
		jobs[i] = queue.NewJob{Body: make([]byte, 100), TTR: time.Minute}
	}
	for n := jobsFor(c); n > 0; n -= len(jobs) {
		if _, err := q.PutMany(ctx, tube, jobs[:min(n, len(jobs))]); err != nil {
			return err
		}
	}
	return nil
}

// hourglassWorker is one worker process: -workers goroutines reserving and
// deleting from the start for the duration; it prints the times.
func hourglassWorker(c *config) error {
	ctx := context.Background()
	rc := redis.NewClient(&redis.Options{Addr: c.addr, MaxRetries: -1, PoolSize: 2 * c.workers})
	defer rc.Close()
	s, err := redisstore.New(ctx, rc, nil)
	if err != nil {
		return err
	}
	defer s.Close()
	q, err := queue.New(s, nil)
	if err != nil {
		return err
	}
	defer q.Close()
	start, end := time.Unix(0, c.startNS), time.Unix(0, c.startNS).Add(c.duration)
	time.Sleep(time.Until(start))
	var (
		mu    sync.Mutex
		times []int64
		first error
		wg    sync.WaitGroup
	)
	for range c.workers {
		wg.Go(func() {
			var mine []int64
			defer func() {
				mu.Lock()
				times = append(times, mine...)
				mu.Unlock()
			}()
			for {
				left := time.Until(end)
				if left <= 0 {
					return
				}
				j, err := q.Reserve(ctx, queue.ReserveOptions{Tubes: []string{tube}, Timeout: left})
				if errors.Is(err, queue.ErrTimeout) {
					return
				}
				if err != nil {
					mu.Lock()
					first = errors.Join(first, err)
					mu.Unlock()
					return
				}
				mine = append(mine, time.Now().UnixNano())
				if err := q.Delete(ctx, j.ID); err != nil {
					mu.Lock()
					first = errors.Join(first, err)
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	if first != nil {
		return first
	}
	b, err := json.Marshal(map[string]any{"times": times})
	if err != nil {
		return err
	}
	fmt.Println(string(b))
	return nil
}

// redisCPU is the server's CPU time so far, in seconds.
func redisCPU(ctx context.Context, c *redis.Client) float64 {
	info, err := c.Info(ctx, "cpu").Result()
	if err != nil {
		return 0
	}
	var sum float64
	for line := range strings.SplitSeq(info, "\r\n") {
		k, v, ok := strings.Cut(line, ":")
		if ok && (k == "used_cpu_user" || k == "used_cpu_sys") {
			f, _ := strconv.ParseFloat(v, 64)
			sum += f
		}
	}
	return sum
}

// startRedis starts a redis-server on a free port of 127.0.0.1, without
// persistence, and returns its address and how to stop it (by its PID).
func startRedis(bin string) (string, func(), error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	addr := l.Addr().String()
	l.Close()
	_, port, _ := net.SplitHostPort(addr)
	cmd := exec.Command(bin, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	stop := func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	for deadline := time.Now().Add(10 * time.Second); ; {
		if c.Ping(context.Background()).Err() == nil {
			return addr, stop, nil
		}
		if time.Now().After(deadline) {
			stop()
			return "", nil, errors.New("redis-server did not answer within 10 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
