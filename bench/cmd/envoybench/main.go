// Command envoybench measures Envoy's rate limit service,
// ShouldRateLimit over gRPC, from concurrent client streams: hourglass's
// server/envoyrl on redisstore (with GCRA, the approximate sliding window
// and the exact sliding log), beside envoyproxy/ratelimit itself (its
// fixed windows), both in this process, on one fresh redis-server that it
// starts itself, in one run. Each system gets the same configuration in
// envoyproxy/ratelimit's format and the same requests: one descriptor,
// a key drawn at random from -keys values, limit -limit per minute.
//
// It prints, per system, the calls per second and the p50 and p99
// latency of a call (medians over the rounds, each system measured in turn
// in every round), and the CPU time per call of the redis-server (INFO
// cpu) and of this process (the clients and the measured service): on a
// busy machine, where the calls per second follow the share of the CPU
// the run gets, the CPU per call is the steadier comparison.
//
// cd bench && go run ./cmd/envoybench [-streams 16] [-duration 5s] [-rounds 3]
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/envoyproxy/ratelimit/src/service_cmd/runner"
	"github.com/envoyproxy/ratelimit/src/settings"
	"github.com/hourglass-io/hourglass/internal/testkit/redistest"
	"github.com/hourglass-io/hourglass/memstore"
	"github.com/hourglass-io/hourglass/ratelimit"
	"github.com/hourglass-io/hourglass/redisstore"
	"github.com/hourglass-io/hourglass/server/envoyrl"
	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

func main() {
	streams := flag.Int("streams", 16, "concurrent client streams (one gRPC connection each)")
	duration := flag.Duration("duration", 5*time.Second, "how long each system is measured per round")
	rounds := flag.Int("rounds", 3, "rounds; the figures are medians over them")
	keys := flag.Int("keys", 10000, "distinct descriptor values")
	limit := flag.Int("limit", 100, "requests per minute per value")
	only := flag.String("only", "", "measure only the systems whose name contains one of these (comma-separated)")
	cmdstats := flag.Bool("commandstats", false, "print the redis-server's INFO commandstats after each system's rounds")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the whole run (clients and servers of this process) to this file")
	flag.Parse()
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}

	srv, err := redistest.StartStandalone()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	addr, stop := srv.Addr, srv.Stop
	defer stop()

	type system struct {
		name  string
		start func() (target string, stop func(), err error)
	}
	systems := []system{
		{"hourglass gcra", func() (string, func(), error) { return startHourglass(addr, *limit, "gcra") }},
		{"hourglass embedded gcra", func() (string, func(), error) { return startHourglass("", *limit, "gcra") }},
		{"hourglass sliding_window", func() (string, func(), error) { return startHourglass(addr, *limit, "sliding_window") }},
		{"hourglass sliding_log", func() (string, func(), error) { return startHourglass(addr, *limit, "sliding_log") }},
		{"envoyproxy/ratelimit (fixed window)", func() (string, func(), error) { return startEnvoyRatelimit(addr, *limit) }},
	}
	if *only != "" {
		systems = slices.DeleteFunc(systems, func(s system) bool {
			for _, o := range strings.Split(*only, ",") {
				if strings.Contains(s.name, o) {
					return false
				}
			}
			return true
		})
	}
	fmt.Printf("envoybench: %d streams, %v per round, %d rounds, %d values, %d/minute each, redis-server %s\n",
		*streams, *duration, *rounds, *keys, *limit, addr)
	// Every system serves throughout; each round measures each in turn, so
	// that all see the same load on the machine.
	targets := make([]string, len(systems))
	for i, sys := range systems {
		target, stopSys, err := sys.start()
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s could not start: %v\n", sys.name, err)
			os.Exit(1)
		}
		defer stopSys()
		targets[i] = target
	}
	type figures struct {
		rates, p50s, p99s, redisUS, procUS []float64
		ok, over                           int64
	}
	rc := redis.NewClient(&redis.Options{Addr: addr})
	defer rc.Close()
	figs := make([]figures, len(systems))
	for range *rounds {
		for i, sys := range systems {
			if *cmdstats {
				rc.ConfigResetStat(context.Background())
			}
			cpu0, proc0 := redisCPU(rc), processCPU()
			r, err := measure(targets[i], *streams, *duration, *keys)
			cpu1, proc1 := redisCPU(rc), processCPU()
			if err != nil {
				fmt.Fprintf(os.Stderr, "%s failed: %v\n", sys.name, err)
				os.Exit(1)
			}
			f := &figs[i]
			f.rates = append(f.rates, r.rate)
			f.p50s = append(f.p50s, float64(r.p50.Microseconds()))
			f.p99s = append(f.p99s, float64(r.p99.Microseconds()))
			f.ok, f.over = f.ok+r.ok, f.over+r.over
			f.redisUS = append(f.redisUS, (cpu1-cpu0)*1e6/float64(r.calls))
			f.procUS = append(f.procUS, (proc1-proc0)*1e6/float64(r.calls))
			if *cmdstats {
				info, _ := rc.Info(context.Background(), "commandstats").Result()
				fmt.Printf("%s, %d calls:\n%s\n", sys.name, r.calls, strings.TrimSpace(info))
			}
		}
	}
	for i, sys := range systems {
		f := figs[i]
		fmt.Printf("%-38s %9.0f calls/s   p50 %6.0f µs   p99 %6.0f µs   CPU µs/call: Redis %5.1f, this process %5.1f   (OK %d, OVER_LIMIT %d)   rounds: %s\n",
			sys.name, median(f.rates), median(f.p50s), median(f.p99s), median(f.redisUS), median(f.procUS), f.ok, f.over, roundsOf(f.rates))
	}
}

func config(limit int, algorithm string) string {
	s := "domain: bench\ndescriptors:\n  - key: client\n    rate_limit:\n      unit: minute\n      requests_per_unit: " + strconv.Itoa(limit) + "\n"
	if algorithm != "" {
		s += "      algorithm: " + algorithm + "\n"
	}
	return s
}

// startHourglass serves envoyrl on redisstore at addr, or on the
// embedded engine when addr is "".
func startHourglass(addr string, limit int, algorithm string) (string, func(), error) {
	var store ratelimit.Store
	var closeStore func()
	if addr == "" {
		ms, err := memstore.New(nil)
		if err != nil {
			return "", nil, err
		}
		store, closeStore = ms.RateLimits(), func() { ms.Close() }
	} else {
		c := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 64})
		st, err := redisstore.New(context.Background(), c, &redisstore.Options{Prefix: "hgbench:" + algorithm + ":"})
		if err != nil {
			return "", nil, err
		}
		store, closeStore = st.RateLimits(), func() { st.Close(); c.Close() }
	}
	dir, err := os.MkdirTemp("", "envoybench")
	if err != nil {
		return "", nil, err
	}
	p := filepath.Join(dir, "bench.yaml")
	if err := os.WriteFile(p, []byte(config(limit, algorithm)), 0o644); err != nil {
		return "", nil, err
	}
	cfg, err := envoyrl.LoadConfig(p)
	if err != nil {
		return "", nil, err
	}
	limiter, err := ratelimit.New(store, nil)
	if err != nil {
		return "", nil, err
	}
	srv := &envoyrl.Server{Limiter: limiter, Config: cfg}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	done := make(chan struct{})
	go func() { srv.Serve(l); close(done) }()
	return l.Addr().String(), func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		<-done
		closeStore()
		os.RemoveAll(dir)
	}, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// startEnvoyRatelimit runs envoyproxy/ratelimit's own runner in this
// process, on the same redis-server, with its defaults but for the ports,
// the stats sink (Prometheus instead of statsd) and the Redis address.
func startEnvoyRatelimit(addr string, limit int) (string, func(), error) {
	dir, err := os.MkdirTemp("", "envoybench-rl")
	if err != nil {
		return "", nil, err
	}
	if err := os.MkdirAll(filepath.Join(dir, "rl", "config"), 0o755); err != nil {
		return "", nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "rl", "config", "bench.yaml"), []byte(config(limit, "")), 0o644); err != nil {
		return "", nil, err
	}
	s := settings.NewSettings()
	var ports [4]int
	for i := range ports {
		if ports[i], err = freePort(); err != nil {
			return "", nil, err
		}
	}
	s.Host, s.Port, s.DebugHost, s.DebugPort, s.GrpcHost, s.GrpcPort = "127.0.0.1", ports[0], "127.0.0.1", ports[1], "127.0.0.1", ports[2]
	// Its Prometheus sink, as hourglass keeps Prometheus counters (its
	// default without statsd logs every timer to stderr).
	s.UseStatsd, s.UsePrometheus, s.PrometheusAddr = false, true, "127.0.0.1:"+strconv.Itoa(ports[3])
	s.RuntimePath, s.RuntimeSubdirectory, s.RuntimeWatchRoot = dir, "rl", false
	s.BackendType, s.RedisSocketType, s.RedisType, s.RedisUrl, s.RedisPoolSize = "redis", "tcp", "SINGLE", addr, 64
	s.LogLevel = "WARN"
	r := runner.NewRunner(s)
	done := make(chan struct{})
	go func() { r.Run(); close(done) }()
	target := "127.0.0.1:" + strconv.Itoa(ports[2])
	// Wait until it answers.
	deadline := time.Now().Add(15 * time.Second)
	for {
		conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			_, err = rlsv3.NewRateLimitServiceClient(conn).ShouldRateLimit(ctx, request("warm"))
			cancel()
			conn.Close()
			if err == nil {
				break
			}
		}
		if time.Now().After(deadline) {
			r.Stop()
			return "", nil, fmt.Errorf("envoyproxy/ratelimit did not answer: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return target, func() { r.Stop(); os.RemoveAll(dir) }, nil
}

func request(value string) *rlsv3.RateLimitRequest {
	return &rlsv3.RateLimitRequest{Domain: "bench", Descriptors: []*rlv3.RateLimitDescriptor{
		{Entries: []*rlv3.RateLimitDescriptor_Entry{{Key: "client", Value: value}}}}}
}

// redisCPU is the redis-server's CPU time so far, in seconds
// (used_cpu_user + used_cpu_sys of INFO cpu).
func redisCPU(c *redis.Client) float64 {
	info, err := c.Info(context.Background(), "cpu").Result()
	if err != nil {
		return 0
	}
	var sum float64
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && (k == "used_cpu_user" || k == "used_cpu_sys") {
			f, _ := strconv.ParseFloat(v, 64)
			sum += f
		}
	}
	return sum
}

// processCPU is this process's CPU time so far (user and system), in
// seconds: the clients' and the measured service's, as the others idle.
func processCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

func roundsOf(xs []float64) string {
	var s []string
	for _, x := range xs {
		s = append(s, strconv.FormatFloat(x, 'f', 0, 64))
	}
	return strings.Join(s, ",")
}

type result struct {
	calls    int
	rate     float64
	p50, p99 time.Duration
	ok, over int64
}

func measure(target string, streams int, d time.Duration, keys int) (result, error) {
	var mu sync.Mutex
	var lat []time.Duration
	var ok, over int64
	var firstErr error
	var wg sync.WaitGroup
	start := time.Now()
	end := start.Add(d)
	for range streams {
		// Fixed flow-control windows, as Envoy's: grpc-go's client
		// otherwise pings each connection once a round trip to estimate
		// its bandwidth (with one call in flight, once a call), and every
		// ping costs the service under test a write of its acknowledgement,
		// which Envoy never asks of it.
		conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithInitialWindowSize(1<<20), grpc.WithInitialConnWindowSize(1<<20))
		if err != nil {
			return result{}, err
		}
		defer conn.Close()
		c := rlsv3.NewRateLimitServiceClient(conn)
		wg.Go(func() {
			var mine []time.Duration
			var o, v int64
			for time.Now().Before(end) {
				t0 := time.Now()
				r, err := c.ShouldRateLimit(context.Background(), request(strconv.Itoa(rand.IntN(keys))))
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					return
				}
				mine = append(mine, time.Since(t0))
				if r.GetOverallCode() == rlsv3.RateLimitResponse_OK {
					o++
				} else {
					v++
				}
			}
			mu.Lock()
			lat = append(lat, mine...)
			ok, over = ok+o, over+v
			mu.Unlock()
		})
	}
	wg.Wait()
	if firstErr != nil {
		return result{}, firstErr
	}
	el := time.Since(start)
	slices.Sort(lat)
	if len(lat) == 0 {
		return result{}, fmt.Errorf("no call completed")
	}
	return result{calls: len(lat), rate: float64(len(lat)) / el.Seconds(), p50: lat[len(lat)/2], p99: lat[len(lat)*99/100], ok: ok, over: over}, nil
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}
