package redisstore_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hourglass-io/hourglass/internal/testkit/redistest"
	"github.com/hourglass-io/hourglass/internal/testkit/storetest"
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
		cl, _ := schedule.New(s.Schedules(), nil)
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

// BenchmarkScheduleFires: fires per second when 20,000 "@every 1s"
// schedules on one tube come due at once, fired by 1 or 4 Clients (each
// with its own Store) until none is due.
func BenchmarkScheduleFires(b *testing.B) {
	for _, clients := range []int{1, 4} {
		b.Run(strconv.Itoa(clients)+"-clients", func(b *testing.B) {
			c := redistest.StandaloneClient(b)
			ctx := b.Context()
			clock := storetest.NewClock(time.Date(2026, 1, 5, 12, 0, 0, 0, time.UTC))
			const n = 20000
			prefix := redistest.Prefix(b)
			cls := make([]*schedule.Client, clients)
			for i := range cls {
				s, err := redisstore.New(ctx, c, &redisstore.Options{Prefix: prefix, Clock: clock.Now})
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { s.Close() })
				cls[i], _ = schedule.New(s.Schedules(), nil)
			}
			for i := range n {
				if _, err := cls[0].Set(ctx, schedule.Schedule{
					Name: "s" + strconv.Itoa(i), Spec: "@every 1s",
					Job: schedule.Job{Tube: "fires", Body: []byte("01234567890123456789")},
				}); err != nil {
					b.Fatal(err)
				}
			}
			fires := 0
			var spent time.Duration
			before := commandStats(b, c)
			for b.Loop() {
				clock.Advance(time.Second)
				start := time.Now()
				errs := make(chan error, clients)
				for _, cl := range cls {
					go func() {
						_, err := cl.FireDue(ctx)
						errs <- err
					}()
				}
				for range cls {
					if err := <-errs; err != nil {
						b.Fatal(err)
					}
				}
				spent += time.Since(start)
				fires += n
			}
			b.ReportMetric(float64(fires)/spent.Seconds(), "fires/s")
			var usec, calls float64
			for name, st := range commandStats(b, c) {
				usec += st.usec - before[name].usec
				calls += st.calls - before[name].calls
				if d := st.calls - before[name].calls; d > 0 {
					b.Logf("%s: %.2f calls/fire, %.1f µs/fire", name, d/float64(fires), (st.usec-before[name].usec)/float64(fires))
				}
			}
			b.ReportMetric(usec/float64(fires), "redis-µs/fire")
			b.ReportMetric(calls/float64(fires), "calls/fire")
		})
	}
}
