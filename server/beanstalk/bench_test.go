package beanstalk_test

import (
	"context"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/internal/beanstalkc"
)

// BenchmarkProtocol puts b.N jobs, then reserves and deletes them, over 8
// connections of the beanstalkd protocol, on each back end; an op is one
// job's put, reserve and delete. A reserve is the plain "reserve", which
// waits when nothing is ready, as most clients send it.
//
// Beside the rates it counts, per op, the goroutines created and the times
// a goroutine was woken (made runnable, then run) in this process, server
// and client together: the runtime samples every 8th goroutine's
// scheduling latency (/sched/latencies), so woken/op is that count times 8.
func BenchmarkProtocol(b *testing.B) {
	for _, be := range backends {
		b.Run(be.Name, func(b *testing.B) {
			_, addr := startServer(b, be.Open(b), nil)
			ctx := context.Background()
			const conns = 8
			cs := make([]*beanstalkc.Conn, conns)
			for i := range cs {
				c, err := beanstalkc.Dial(ctx, addr)
				if err != nil {
					b.Fatal(err)
				}
				defer c.Close()
				cs[i] = c
			}
			body := make([]byte, 100)
			each := func(f func(c *beanstalkc.Conn) error) {
				var wg sync.WaitGroup
				for i, c := range cs {
					n := b.N / conns
					if i < b.N%conns {
						n++
					}
					wg.Go(func() {
						for range n {
							if err := f(c); err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
			}
			b.ResetTimer()
			m0 := schedCounts()
			start := time.Now()
			each(func(c *beanstalkc.Conn) error { _, err := c.Put(ctx, body, 1024, 0, time.Minute); return err })
			put := time.Since(start)
			start = time.Now()
			each(func(c *beanstalkc.Conn) error {
				j, err := c.Reserve(ctx)
				if err != nil {
					return err
				}
				return c.Delete(ctx, j.ID)
			})
			rd := time.Since(start)
			m1 := schedCounts()
			b.ReportMetric(float64(b.N)/put.Seconds(), "puts/s")
			b.ReportMetric(float64(b.N)/rd.Seconds(), "reserve+deletes/s")
			b.ReportMetric(float64(m1.created-m0.created)/float64(b.N), "goroutines/op")
			b.ReportMetric(float64(m1.woken-m0.woken)*8/float64(b.N), "woken/op")
		})
	}
}

type sched struct{ created, woken uint64 }

// schedCounts reads the goroutines created so far and the scheduling
// latencies sampled so far.
func schedCounts() sched {
	ms := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}, {Name: "/sched/latencies:seconds"}}
	metrics.Read(ms)
	var s sched
	s.created = ms[0].Value.Uint64()
	for _, n := range ms[1].Value.Float64Histogram().Counts {
		s.woken += n
	}
	return s
}
