package redisstore_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/internal/testkit/redistest"
	"github.com/hourglass-io/hourglass/internal/testkit/storetest"
	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/redisstore"
	"github.com/redis/go-redis/v9"
)

// BenchmarkKeyWindows: 10,000 keys, each put, finished and put again
// inside and outside its window (10 s on an injected clock) by 8 stores
// (as 8 processes would) on one redis-server of its own.
//
//	go test -run '^$' -bench KeyWindows -benchtime 1x ./redisstore/
func BenchmarkKeyWindows(b *testing.B) {
	srv := redistest.Standalone(b)
	clock := storetest.NewClock(time.Now().Truncate(time.Millisecond))
	stores := make([]queue.Store, 8)
	for i := range stores {
		c := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1})
		b.Cleanup(func() { c.Close() })
		s, err := redisstore.New(context.Background(), c, &redisstore.Options{Clock: clock.Now})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		stores[i] = s
	}
	for range b.N {
		storetest.BenchKeyWindows(b, stores, clock.Advance, 10000)
	}
}

// BenchmarkRetention: 100,000 jobs finished with a result in a tube that
// keeps them 60 s, on a redis-server of its own: bytes per kept job
// (used_memory), every job found by its key, and the tube gone (every job
// dropped by the store's keeper, nothing else running) after the last
// deadline.
//
//	go test -run '^$' -bench Retention -benchtime 1x ./redisstore/
func BenchmarkRetention(b *testing.B) {
	srv := redistest.Standalone(b)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1})
	b.Cleanup(func() { c.Close() })
	s, err := redisstore.New(context.Background(), c, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	for range b.N {
		storetest.BenchRetention(b, s, func() int64 { return usedMemory(b, c) }, 100000, 8, 60*time.Second)
	}
}

// BenchmarkDebounce: 20 bursts of 10,000 puts of one key over 1 s by 8
// callers, each with a Store and a client of its own (as 8 processes
// would), on one redis-server of its own, debounce 200 ms, max wait 2 s,
// on Redis's clock; and one burst of 3 s (storetest.BenchDebounce).
//
//	go test -run '^$' -bench Debounce -benchtime 1x ./redisstore/
func BenchmarkDebounce(b *testing.B) {
	srv := redistest.Standalone(b)
	stores := make([]queue.Store, 8)
	for i := range stores {
		c := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1})
		b.Cleanup(func() { c.Close() })
		s, err := redisstore.New(context.Background(), c, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		stores[i] = s
	}
	for range b.N {
		storetest.BenchDebounce(b, stores, 20)
	}
}

// BenchmarkDebounceProcesses is BenchmarkDebounce with its 8 callers as 8
// processes (storetest.BenchDebounceProcs): the test binary started again,
// each with a client and a Store of its own on the same redis-server,
// while this process reserves.
//
//	go test -run '^$' -bench DebounceProcesses -benchtime 1x ./redisstore/
func BenchmarkDebounceProcesses(b *testing.B) {
	srv := redistest.Standalone(b)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1})
	b.Cleanup(func() { c.Close() })
	s, err := redisstore.New(context.Background(), c, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	for range b.N {
		storetest.BenchDebounceProcs(b, s, 8, []string{redisPutterEnv + "=" + srv.Addr}, 20)
	}
}

// BenchmarkKeyWindowsProcesses: the key windows by 8 processes on the
// real clock (storetest.BenchKeyWindowsProcs): the test binary started
// again, each with a client and a Store of its own on one redis-server of
// its own; 10,000 keys over 5 s, windows of 500 ms.
//
//	go test -run '^$' -bench KeyWindowsProcesses -benchtime 1x ./redisstore/
func BenchmarkKeyWindowsProcesses(b *testing.B) {
	srv := redistest.Standalone(b)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1})
	b.Cleanup(func() { c.Close() })
	s, err := redisstore.New(context.Background(), c, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	for range b.N {
		storetest.BenchKeyWindowsProcs(b, s, 8, []string{redisPutterEnv + "=" + srv.Addr}, 10000, 5*time.Second, 500*time.Millisecond)
	}
}

// redisPutterEnv names the redis-server a caller process of
// BenchmarkDebounceProcesses or BenchmarkKeyWindowsProcesses works on.
const redisPutterEnv = "HOURGLASS_DEBOUNCE_REDIS"

// redisQueue is a caller process's Queue on a Store of its own on the
// redis-server redisPutterEnv names.
func redisQueue() (*queue.Queue, func(), error) {
	c := redis.NewClient(&redis.Options{Addr: os.Getenv(redisPutterEnv), MaxRetries: -1})
	s, err := redisstore.New(context.Background(), c, nil)
	if err != nil {
		c.Close()
		return nil, nil, err
	}
	q, err := queue.New(s, nil)
	if err != nil {
		s.Close()
		c.Close()
		return nil, nil, err
	}
	return q, func() { q.Close(); s.Close(); c.Close() }, nil
}

// redisPut puts j through q.
func redisPut(q *queue.Queue) storetest.DebouncePutter {
	return func(ctx context.Context, tube string, j queue.NewJob) (queue.PutResult, error) {
		r, err := q.PutMany(ctx, tube, []queue.NewJob{j})
		if err != nil {
			return queue.PutResult{}, err
		}
		return r[0], nil
	}
}

// redisPutter is a putter process's Store of its own
// (storetest.RunDebounceChild).
func redisPutter() (storetest.DebouncePutter, func(), error) {
	q, closeFn, err := redisQueue()
	if err != nil {
		return nil, nil, err
	}
	return redisPut(q), closeFn, nil
}

// redisWindowsClient is a caller process's Store of its own
// (storetest.RunWindowsChild).
func redisWindowsClient() (storetest.WindowsClient, func(), error) {
	q, closeFn, err := redisQueue()
	if err != nil {
		return storetest.WindowsClient{}, nil, err
	}
	return storetest.WindowsClient{Put: redisPut(q), Finish: q.Finish}, closeFn, nil
}
