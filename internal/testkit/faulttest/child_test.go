package faulttest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/hourglass-io/hourglass/lock"
	"github.com/hourglass-io/hourglass/memstore"
	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/ratelimit"
	"github.com/hourglass-io/hourglass/redisstore"
	"github.com/hourglass-io/hourglass/schedule"
	"github.com/redis/go-redis/v9"
)

// runChild plays a role in a process of its own and returns the exit code.
// It reads its parameters from the environment and speaks in lines on
// stdout.
func runChild(role string) int {
	ctx := context.Background()
	var c redis.UniversalClient
	if addrs := os.Getenv("HG_CLUSTER"); addrs != "" {
		c = redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(addrs, ","), MaxRetries: -1})
	} else {
		c = redis.NewClient(&redis.Options{Addr: os.Getenv("HG_ADDR"), MaxRetries: -1,
			DialTimeout: 100 * time.Millisecond, DialerRetries: 1, DialerRetryTimeout: time.Millisecond,
			ReadTimeout: 300 * time.Millisecond, WriteTimeout: 300 * time.Millisecond})
	}
	defer c.Close()
	s, err := redisstore.New(ctx, c, &redisstore.Options{Prefix: os.Getenv("HG_PREFIX")})
	must(err)
	defer s.Close()
	switch role {
	case "lockholder":
		lockHolder(ctx, s)
	case "limiter":
		limiter(ctx, s)
	case "scheduler":
		scheduler(ctx, s)
	case "overlap":
		overlapServer(ctx, s)
	default:
		fmt.Fprintln(os.Stderr, "unknown role", role)
		return 2
	}
	return 0
}

// lockHolder takes the lock HG_NAME with a lease of HG_TTL, renewed in the
// background, says its fence, and reports when it learns it lost the lock
// and what a release then answers.
func lockHolder(ctx context.Context, s *redisstore.Store) {
	ttl, err := time.ParseDuration(os.Getenv("HG_TTL"))
	must(err)
	cl, err := lock.New(s.Locks(), nil)
	must(err)
	l, err := cl.TryObtain(ctx, os.Getenv("HG_NAME"), &lock.ObtainOptions{TTL: ttl, AutoRenew: true})
	must(err)
	fmt.Println("fence", l.Fence())
	<-l.Lost()
	fmt.Println("lost", context.Cause(l.Context()))
	err = l.Release(ctx)
	fmt.Println("release", errors.Is(err, lock.ErrNotHeld), err)
}

// limiter makes a decision on key HG_KEY (HG_LIMIT a second) every HG_EVERY
// from HG_START (unix ms) for HG_FOR under the failure policy HG_POLICY,
// and prints each: "d <unix µs> <A admitted | R refused | E error> <1 when
// the store failed>".
func limiter(ctx context.Context, s *redisstore.Store) {
	every, err := time.ParseDuration(os.Getenv("HG_EVERY"))
	must(err)
	span, err := time.ParseDuration(os.Getenv("HG_FOR"))
	must(err)
	startMS, err := strconv.ParseInt(os.Getenv("HG_START"), 10, 64)
	must(err)
	n, err := strconv.Atoi(os.Getenv("HG_LIMIT"))
	must(err)
	opts := &ratelimit.Options{}
	switch os.Getenv("HG_POLICY") {
	case "closed":
		opts.Failure = ratelimit.FailClosed
	case "open":
		opts.Failure = ratelimit.FailOpen
	case "local":
		local, err := memstore.New(nil)
		must(err)
		defer local.Close()
		opts.Failure, opts.Local = ratelimit.FailLocal, local.RateLimits()
	}
	l, err := ratelimit.New(s.RateLimits(), opts)
	must(err)
	lim := ratelimit.PerSecond(n)
	start := time.UnixMilli(startMS)
	time.Sleep(time.Until(start)) // the processes start together
	tick := time.NewTicker(every)
	defer tick.Stop()
	for now := time.Now(); now.Before(start.Add(span)); now = <-tick.C {
		res, err := l.Allow(ctx, os.Getenv("HG_KEY"), lim)
		outcome := "R"
		switch {
		case err != nil:
			outcome = "E"
		case res.Allowed:
			outcome = "A"
		}
		failed := 0
		if err != nil || res.StoreErr != nil {
			failed = 1
		}
		fmt.Println("d", time.Now().UnixMicro(), outcome, failed)
	}
	fmt.Println("end")
}

// scheduler runs a schedule Client on the store until it is killed, and
// prints "ready" once it runs and "fire <tick unix ms>" for each tick it
// fires.
func scheduler(ctx context.Context, s *redisstore.Store) {
	c, err := schedule.New(s.Schedules(), &schedule.Options{
		OnFire: func(_ string, f schedule.Fire) {
			fmt.Println("fire", f.Tick.UnixMilli())
		},
		OnError: func(err error) { fmt.Fprintln(os.Stderr, "scheduler:", err) },
	})
	must(err)
	fmt.Println("ready")
	must(c.Run(ctx))
}

// overlapServer is one server of the overlap run: a schedule Client and
// one worker on tube HG_TUBE whose every job takes HG_WORK. It prints
// "ready" once both run, "fire <job id> <put unix µs>" for each tick it
// fires (the put's time by the store's clock: tick + lateness), and
// "r <job id> <unix µs> <reserved µs>" right after a reserve returns (the
// second time is the reserve's by the store's clock, in whole ms, from the
// job's stats) and "d <job id> <unix µs>" right before the job's delete is
// sent.
func overlapServer(ctx context.Context, s *redisstore.Store) {
	work, err := time.ParseDuration(os.Getenv("HG_WORK"))
	must(err)
	c, err := schedule.New(s.Schedules(), &schedule.Options{
		OnFire: func(_ string, f schedule.Fire) {
			fmt.Println("fire", f.JobID, f.Tick.Add(f.Lateness).UnixMicro())
		},
		OnError: func(err error) { fmt.Fprintln(os.Stderr, "scheduler:", err) },
	})
	must(err)
	q, err := queue.New(s, nil)
	must(err)
	go func() { must(c.Run(ctx)) }()
	fmt.Println("ready")
	tube := os.Getenv("HG_TUBE")
	for {
		j, err := q.Reserve(ctx, queue.ReserveOptions{Tubes: []string{tube}})
		must(err)
		at := time.Now().UnixMicro()
		js, err := q.StatsJob(ctx, j.ID)
		must(err)
		fmt.Println("r", j.ID, at, js.ReservedAt.UnixMicro())
		time.Sleep(work) // the job's work
		fmt.Println("d", j.ID, time.Now().UnixMicro())
		if err := q.Delete(ctx, j.ID); err != nil && !errors.Is(err, queue.ErrNotFound) {
			must(err)
		}
	}
}
