package redisstore_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/queue"
)

func TestZZPutCost(t *testing.T) {
	ctx := context.Background()
	_, c, q := ownServer(t, nil)
	run := func(name string, f func()) {
		c.ConfigResetStat(ctx)
		before := serverCPU(t, c)
		f()
		cpu := (serverCPU(t, c) - before)
		st := commandStats(t, c)
		t.Logf("%-28s cpu/job %.1f µs  fcalls/job %.3f  cpu/fcall %.1f", name, cpu/20000*1e6, st["fcall"].calls/20000, cpu/st["fcall"].calls*1e6)
	}
	for round := 0; round < 2; round++ {
		for _, k := range []int{1, 5} {
			jobs := make([]queue.NewJob, k)
			for i := range jobs {
				jobs[i] = queue.NewJob{Body: body100, TTR: time.Minute}
			}
			run(fmt.Sprint("putmany k=", k), func() {
				for range 20000 / k {
					if _, err := q.PutMany(ctx, fmt.Sprint("t", k), jobs); err != nil {
						t.Fatal(err)
					}
				}
			})
		}
		par := func(tube string) func() {
			return func() {
				var n atomic.Int64
				var wg sync.WaitGroup
				for range 8 {
					wg.Go(func() {
						for n.Add(1) <= 20000 {
							if _, err := q.Put(ctx, tube, queue.NewJob{Body: body100, TTR: time.Minute}); err != nil {
								t.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
			}
		}
		run("put x8", par("p8"))
		// a reserver waiting on the tube: the store subscribes
		wctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); q.Reserve(wctx, queue.ReserveOptions{Tubes: []string{"w8"}}) }()
		time.Sleep(200 * time.Millisecond)
		run("put x8, one waiting", par("w8"))
		cancel()
		<-done
	}
}
