package beanstalk_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/internal/beanstalkc"
)

// BenchmarkProtocol puts b.N jobs, then reserves and deletes them, over 8
// connections of the beanstalkd protocol, on each back end; an op is one
// job's put, reserve and delete.
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
			start := time.Now()
			each(func(c *beanstalkc.Conn) error { _, err := c.Put(ctx, body, 1024, 0, time.Minute); return err })
			put := time.Since(start)
			start = time.Now()
			each(func(c *beanstalkc.Conn) error {
				j, err := c.ReserveWithTimeout(ctx, 0)
				if err != nil {
					return err
				}
				return c.Delete(ctx, j.ID)
			})
			b.ReportMetric(float64(b.N)/put.Seconds(), "puts/s")
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "reserve+deletes/s")
		})
	}
}
