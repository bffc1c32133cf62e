package redisstore_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/redisstore"
)

// BenchmarkPutCPU reports Redis's own CPU per put of a plain job (no
// unique key, no debounce: INFO cpu used_cpu_user + used_cpu_sys, µs per
// job) and the function calls per job, for 20,000 one-job puts from 1 and
// from 8 callers on a server of its own: the figure a change to put.lua
// must not move for a put without its options (docs/keys.md, "Cost").
//
//	go test -run '^$' -bench PutCPU -benchtime 1x ./redisstore/
func BenchmarkPutCPU(b *testing.B) {
	const n = 20000
	for _, callers := range []int{1, 8} {
		b.Run(fmt.Sprintf("callers=%d", callers), func(b *testing.B) {
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
				if err := c.ConfigResetStat(ctx).Err(); err != nil {
					b.Fatal(err)
				}
				cpu0 := redisCPUSeconds(b, c)
				var left atomic.Int64
				left.Store(n)
				var wg sync.WaitGroup
				for range callers {
					wg.Go(func() {
						for left.Add(-1) >= 0 {
							if _, err := q.Put(ctx, "p", queue.NewJob{Body: body100, TTR: time.Minute}); err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
				cpu1 := redisCPUSeconds(b, c)
				b.ReportMetric((cpu1-cpu0)*1e6/n, "redis-µs/op")
				b.ReportMetric(commandStats(b, c)["fcall"].calls/n, "calls/op")
			}
		})
	}
}
