package redisstore_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hourglass-io/hourglass/internal/redistest"
	"github.com/hourglass-io/hourglass/internal/storetest"
	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/redisstore"
	"github.com/hourglass-io/hourglass/schedule"
)

// BenchmarkScheduleLateness: 200 ticks of "@every 10ms" on a standalone
// redis-server; tick-to-put and tick-to-reserved lateness.
func BenchmarkScheduleLateness(b *testing.B) {
	c := standaloneClient(b)
	for range b.N {
		s := newStore(b, c, nil)
		storetest.BenchScheduleLateness(b, s.Schedules(), s, 200, 10*time.Millisecond)
	}
}

// BenchmarkScheduleMemory: Redis memory per schedule on a server of its
// own: 2000 cron schedules with a 20-byte body, each with 10 last fires
// recorded, spread over 50 tubes (INFO used_memory before and after).
func BenchmarkScheduleMemory(b *testing.B) {
	srv := redistest.Standalone(b)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1})
	defer c.Close()
	clock := storetest.NewClock(time.Date(2026, 1, 5, 12, 0, 0, 0, time.UTC))
	ctx := b.Context()
	const n = 2000
	for b.Loop() {
		s, err := redisstore.New(ctx, c, &redisstore.Options{Prefix: "hg:", Clock: clock.Now})
		if err != nil {
			b.Fatal(err)
		}
		cl, _ := schedule.New(s.Schedules(), &schedule.Options{Now: clock.Now})
		before := usedMemory(b, c)
		for i := range n {
			if _, err := cl.Set(ctx, schedule.Schedule{
				Name: "schedule-" + strconv.Itoa(i), Spec: "*/5 * * * *", Zone: "Europe/Berlin",
				Job: schedule.Job{Tube: "tube-" + strconv.Itoa(i%50), Body: []byte("01234567890123456789")},
			}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(usedMemory(b, c)-before)/n, "B/schedule")
		// Ten fires each, then drop the jobs' memory from the figure.
		for range 10 {
			clock.Advance(5 * time.Minute)
			if _, err := cl.FireDue(ctx); err != nil {
				b.Fatal(err)
			}
		}
		for i := range 50 {
			for {
				res, err := s.Reserve(ctx, queue.ReserveRequest{Owner: "b", Tubes: []string{"tube-" + strconv.Itoa(i)}, Max: 1000})
				if err != nil {
					b.Fatal(err)
				}
				if len(res.Jobs) == 0 {
					break
				}
				ids := make([]queue.ID, len(res.Jobs))
				for k, j := range res.Jobs {
					ids[k] = j.ID
				}
				if _, err := s.Delete(ctx, "b", ids); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(usedMemory(b, c)-before)/n, "B/schedule-10-fires")
		s.Close()
		c.FlushAll(ctx)
	}
}
