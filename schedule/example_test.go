package schedule_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/hourglass-io/hourglass/memstore"
	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/schedule"
)

// A nightly job at 02:30 in Berlin, declared at start (idempotently), and
// its next fire times across the spring daylight-saving change.
func Example() {
	start := time.Date(2026, 3, 27, 12, 0, 0, 0, time.UTC)
	s, err := memstore.New(&memstore.Options{Clock: func() time.Time { return start }})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	c, _ := schedule.New(s.Schedules(), nil)
	ctx := context.Background()

	_, err = c.Set(ctx, schedule.Schedule{
		Name:    "nightly-report",
		Spec:    "30 2 * * *",
		Zone:    "Europe/Berlin",
		Job:     schedule.Job{Tube: "reports", Body: []byte(`{"kind":"nightly"}`), TTR: time.Minute},
		Misfire: schedule.FireOnce(),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	times, _ := c.NextTimes(ctx, "nightly-report", 3)
	berlin, _ := time.LoadLocation("Europe/Berlin")
	for _, t := range times {
		fmt.Println(t.In(berlin).Format("Mon 2006-01-02 15:04 MST"))
	}
	// Output:
	// Sat 2026-03-28 02:30 CET
	// Sun 2026-03-29 03:00 CEST
	// Mon 2026-03-30 02:30 CEST
}

// Any number of processes run a Client over one store; each tick's job is
// put once. Here one Client runs until the first job is reserved.
func ExampleClient_Run() {
	s, err := memstore.New(nil)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	q, _ := queue.New(s, nil)
	defer q.Close()
	c, _ := schedule.New(s.Schedules(), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.Set(ctx, schedule.Schedule{Name: "heartbeat", Spec: "@every 50ms", Job: schedule.Job{Tube: "beats", Body: []byte("beat")}}); err != nil {
		fmt.Println(err)
		return
	}
	go c.Run(ctx)
	job, err := q.Reserve(ctx, queue.ReserveOptions{Tubes: []string{"beats"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(job.Body))
	// Output: beat
}
