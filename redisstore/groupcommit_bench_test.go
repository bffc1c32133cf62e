package redisstore_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/ratelimit"
	"github.com/hourglass-io/hourglass/redisstore"
	"github.com/redis/go-redis/v9"
)

// BenchmarkGroupCommit runs 20,000 operations from several goroutines on a
// server of its own, with 1, 2 and 4 batches in flight at most: one-job
// puts and reserve+deletes from 8 goroutines, GCRA decisions on one key
// from 16. It reports how many operations a function call carried
// (ops/call), Redis's CPU per operation (INFO cpu used_cpu_user +
// used_cpu_sys, µs) and operations/s. Redis CPU is the figure to compare:
// unlike a rate, it hardly moves with the load of the machine, while how
// well calls merge does.
//
//	go test -run '^$' -bench GroupCommit -benchtime 1x ./redisstore/
func BenchmarkGroupCommit(b *testing.B) {
	const n = 20000
	type workload struct {
		name    string
		callers int
		prepare func(q *queue.Queue, s *redisstore.Store) func(ctx context.Context) error
	}
	workloads := []workload{
		{"put", 8, func(q *queue.Queue, _ *redisstore.Store) func(ctx context.Context) error {
			return func(ctx context.Context) error {
				_, err := q.Put(ctx, "g", queue.NewJob{Body: body100, TTR: time.Minute})
				return err
			}
		}},
		{"reserve+delete", 8, func(q *queue.Queue, _ *redisstore.Store) func(ctx context.Context) error {
			jobs := make([]queue.NewJob, 100)
			for i := range jobs {
				jobs[i] = queue.NewJob{Body: body100, TTR: time.Minute}
			}
			for i := 0; i < n; i += len(jobs) {
				if _, err := q.PutMany(context.Background(), "r", jobs); err != nil {
					b.Fatal(err)
				}
			}
			return func(ctx context.Context) error { return reserveDelete(ctx, q, "r") }
		}},
		{"gcra-1key", 16, func(_ *queue.Queue, s *redisstore.Store) func(ctx context.Context) error {
			l, err := ratelimit.New(s.RateLimits(), nil)
			if err != nil {
				b.Fatal(err)
			}
			return func(ctx context.Context) error {
				_, err := l.Allow(ctx, "hot", benchLimit)
				return err
			}
		}},
	}
	for _, w := range workloads {
		for _, inflight := range []int{1, 2, 4} {
			b.Run(fmt.Sprintf("%s/inflight=%d", w.name, inflight), func(b *testing.B) {
				defer redisstore.SetMaxInflight(inflight)()
				ctx := context.Background()
				_, c, _ := ownServer(b, nil)
				s, err := redisstore.New(ctx, c, nil)
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				q, err := queue.New(s, nil)
				if err != nil {
					b.Fatal(err)
				}
				defer q.Close()
				for b.Loop() {
					op := w.prepare(q, s)
					if err := c.ConfigResetStat(ctx).Err(); err != nil {
						b.Fatal(err)
					}
					cpu0 := redisCPUSeconds(b, c)
					var left atomic.Int64
					left.Store(n)
					start := time.Now()
					var wg sync.WaitGroup
					for range w.callers {
						wg.Go(func() {
							for left.Add(-1) >= 0 {
								if err := op(ctx); err != nil {
									b.Error(err)
									return
								}
							}
						})
					}
					wg.Wait()
					elapsed := time.Since(start)
					cpu1 := redisCPUSeconds(b, c)
					calls := commandStats(b, c)["fcall"].calls
					b.ReportMetric(n/calls, "ops/call")
					b.ReportMetric((cpu1-cpu0)*1e6/n, "redis-µs/op")
					b.ReportMetric(n/elapsed.Seconds(), "ops/s")
				}
			})
		}
	}
}

// redisCPUSeconds returns INFO cpu used_cpu_user + used_cpu_sys.
func redisCPUSeconds(b testing.TB, c *redis.Client) float64 {
	info, err := c.Info(context.Background(), "cpu").Result()
	if err != nil {
		b.Fatal(err)
	}
	var sum float64
	for _, line := range strings.Split(info, "\r\n") {
		var v float64
		if _, err := fmt.Sscanf(line, "used_cpu_user:%f", &v); err == nil {
			sum += v
		} else if _, err := fmt.Sscanf(line, "used_cpu_sys:%f", &v); err == nil {
			sum += v
		}
	}
	return sum
}
