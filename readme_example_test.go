package hourglass_test

// The README's Go examples. readme_test.go checks that each README Go block
// is the body of one of these functions, so the two cannot drift.

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/hourglass-io/hourglass"
	"github.com/hourglass-io/hourglass/lock"
	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/ratelimit"
	"github.com/hourglass-io/hourglass/ttlhash"
)

func Example_delayedJobs() {
	ctx := context.Background()
	b, err := hourglass.Open(ctx, "mem://", nil) // or a directory, or "redis://127.0.0.1:6379/0"
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()
	q, err := queue.New(b.Queue, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer q.Close()

	// Due in 100 ms; a worker then has 30 s to finish it.
	id, err := q.Put(ctx, "reminders", queue.NewJob{Body: []byte(`{"user":42}`),
		Priority: queue.DefaultPriority, Delay: 100 * time.Millisecond, TTR: 30 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
	j, err := q.Reserve(ctx, queue.ReserveOptions{Tubes: []string{"reminders"}, Timeout: 5 * time.Second})
	if err != nil {
		log.Fatal(err) // queue.ErrTimeout when nothing became ready in time
	}
	fmt.Println(j.ID == id, string(j.Body))
	if err := q.Delete(ctx, j.ID); err != nil {
		log.Fatal(err)
	}
	// Output: true {"user":42}
}

func Example_rateLimits() {
	ctx := context.Background()
	b, err := hourglass.Open(ctx, "mem://", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()
	l, err := ratelimit.New(b.Limits, nil)
	if err != nil {
		log.Fatal(err)
	}

	// One SMS per phone number per 30 minutes.
	for range 2 {
		res, err := l.Allow(ctx, "sms:+15550100", ratelimit.Every(30*time.Minute))
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("allowed:", res.Allowed)
	}
	// Output:
	// allowed: true
	// allowed: false
}

func Example_tubeLimits() {
	ctx := context.Background()
	b, err := hourglass.Open(ctx, "mem://", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()
	q, err := queue.New(b.Queue, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer q.Close()

	// At most 100 reserves a second and 5 jobs reserved at once, for every client.
	if err := q.SetLimits(ctx, "emails", queue.Limits{Rate: ratelimit.PerSecond(100), Cap: 5}); err != nil {
		log.Fatal(err)
	}
	for range 6 {
		q.Put(ctx, "emails", queue.NewJob{Body: []byte("hi")})
	}
	jobs, err := q.ReserveN(ctx, 6, queue.ReserveOptions{Tubes: []string{"emails"}, Timeout: -1})
	fmt.Println(len(jobs), err) // the cap holds the sixth back
	// Output: 5 <nil>
}

func Example_expiringHashFields() {
	ctx := context.Background()
	b, err := hourglass.Open(ctx, "mem://", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()
	hs, err := ttlhash.New(b.Hashes, nil)
	if err != nil {
		log.Fatal(err)
	}

	sessions := hs.Hash("sessions")
	if _, err := sessions.SetTTL(ctx, "alice", []byte(`{"cart":3}`), 30*time.Minute); err != nil {
		log.Fatal(err)
	}
	v, ok, err := sessions.Get(ctx, "alice") // never an expired field
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(ok, string(v))
	// Output: true {"cart":3}
}

func Example_locks() {
	ctx := context.Background()
	b, err := hourglass.Open(ctx, "mem://", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()
	locks, err := lock.New(b.Locks, nil)
	if err != nil {
		log.Fatal(err)
	}

	l, err := locks.Obtain(ctx, "nightly-report", nil)
	if err != nil {
		log.Fatal(err) // lock.ErrNotObtained when ctx ended first
	}
	// l.Context() ends if the lease is lost; l.Fence() grows with each grant.
	fmt.Println("holding:", l.Context().Err() == nil)
	if err := l.Release(ctx); err != nil { // only the owner's token releases it
		log.Fatal(err)
	}
	// Output: holding: true
}
