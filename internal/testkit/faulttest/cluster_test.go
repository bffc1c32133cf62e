package faulttest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/internal/testkit/redistest"
	"github.com/hourglass-io/hourglass/queue"
	"github.com/redis/go-redis/v9"
)

// A Cluster master killed (SIGKILL) under queue load, its replica promoted
// by the cluster: 4 producers put jobs into 12 tubes spread over the
// masters and 4 workers reserve and delete them. The test measures what a
// user would: how long calls fail and on which masters, how many
// acknowledged puts are lost and how many jobs are delivered twice; and it
// checks that calls fail with errors (never as outcomes), that service
// comes back, and that a job put once the cluster is whole again is
// delivered exactly once.
func TestClusterMasterKilledUnderLoad(t *testing.T) {
	ctx := deadline(t, 120*time.Second)
	cl := redistest.NewCluster(t, 3, 1)
	c := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs: cl.Addrs(), MaxRetries: -1, DialerRetries: 1, DialerRetryTimeout: time.Millisecond,
		DialTimeout: 200 * time.Millisecond, ReadTimeout: 500 * time.Millisecond, WriteTimeout: 500 * time.Millisecond,
	})
	defer c.Close()
	q := openQueue(t, ctx, c, nil)
	var tubes []string
	for i := range 12 {
		tubes = append(tubes, "t"+strconv.Itoa(i))
	}

	var (
		mu        sync.Mutex
		acked     = map[string]time.Time{} // bodies whose put was acknowledged, and when
		delivered = map[string]int{}       // bodies reserved and deleted
		failures  []time.Time
		outcome   error // a failure reported as an outcome
	)
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		failures = append(failures, time.Now())
		for _, o := range []error{queue.ErrNotFound, queue.ErrReserved, queue.ErrNotReserved, queue.ErrFull} {
			if errors.Is(err, o) && outcome == nil {
				outcome = err
			}
		}
	}
	load, stopLoad := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var seq sync.Mutex
	next := 0
	for p := range 4 {
		wg.Go(func() {
			for load.Err() == nil {
				seq.Lock()
				n := next
				next++
				seq.Unlock()
				body := fmt.Sprintf("p%d-%d", p, n)
				if _, err := q.Put(load, tubes[n%len(tubes)], queue.NewJob{Body: []byte(body), TTR: time.Minute}); err != nil {
					if load.Err() == nil {
						fail(err)
					}
					continue
				}
				mu.Lock()
				acked[body] = time.Now()
				mu.Unlock()
			}
		})
	}
	consume := func(ctx context.Context, timeout time.Duration) error {
		j, err := q.Reserve(ctx, queue.ReserveOptions{Tubes: tubes, Timeout: timeout})
		if err != nil {
			return err
		}
		mu.Lock()
		delivered[string(j.Body)]++
		mu.Unlock()
		return q.Delete(ctx, j.ID)
	}
	for range 4 {
		wg.Go(func() {
			for load.Err() == nil {
				if err := consume(load, 100*time.Millisecond); err != nil && !errors.Is(err, queue.ErrTimeout) && load.Err() == nil {
					fail(err)
				}
			}
		})
	}
	countAcked := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(acked)
	}
	waitFor(t, ctx, "2,000 puts before the kill", func() bool { return countAcked() >= 2000 })
	killed := time.Now()
	cl.Masters[0].Crash()
	// Service is back when puts to every tube succeed again.
	waitFor(t, ctx, "the cluster answering again", func() bool {
		for _, tube := range tubes {
			if _, err := q.StatsTube(ctx, tube); err != nil {
				return false
			}
		}
		return true
	})
	back := time.Now()
	after := countAcked()
	waitFor(t, ctx, "2,000 more puts after the failover", func() bool { return countAcked() >= after+2000 })
	stopLoad()
	wg.Wait()

	// Drain what is left, with every master answering.
	for {
		err := consume(ctx, 500*time.Millisecond)
		if errors.Is(err, queue.ErrTimeout) {
			break
		}
		if err != nil {
			t.Fatalf("draining: %v", err)
		}
	}
	if outcome != nil {
		t.Errorf("a store failure reported as an outcome: %v", outcome)
	}
	var lost, doubled int
	var earliestLost time.Duration // before the kill
	for body, at := range acked {
		if delivered[body] == 0 {
			lost++
			earliestLost = max(earliestLost, killed.Sub(at))
		}
		// A job put once every tube answered again met a whole cluster.
		if at.After(back) && delivered[body] != 1 {
			t.Errorf("%s, put %v after the cluster was whole, delivered %d times", body, at.Sub(back).Round(time.Millisecond), delivered[body])
		}
	}
	for _, n := range delivered {
		if n > 1 {
			doubled += n - 1
		}
	}
	var first, last time.Time
	for _, f := range failures {
		if first.IsZero() || f.Before(first) {
			first = f
		}
		if f.After(last) {
			last = f
		}
	}
	t.Logf("killed a master under load: %d puts acknowledged, %d failed calls from %v to %v after the kill, all tubes answering %v after it; %d acknowledged puts lost (acknowledged up to %v before the kill: what the replica had not received), %d jobs delivered twice",
		len(acked), len(failures), first.Sub(killed).Round(time.Millisecond), last.Sub(killed).Round(time.Millisecond),
		back.Sub(killed).Round(time.Millisecond), lost, earliestLost.Round(time.Millisecond), doubled)
	if len(failures) == 0 {
		t.Fatal("no call failed: the test did not reach the killed master")
	}
}
