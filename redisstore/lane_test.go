package redisstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/ratelimit"
	"github.com/hourglass-io/hourglass/redisstore"
	"github.com/hourglass-io/hourglass/ttlhash"
)

// While the expiring hashes' calls hold every turn of their lane (long
// sweeps in flight), the queue's calls still go out: the two lanes do not
// wait for each other. The hash call waits for its lane, and goes out once
// the lane frees.
func TestHashesLaneDoesNotHoldTheQueue(t *testing.T) {
	ctx := context.Background()
	_, c, _ := ownServer(t, nil)
	s, err := redisstore.New(ctx, c, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	q, err := queue.New(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	set := func(ctx context.Context) error {
		_, err := s.Hashes().Set(ctx, "h", ttlhash.SetRequest{Fields: []ttlhash.Field{{Name: "f", Value: []byte("v")}}, TTL: time.Minute})
		return err
	}

	release := redisstore.HoldHashesLane(s)
	putCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := q.Put(putCtx, "lanes", queue.NewJob{Body: []byte("x"), TTR: time.Minute}); err != nil {
		t.Fatalf("put while the hashes' lane is held: %v", err)
	}
	// A hash call waits for a turn of its own lane: it ends with its
	// context, without having gone out.
	short, cancelShort := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancelShort()
	if err := set(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("hash set while its lane is held: %v, want the context's deadline", err)
	}

	done := make(chan error, 1)
	go func() { done <- set(ctx) }()
	release()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("hash set after the lane freed: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("hash set still waiting 10 s after its lane freed")
	}
	got, err := s.Hashes().Get(ctx, "h", []string{"f"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] == nil || string(got[0].Value) != "v" {
		t.Fatalf("after the set, field f of h is %v, want v", got)
	}
}

// The rate limits have a lane of their own: while the queue's lane is
// held (long calls in flight), decisions still go out, and a put waits
// for its own lane.
func TestLimitsLaneDoesNotWaitForTheQueue(t *testing.T) {
	ctx := context.Background()
	_, c, _ := ownServer(t, nil)
	s, err := redisstore.New(ctx, c, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	q, err := queue.New(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	l, err := ratelimit.New(s.RateLimits(), nil)
	if err != nil {
		t.Fatal(err)
	}
	put := func(ctx context.Context) error {
		_, err := q.Put(ctx, "lanes", queue.NewJob{Body: []byte("x"), TTR: time.Minute})
		return err
	}

	release := redisstore.HoldMainLane(s)
	allowCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for i := range 3 {
		res, err := l.Allow(allowCtx, "lanes", ratelimit.PerMinute(2))
		if err != nil || res.Allowed != (i < 2) {
			t.Fatalf("decision %d while the queue's lane is held: %+v, %v; want allowed %v", i, res, err, i < 2)
		}
	}
	short, cancelShort := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancelShort()
	if err := put(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("put while its lane is held: %v, want the context's deadline", err)
	}
	release()
	if err := put(allowCtx); err != nil {
		t.Fatalf("put after the lane freed: %v", err)
	}
}
