package storetest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/schedule"
)

// BenchScheduleLateness runs one "@every <every>" schedule on the real
// clock with a running schedule.Client and a waiting reserver, for n ticks,
// and reports how late each tick's job was put (fire-…) and reserved
// (ready-…: tick to the reserver holding the job), p50 and p99, in ms.
func BenchScheduleLateness(b *testing.B, ss schedule.Store, qs queue.Store, n int, every time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(n)*every+30*time.Second)
	defer cancel()
	var (
		mu    sync.Mutex
		ticks = map[uint64]time.Time{}
		fire  []time.Duration
	)
	c, err := schedule.New(ss, &schedule.Options{OnFire: func(_ string, f schedule.Fire) {
		mu.Lock()
		ticks[f.JobID] = f.Tick
		fire = append(fire, f.Lateness)
		mu.Unlock()
	}})
	if err != nil {
		b.Fatal(err)
	}
	q, err := queue.New(qs, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer q.Close()
	if _, err := c.Set(ctx, schedule.Schedule{Name: "lateness", Spec: "@every " + every.String(), Misfire: schedule.CatchUp(n), Job: schedule.Job{Tube: "lateness"}}); err != nil {
		b.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Run(runCtx) }()
	type got struct {
		id queue.ID
		at time.Time
	}
	var jobs []got
	b.ResetTimer()
	for len(jobs) < n {
		j, err := q.Reserve(ctx, queue.ReserveOptions{Tubes: []string{"lateness"}})
		if err != nil {
			b.Fatalf("after %d of %d jobs: %v", len(jobs), n, err)
		}
		jobs = append(jobs, got{j.ID, time.Now()})
		if err := q.Delete(ctx, j.ID); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	stop()
	<-done
	c.Delete(ctx, "lateness")
	mu.Lock()
	defer mu.Unlock()
	var ready []time.Duration
	for _, g := range jobs {
		if t, ok := ticks[uint64(g.id)]; ok {
			ready = append(ready, g.at.Sub(t))
		}
	}
	if len(ready) < n/2 {
		b.Fatalf("only %d of %d jobs matched a fire", len(ready), n)
	}
	b.ReportMetric(quantileMS(fire, 0.5), "fire-p50-ms")
	b.ReportMetric(quantileMS(fire, 0.99), "fire-p99-ms")
	b.ReportMetric(quantileMS(ready, 0.5), "ready-p50-ms")
	b.ReportMetric(quantileMS(ready, 0.99), "ready-p99-ms")
}
