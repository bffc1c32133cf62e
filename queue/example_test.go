package queue_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/hourglass-io/hourglass/memstore"
	"github.com/hourglass-io/hourglass/queue"
)

// A job put with a delay is reserved once the delay has passed.
func Example() {
	ctx := context.Background()
	store, err := memstore.New(nil) // or redisstore.New(ctx, redisClient, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	q, err := queue.New(store, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer q.Close()

	if _, err := q.Put(ctx, "emails", queue.NewJob{
		Body:  []byte(`{"to":"ada@example.com"}`),
		Delay: 50 * time.Millisecond,
		TTR:   30 * time.Second,
	}); err != nil {
		log.Fatal(err)
	}

	job, err := q.Reserve(ctx, queue.ReserveOptions{Tubes: []string{"emails"}, Timeout: 5 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s %s\n", job.Tube, job.Body)
	if err := q.Delete(ctx, job.ID); err != nil {
		log.Fatal(err)
	}
	// Output: emails {"to":"ada@example.com"}
}

// A Worker runs a handler over jobs, retrying failures with a backoff.
func ExampleWorker() {
	ctx := context.Background()
	store, err := memstore.New(nil)
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	q, err := queue.New(store, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer q.Close()

	done := make(chan struct{})
	w, err := queue.NewWorker(q, queue.HandlerFunc(func(ctx context.Context, j queue.Job) error {
		fmt.Printf("sending %s\n", j.Body)
		close(done)
		return nil // deletes the job; an error would release it for a retry
	}), &queue.WorkerOptions{Tubes: []string{"sms"}, Concurrency: 8})
	if err != nil {
		log.Fatal(err)
	}
	go w.Run(ctx)

	if _, err := q.Put(ctx, "sms", queue.NewJob{Body: []byte("hello")}); err != nil {
		log.Fatal(err)
	}
	<-done
	if err := w.Shutdown(ctx); err != nil {
		log.Fatal(err)
	}
	// Output: sending hello
}

// Delayed jobs can be inspected, kicked early, or set aside and kicked back.
func ExampleQueue_Kick() {
	ctx := context.Background()
	store, err := memstore.New(nil)
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	q, _ := queue.New(store, nil)
	defer q.Close()

	id, _ := q.Put(ctx, "reports", queue.NewJob{Body: []byte("monthly"), Delay: time.Hour})
	st, _ := q.StatsJob(ctx, id)
	fmt.Println(st.State)

	n, _ := q.Kick(ctx, "reports", 10) // no buried jobs, so delayed ones are kicked
	st, _ = q.StatsJob(ctx, id)
	fmt.Println(n, st.State, st.Kicks)
	// Output:
	// delayed
	// 1 ready 1
}

// A job set aside with a reason says why when it is looked at.
func ExampleQueue_BuryWithReason() {
	ctx := context.Background()
	store, err := memstore.New(nil)
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	q, _ := queue.New(store, nil)
	defer q.Close()

	q.Put(ctx, "invoices", queue.NewJob{Body: []byte("INV-7")})
	job, _ := q.Reserve(ctx, queue.ReserveOptions{Tubes: []string{"invoices"}})
	if err := q.BuryWithReason(ctx, job.ID, job.Priority, "customer 42 has no billing address"); err != nil {
		log.Fatal(err)
	}
	st, _ := q.StatsJob(ctx, job.ID)
	fmt.Println(st.State, st.Reserves, st.LastError)
	fmt.Println(st.LastErrorAt.Equal(st.BuriedAt), st.ReleasedAt.IsZero())
	// Output:
	// buried 1 customer 42 has no billing address
	// true true
}
