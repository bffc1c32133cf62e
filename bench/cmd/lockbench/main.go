// Command lockbench measures hourglass's locks on Redis beside the lock
// people write by hand (SET NX PX, DEL, waiters polling every 500 ms) and
// github.com/bsm/redislock with its retry, on one fresh redis-server that
// it starts itself, in one run:
//
//   - uncontended: obtain and release, one goroutine, calls per second,
//     Redis's CPU per obtain+release (INFO cpu used_cpu_user +
//     used_cpu_sys before and after, divided by the pairs) and this
//     process's (the client's, getrusage);
//   - hand-off: several goroutines contend for one lock, each releasing it
//     as soon as it has it; the latency from the release call to the next
//     holder's grant, p50 and p99.
//
// cd bench && go run ./cmd/lockbench [-handoffs 2000] [-contenders 8] [-rounds 3] [-systems a,b] [-uncontended-only]
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/bsm/redislock"
	"github.com/hourglass-io/hourglass/internal/testkit/redistest"
	"github.com/hourglass-io/hourglass/lock"
	"github.com/hourglass-io/hourglass/redisstore"
	"github.com/redis/go-redis/v9"
)

type locker interface {
	obtain(ctx context.Context) (release func(context.Context) error, err error)
}

type system struct {
	name string
	// slow systems run fewer hand-offs (a 500 ms poll makes each one slow).
	slow bool
	make func(c *redis.Client, key string) locker
}

func main() {
	handoffs := flag.Int("handoffs", 2000, "hand-offs per run of a fast system")
	slowHandoffs := flag.Int("slow-handoffs", 60, "hand-offs per run of a polling system")
	contenders := flag.Int("contenders", 8, "goroutines contending for the lock")
	uncontended := flag.Int("uncontended", 5000, "obtain+release pairs of the uncontended run")
	rounds := flag.Int("rounds", 3, "rounds; the figures are medians over them")
	hold := flag.Duration("hold", 2*time.Millisecond, "how long each holder keeps the lock (its work)")
	only := flag.String("systems", "", "comma-separated systems to run (default: all)")
	uncontendedOnly := flag.Bool("uncontended-only", false, "run the uncontended part only")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of this process (the clients) to this file")
	flag.Parse()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
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
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() { <-sig; stop(); os.Exit(1) }()
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, PoolSize: 64})
	defer c.Close()
	hs, err := redisstore.New(ctx, c, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer hs.Close()
	hc, _ := lock.New(hs.Locks(), nil)

	systems := []system{
		{"hourglass", false, func(_ *redis.Client, key string) locker { return hgLock{hc, key, false} }},
		{"hourglass-fair", false, func(_ *redis.Client, key string) locker { return hgLock{hc, key, true} }},
		{"redislock-retry-linear-100ms", true, func(c *redis.Client, key string) locker {
			return bsmLock{redislock.New(c), key, redislock.LinearBackoff(100 * time.Millisecond)}
		}},
		{"redislock-retry-exp-16ms-1s", true, func(c *redis.Client, key string) locker {
			return bsmLock{redislock.New(c), key, redislock.ExponentialBackoff(16*time.Millisecond, time.Second)}
		}},
		{"setnx-poll-500ms", true, func(c *redis.Client, key string) locker { return setnx{c, key} }},
	}
	if *only != "" {
		want := strings.Split(*only, ",")
		systems = slices.DeleteFunc(systems, func(s system) bool { return !slices.Contains(want, s.name) })
		if len(systems) == 0 {
			fmt.Fprintln(os.Stderr, "lockbench: -systems names none of the systems")
			os.Exit(2)
		}
	}
	type figures struct{ ops, cpu, own, p50, p99 []float64 }
	res := map[string]*figures{}
	for r := range *rounds {
		for _, sys := range systems {
			f := res[sys.name]
			if f == nil {
				f = &figures{}
				res[sys.name] = f
			}
			key := fmt.Sprintf("bench:%s:%d", sys.name, r)
			cpu0, err := redisCPU(ctx, c)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			own0 := processCPU()
			ops, err := runUncontended(ctx, sys.make(c, key+":u"), *uncontended)
			own1 := processCPU()
			if err != nil {
				fmt.Fprintln(os.Stderr, sys.name, err)
				os.Exit(1)
			}
			cpu1, err := redisCPU(ctx, c)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			f.ops = append(f.ops, ops)
			f.cpu = append(f.cpu, (cpu1-cpu0)*1e6/float64(*uncontended))
			f.own = append(f.own, (own1-own0)*1e6/float64(*uncontended))
			if *uncontendedOnly {
				fmt.Fprintf(os.Stderr, "round %d %-30s %8.0f ops/s  Redis %6.2f µs/pair  client %6.2f µs/pair\n", r+1, sys.name, ops, f.cpu[len(f.cpu)-1], f.own[len(f.own)-1])
				continue
			}
			n := *handoffs
			if sys.slow {
				n = *slowHandoffs
			}
			lat, err := runHandoff(ctx, sys.make(c, key+":h"), *contenders, n, *hold)
			if err != nil {
				fmt.Fprintln(os.Stderr, sys.name, err)
				os.Exit(1)
			}
			f.p50 = append(f.p50, pct(lat, 0.50))
			f.p99 = append(f.p99, pct(lat, 0.99))
			fmt.Fprintf(os.Stderr, "round %d %-30s %8.0f ops/s  p50 %8.3f ms  p99 %8.3f ms\n", r+1, sys.name, ops, pct(lat, 0.5), pct(lat, 0.99))
		}
	}
	fmt.Printf("medians of %d rounds; %d contenders, each holding the lock %v; %d hand-offs (%d for polling systems)\n", *rounds, *contenders, *hold, *handoffs, *slowHandoffs)
	fmt.Printf("%-30s %14s %14s %15s %14s %14s\n", "system", "uncontended/s", "Redis µs/pair", "client µs/pair", "handoff p50", "handoff p99")
	for _, sys := range systems {
		f := res[sys.name]
		fmt.Printf("%-30s %14.0f %14.2f %15.2f %11.3f ms %11.3f ms\n", sys.name, median(f.ops), median(f.cpu), median(f.own), median(f.p50), median(f.p99))
	}
}

func runUncontended(ctx context.Context, l locker, n int) (float64, error) {
	start := time.Now()
	for range n {
		rel, err := l.obtain(ctx)
		if err != nil {
			return 0, err
		}
		if err := rel(ctx); err != nil {
			return 0, err
		}
	}
	return float64(n) / time.Since(start).Seconds(), nil
}

// runHandoff has contenders goroutines take the lock n times in all. Each
// holder notes the time just before it calls release; the next holder, a
// different goroutine, measures from there to the return of its obtain. A
// goroutine that released waits until another has taken the lock before it
// tries again, so every grant is a hand-off between two goroutines.
func runHandoff(ctx context.Context, l locker, contenders, n int, hold time.Duration) ([]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	var (
		mu       sync.Mutex
		cond     = sync.NewCond(&mu)
		holder   = -1
		released int64 // Unix ns of the last release call
		taken    int
		done     bool
		lat      []float64
		wg       sync.WaitGroup
		errc     = make(chan error, contenders)
	)
	for id := range contenders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				rel, err := l.obtain(ctx)
				if err != nil {
					mu.Lock()
					finished := done
					mu.Unlock()
					if !finished {
						errc <- err
					}
					return
				}
				now := time.Now().UnixNano()
				mu.Lock()
				if holder >= 0 {
					lat = append(lat, float64(now-released)/1e6)
				}
				holder = id
				taken++
				last := taken >= n
				done = done || last
				cond.Broadcast()
				mu.Unlock()
				time.Sleep(hold) // the holder's work
				mu.Lock()
				released = time.Now().UnixNano()
				mu.Unlock()
				if err := rel(context.WithoutCancel(ctx)); err != nil {
					errc <- err
					return
				}
				if last {
					cancel() // the others stop waiting
					return
				}
				mu.Lock()
				for holder == id && !done {
					cond.Wait()
				}
				finished := done
				mu.Unlock()
				if finished {
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		if !errors.Is(err, context.Canceled) {
			return nil, err
		}
	}
	return lat, nil
}

type hgLock struct {
	c    *lock.Client
	key  string
	fair bool
}

func (h hgLock) obtain(ctx context.Context) (func(context.Context) error, error) {
	l, err := h.c.Obtain(ctx, h.key, &lock.ObtainOptions{TTL: 10 * time.Second, Fair: h.fair})
	if err != nil {
		return nil, err
	}
	return l.Release, nil
}

type bsmLock struct {
	c     *redislock.Client
	key   string
	retry redislock.RetryStrategy
}

func (b bsmLock) obtain(ctx context.Context) (func(context.Context) error, error) {
	l, err := b.c.Obtain(ctx, b.key, 10*time.Second, &redislock.Options{RetryStrategy: b.retry})
	if err != nil {
		return nil, err
	}
	return l.Release, nil
}

// setnx is the hand-written lock: SET key token NX PX, a check-and-DEL
// script to release, and a 500 ms poll while it is held.
type setnx struct {
	c   *redis.Client
	key string
}

var delIfOwner = redis.NewScript(`if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`)

func (s setnx) obtain(ctx context.Context) (func(context.Context) error, error) {
	var b [16]byte
	_, _ = rand.Read(b[:])
	tok := hex.EncodeToString(b[:])
	for {
		ok, err := s.c.SetNX(ctx, s.key, tok, 10*time.Second).Result()
		if err != nil {
			return nil, err
		}
		if ok {
			return func(ctx context.Context) error { return delIfOwner.Run(ctx, s.c, []string{s.key}, tok).Err() }, nil
		}
		select {
		case <-time.After(500 * time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// processCPU returns this process's CPU time in seconds (user + system):
// the client's side of a lock, go-redis included.
func processCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// redisCPU returns Redis's CPU time in seconds: INFO cpu used_cpu_user +
// used_cpu_sys.
func redisCPU(ctx context.Context, c *redis.Client) (float64, error) {
	info, err := c.Info(ctx, "cpu").Result()
	if err != nil {
		return 0, err
	}
	var sum float64
	for _, name := range []string{"used_cpu_user:", "used_cpu_sys:"} {
		i := strings.Index(info, name)
		if i < 0 {
			return 0, fmt.Errorf("INFO cpu has no %s", name)
		}
		v := info[i+len(name):]
		v = v[:strings.IndexAny(v, "\r\n")]
		x, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return 0, err
		}
		sum += x
	}
	return sum, nil
}

func pct(v []float64, p float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[min(len(s)-1, int(p*float64(len(s))))]
}

func median(v []float64) float64 { return pct(v, 0.5) }
