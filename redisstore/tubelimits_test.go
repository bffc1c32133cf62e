package redisstore_test

import (
	"errors"
	"testing"

	"github.com/hourglass-io/hourglass/internal/testkit/storetest"
	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/redisstore"
)

// A Reserve waiting on a tube its rate holds back returns when the rate
// frees a job, on Redis's clock, with no poll to wake it (the poll interval
// is an hour), and never sooner than the rate allows.
func TestLimitRateWakesWaiter(t *testing.T) {
	for _, topo := range topologies {
		t.Run(topo.name, func(t *testing.T) {
			storetest.LimitRateWakesWaiter(t, newStore(t, topo.client(t), nil))
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
