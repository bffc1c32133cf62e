package redisstore_test

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/queue"
	"github.com/redis/go-redis/v9"
)

func benchQueue(b *testing.B) *queue.Queue {
	b.Helper()
	s := newStore(b, standaloneClient(b), nil)
	q, err := queue.New(s, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { q.Close() })
	return q
}

var body100 = make([]byte, 100)

// BenchmarkPut puts one 100-byte job per call, from GOMAXPROCS×8 goroutines.
func BenchmarkPut(b *testing.B) {
	q := benchQueue(b)
	ctx := context.Background()
	b.SetParallelism(8)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := q.Put(ctx, "bench", queue.NewJob{Body: body100}); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkPutMany100 puts 100 jobs per call; one op is one job.
func BenchmarkPutMany100(b *testing.B) {
	q := benchQueue(b)
	ctx := context.Background()
	jobs := make([]queue.NewJob, 100)
	for i := range jobs {
		jobs[i] = queue.NewJob{Body: body100}
	}
	b.SetParallelism(8)
	b.RunParallel(func(pb *testing.PB) {
		n := 0
		for pb.Next() {
			if n++; n%100 != 0 {
				continue
			}
			if _, err := q.PutMany(ctx, "bench", jobs); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkReserveDelete reserves and deletes jobs put beforehand, one job
// per op, from GOMAXPROCS×8 goroutines.
func BenchmarkReserveDelete(b *testing.B) {
	q := benchQueue(b)
	ctx := context.Background()
	jobs := make([]queue.NewJob, 100)
	for i := range jobs {
		jobs[i] = queue.NewJob{Body: body100}
	}
	for i := 0; i < b.N; i += 100 {
		if _, err := q.PutMany(ctx, "bench", jobs); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	b.SetParallelism(8)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			j, err := q.Reserve(ctx, queue.ReserveOptions{Tubes: []string{"bench"}, Timeout: -1})
			if err != nil {
				b.Error(err)
				return
			}
			if err := q.Delete(ctx, j.ID); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkMemoryPerDelayedJob reports the Redis memory each delayed job of
// 100 bytes costs (INFO memory used_memory delta, on a server of its own).
func BenchmarkMemoryPerDelayedJob(b *testing.B) {
	ctx := context.Background()
	_, c, q := ownServer(b, nil)
	const n = 20000
	before := usedMemory(b, c)
	jobs := make([]queue.NewJob, 100)
	for i := range jobs {
		jobs[i] = queue.NewJob{Body: body100, Delay: time.Hour}
	}
	b.ResetTimer()
	for i := 0; i < n; i += len(jobs) {
		if _, err := q.PutMany(ctx, "mem", jobs); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(usedMemory(b, c)-before)/n, "bytes/job")
}

func usedMemory(b *testing.B, c *redis.Client) int64 {
	info, err := c.Info(context.Background(), "memory").Result()
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	b.Fatal("no used_memory in INFO")
	return 0
}

// BenchmarkRedisCPU reports the Redis CPU time (INFO commandstats) each put
// and each delete-and-reserve of a Worker costs, on a server of its own.
func BenchmarkRedisCPU(b *testing.B) {
	ctx := context.Background()
	_, c, q := ownServer(b, nil)
	const n = 20000
	c.ConfigResetStat(ctx)
	for range n {
		if _, err := q.Put(ctx, "cpu", queue.NewJob{Body: body100}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(callMicros(b, c, n), "redis-µs/put")
	c.ConfigResetStat(ctx)
	done := make(chan struct{})
	var handled atomic.Int64
	w, err := queue.NewWorker(q, queue.HandlerFunc(func(ctx context.Context, j queue.Job) error {
		if handled.Add(1) == n {
			close(done)
		}
		return nil
	}), &queue.WorkerOptions{Tubes: []string{"cpu"}, Concurrency: 8})
	if err != nil {
		b.Fatal(err)
	}
	go w.Run(ctx)
	<-done
	if err := w.Shutdown(ctx); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(callMicros(b, c, n), "redis-µs/consume")
}

// callMicros is the Redis CPU time (µs) per operation since the last reset:
// the time of every function call (FCALL) and script call (EVALSHA), over
// ops operations (a merged call serves several).
func callMicros(b *testing.B, c *redis.Client, ops int) float64 {
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	var usec float64
	for _, line := range strings.Split(info, "\r\n") {
		for _, cmd := range []string{"cmdstat_fcall:", "cmdstat_evalsha:"} {
			if v, ok := strings.CutPrefix(line, cmd); ok {
				for _, f := range strings.Split(v, ",") {
					if x, ok := strings.CutPrefix(f, "usec="); ok {
						us, _ := strconv.ParseFloat(x, 64)
						usec += us
					}
				}
			}
		}
	}
	if usec == 0 {
		b.Fatal("no fcall or evalsha in INFO commandstats")
	}
	return usec / float64(ops)
}
