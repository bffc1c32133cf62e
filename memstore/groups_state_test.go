package memstore

import (
	"context"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/internal/testkit/storetest"
	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/ratelimit"
)

// TestGroupRateStateForgotten: a tube grouped by customer whose every
// customer comes once keeps no state for them once their rate is whole
// again, with no further call: 20,000 one-off groups under a template of
// one reserve per second each leave 20,000 rate states while the clock
// stands (and each holds its group back), and when the clock reaches the
// last one's time the engine's timer forgets them all, the heap back
// within 256 KiB of its level before them. BenchmarkGroupRateState runs
// the same at 1,000,000.
func TestGroupRateStateForgotten(t *testing.T) {
	const n, bound = 20_000, 256 << 10
	run := groupRateState(t, n)
	t.Logf("%d one-off groups: %d rate states while the clock stood (%d bytes of heap over the level before), %d after a second (%d bytes over)",
		n, run.states, run.peak, run.statesAfter, run.final)
	if run.states != n {
		t.Fatalf("%d rate states after %d groups served, want %d", run.states, n, n)
	}
	if run.statesAfter != 0 || run.final > bound {
		t.Fatalf("a second later: %d rate states, heap %d bytes over its level before; want 0 and at most %d", run.statesAfter, run.final, bound)
	}
}

// BenchmarkGroupRateState is TestGroupRateStateForgotten at 1,000,000
// groups: the heap over its level before with their states, and after.
//
//	go test -run '^$' -bench GroupRateState -benchtime 1x ./memstore/
func BenchmarkGroupRateState(b *testing.B) {
	for b.Loop() {
		run := groupRateState(b, 1_000_000)
		b.ReportMetric(float64(run.states), "states")
		b.ReportMetric(float64(run.peak), "peak-bytes")
		b.ReportMetric(float64(run.peak)/float64(max(run.states, 1)), "bytes/state")
		b.ReportMetric(float64(run.statesAfter), "states-after")
		b.ReportMetric(float64(run.final), "final-bytes")
	}
}

type rateStateRun struct {
	states, statesAfter int
	peak, final         int64 // heap over the level before the groups
}

// groupRateState serves one job in each of n groups of tube "cust" (one
// reserve per second each) while the clock stands, checks that a group
// served is held back, then moves the clock a second on.
func groupRateState(tb testing.TB, n int) rateStateRun {
	tb.Helper()
	ctx := context.Background()
	clock := storetest.NewClock(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
	s, err := New(&Options{Clock: clock.Now, AfterFunc: clock.AfterFunc})
	if err != nil {
		tb.Fatal(err)
	}
	defer s.Close()
	q, err := queue.New(s, nil)
	if err != nil {
		tb.Fatal(err)
	}
	defer q.Close()
	err = q.SetLimits(ctx, "cust", queue.Limits{Group: queue.GroupLimits{Rate: ratelimit.Limit{Events: 1, Per: time.Second, Burst: 1}}})
	if err != nil {
		tb.Fatal(err)
	}
	serve := func(prefix string, n int) {
		jobs := make([]queue.NewJob, 100)
		for lo := 0; lo < n; lo += len(jobs) {
			k := min(len(jobs), n-lo)
			for i := range k {
				jobs[i] = queue.NewJob{Body: []byte("x"), Group: prefix + strconv.Itoa(lo+i)}
			}
			if _, err := q.PutMany(ctx, "cust", jobs[:k]); err != nil {
				tb.Fatal(err)
			}
			got, err := q.ReserveN(ctx, k, queue.ReserveOptions{Tubes: []string{"cust"}, Timeout: -1})
			if err != nil || len(got) != k {
				tb.Fatalf("ReserveN(%d) = %d jobs, %v", k, len(got), err)
			}
			ids := make([]queue.ID, k)
			for i, j := range got {
				ids[i] = j.ID
			}
			if _, err := q.DeleteMany(ctx, ids); err != nil {
				tb.Fatal(err)
			}
		}
	}
	// A first round, forgotten before the level is read.
	serve("w", 200)
	clock.Advance(time.Second)
	base := heapInUse()

	var run rateStateRun
	serve("c", n)
	run.states = groupStates(s)
	run.peak = heapInUse() - base
	// Its state holds a group served back until its rate is whole again.
	id, err := q.Put(ctx, "cust", queue.NewJob{Body: []byte("again"), Group: "c0"})
	if err != nil {
		tb.Fatal(err)
	}
	if got, err := q.ReserveN(ctx, 1, queue.ReserveOptions{Tubes: []string{"cust"}, Timeout: -1}); len(got) != 0 {
		tb.Fatalf("a served group's job reserved at once: %v, %v", got, err)
	}
	clock.Advance(time.Second) // the engine's timer forgets every group's state
	run.statesAfter = groupStates(s)
	j, err := q.Reserve(ctx, queue.ReserveOptions{Tubes: []string{"cust"}, Timeout: -1})
	if err != nil || j.ID != id {
		tb.Fatalf("a second later: Reserve = %v, %v; want job %v", j.ID, err, id)
	}
	if err := q.Delete(ctx, id); err != nil {
		tb.Fatal(err)
	}
	run.final = heapInUse() - base
	return run
}

// groupStates counts the group rate states the store keeps.
func groupStates(s *Store) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, tl := range s.queue.tubeLimits {
		n += len(tl.gtat)
	}
	return n
}

// heapInUse is the bytes of live heap objects after a collection.
func heapInUse() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}
