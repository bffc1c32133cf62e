package redisstore_test

import (
	"errors"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/ratelimit"
	"github.com/hourglass-io/hourglass/redisstore"
)

// A Reserve waiting on a tube its rate holds back returns when the rate
// frees a job, on Redis's clock, with no poll to wake it (the poll interval
// is an hour), and never sooner than the rate allows.
func TestLimitRateWakesWaiter(t *testing.T) {
	for _, topo := range topologies {
		t.Run(topo.name, func(t *testing.T) {
			s := newStore(t, topo.client(t), nil)
			ctx := t.Context()
			q, err := queue.New(s, &queue.Options{PollInterval: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			defer q.Close()
			const every = 100 * time.Millisecond
			if err := q.SetLimits(ctx, "paced", queue.Limits{Rate: ratelimit.Every(every)}); err != nil {
				t.Fatal(err)
			}
			for range 3 {
				if _, err := q.Put(ctx, "paced", queue.NewJob{Body: []byte("x")}); err != nil {
					t.Fatal(err)
				}
			}
			var last time.Time
			for i := range 3 {
				if _, err := q.Reserve(ctx, queue.ReserveOptions{Tubes: []string{"paced"}, Timeout: 30 * time.Second}); err != nil {
					t.Fatalf("reserve %d: %v", i, err)
				}
				now := time.Now()
				if i > 0 && now.Sub(last) < every-5*time.Millisecond { // Redis's clock and ours may differ by a little
					t.Errorf("reserve %d came %v after the one before, want at least %v", i, now.Sub(last), every)
				}
				last = now
			}
		})
	}
}

// A tube of several partitions spans several slots, where no script could
// count its reservations: limits on it are refused and change nothing.
func TestLimitsRefusedOnPartitionedTube(t *testing.T) {
	s := newStore(t, standaloneClient(t), &redisstore.Options{Partitions: func(tube string) int {
		if tube == "wide" {
			return 3
		}
		return 1
	}})
	q, err := queue.New(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	if err := q.SetLimits(t.Context(), "wide", queue.Limits{Cap: 1}); !errors.Is(err, queue.ErrInvalid) {
		t.Fatalf("SetLimits on a tube of 3 partitions: %v, want ErrInvalid", err)
	}
	if l, err := q.TubeLimits(t.Context(), "wide"); err != nil || !l.IsZero() {
		t.Errorf("TubeLimits after the refusal = %v, %v; want none", l, err)
	}
	if err := q.ClearLimits(t.Context(), "wide"); err != nil {
		t.Errorf("ClearLimits on a tube of 3 partitions: %v", err)
	}
}
