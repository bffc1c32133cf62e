package faulttest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/internal/testkit/redistest"
	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/redisstore"
	"github.com/redis/go-redis/v9"
)

// stallLoad is a mixed load on one queue over Redis: producers putting
// jobs with bodies of their own, workers reserving and deleting them, and
// what each saw.
type stallLoad struct {
	mu        sync.Mutex
	acked     map[string]queue.ID // put and acknowledged, by body
	uncertain map[string]bool     // put and answered with an error: stored once or not at all
	reserved  map[string]queue.ID // by body: the job a worker got with it
	held      map[queue.ID]string // reserved now, by whom
	deleted   map[queue.ID]bool
	doubled   []string // bodies reserved under two IDs
	twice     []queue.ID
	putErrs   atomic.Int64
	workErrs  atomic.Int64
	done      atomic.Int64 // jobs reserved and deleted
	stop      atomic.Bool
	wg        sync.WaitGroup
}

func (l *stallLoad) produce(ctx context.Context, q *queue.Queue, name string) {
	defer l.wg.Done()
	for n := 0; !l.stop.Load(); n++ {
		body := fmt.Sprintf("%s-%d", name, n)
		id, err := q.Put(ctx, "stall", queue.NewJob{Body: []byte(body), TTR: time.Minute})
		l.mu.Lock()
		if err == nil {
			l.acked[body] = id
		} else {
			l.uncertain[body] = true
			l.putErrs.Add(1)
		}
		l.mu.Unlock()
		if err != nil && ctx.Err() != nil {
			return
		}
	}
}

// work reserves and deletes until stopped. After a failed call it hands
// back what its owner may hold (a reserve whose reply was lost reserved a
// job to it), so that nothing waits for its TTR.
func (l *stallLoad) work(ctx context.Context, q *queue.Queue) {
	defer l.wg.Done()
	owner := q.Owner()
	for !l.stop.Load() {
		j, err := q.Reserve(ctx, queue.ReserveOptions{Tubes: []string{"stall"}, Timeout: 200 * time.Millisecond})
		switch {
		case errors.Is(err, queue.ErrTimeout):
			continue
		case err != nil:
			l.workErrs.Add(1)
			if ctx.Err() != nil {
				return
			}
			l.abandon(ctx, q)
			continue
		}
		body := string(j.Body)
		l.mu.Lock()
		if id, ok := l.reserved[body]; ok && id != j.ID {
			l.doubled = append(l.doubled, body)
		}
		l.reserved[body] = j.ID
		if _, ok := l.held[j.ID]; ok {
			l.twice = append(l.twice, j.ID)
		}
		l.held[j.ID] = owner
		l.mu.Unlock()
		for {
			err := q.Delete(ctx, j.ID)
			if err == nil || errors.Is(err, queue.ErrNotFound) {
				// NotFound: an earlier try whose reply was lost deleted it.
				break
			}
			l.workErrs.Add(1)
			if ctx.Err() != nil {
				return
			}
		}
		l.mu.Lock()
		delete(l.held, j.ID)
		l.deleted[j.ID] = true
		l.mu.Unlock()
		l.done.Add(1)
	}
}

func (l *stallLoad) abandon(ctx context.Context, q *queue.Queue) {
	for ctx.Err() == nil {
		if _, err := q.Abandon(ctx); err == nil {
			return
		}
		l.workErrs.Add(1)
	}
}

// stallRun runs 8 producers and 8 workers on a Redis of the test's own,
// stalls it with stall (which returns when the stall has ended), and checks
// that no acknowledged job is lost, none is stored twice and none is held
// by two workers at once. It returns how long after the stall the workers
// were back to half their rate before it.
func stallRun(t testing.TB, pause time.Duration, stall func(ctx context.Context, addr string, d time.Duration) error) time.Duration {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute+3*pause)
	defer cancel()
	srv := redistest.Standalone(t, "--enable-debug-command", "yes")
	c := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1, PoolSize: 32})
	t.Cleanup(func() { c.Close() })
	s, err := redisstore.New(ctx, c, &redisstore.Options{Prefix: "stall:"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	q, err := queue.New(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	l := &stallLoad{acked: map[string]queue.ID{}, uncertain: map[string]bool{}, reserved: map[string]queue.ID{},
		held: map[queue.ID]string{}, deleted: map[queue.ID]bool{}}
	for i := range 8 {
		l.wg.Add(2)
		go l.produce(ctx, q, fmt.Sprintf("p%d", i))
		go l.work(ctx, q.WithOwner(fmt.Sprintf("w%d", i)))
	}

	// The rate by 100 ms.
	var samples []int64
	var sampled sync.WaitGroup
	sampling := make(chan struct{})
	sampled.Add(1)
	go func() {
		defer sampled.Done()
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		last := l.done.Load()
		for {
			select {
			case <-sampling:
				return
			case <-tick.C:
				n := l.done.Load()
				samples = append(samples, n-last)
				last = n
			}
		}
	}()
	start := time.Now()
	sleepUntil(ctx, start.Add(time.Second))
	before := l.done.Load()
	stalledAt := time.Now()
	if err := stall(ctx, srv.Addr, pause); err != nil {
		t.Fatal(err)
	}
	ended := time.Now()
	during := l.done.Load() - before
	sleepUntil(ctx, ended.Add(2*time.Second))
	l.stop.Store(true)
	l.wg.Wait()
	close(sampling)
	sampled.Wait()

	// Drain: every job put and stored is reserved and deleted.
	l.stop.Store(false)
	for i := range 8 {
		l.wg.Add(1)
		go l.work(ctx, q.WithOwner(fmt.Sprintf("drain%d", i)))
	}
	dctx, dcancel := context.WithTimeout(ctx, 20*time.Second)
	defer dcancel()
	var st queue.TubeStats
	for st.Ready+st.Reserved+st.Delayed+st.Buried > 0 || st.Name == "" {
		if dctx.Err() != nil {
			t.Fatalf("the tube is not drained: %+v", st)
		}
		time.Sleep(10 * time.Millisecond)
		st, err = q.StatsTube(ctx, "stall")
		if errors.Is(err, queue.ErrNotFound) {
			break // a tube with no job left is gone
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	l.stop.Store(true)
	l.wg.Wait()

	l.mu.Lock()
	defer l.mu.Unlock()
	lost := 0
	for body, id := range l.acked {
		if l.reserved[body] != id || !l.deleted[id] {
			lost++
		}
	}
	stored := 0
	for body := range l.uncertain {
		if _, ok := l.reserved[body]; ok {
			stored++
		}
	}
	if lost > 0 || len(l.doubled) > 0 || len(l.twice) > 0 {
		t.Errorf("%d acknowledged jobs lost, %d bodies stored twice (%.5q), %d jobs held by two workers at once (%v)",
			lost, len(l.doubled), l.doubled, len(l.twice), l.twice)
	}
	if len(l.reserved) != len(l.acked)+stored {
		t.Errorf("%d jobs reserved, want the %d acknowledged and the %d stored of the %d puts answered with an error",
			len(l.reserved), len(l.acked), stored, len(l.uncertain))
	}

	// Back to half the rate before the stall: the first 100 ms after it
	// ended that reaches it.
	pre := int((stalledAt.Sub(start)) / (100 * time.Millisecond))
	var base int64
	for _, n := range samples[:pre] {
		base += n
	}
	base /= int64(max(pre, 1))
	back := time.Duration(-1)
	from := int(ended.Sub(start) / (100 * time.Millisecond))
	for i := from; i < len(samples); i++ {
		if samples[i] >= base/2 {
			back = start.Add(time.Duration(i+1) * 100 * time.Millisecond).Sub(ended)
			break
		}
	}
	t.Logf("stall of %v: %d puts acknowledged, %d answered with an error (%d of them stored), %d jobs done (%d during the stall), %d failed worker calls; "+
		"0 lost, 0 doubled, 0 held twice; %d jobs/100 ms before, back to half that %v after the stall",
		pause, len(l.acked), len(l.uncertain), stored, l.done.Load(), during, l.workErrs.Load(), base, back.Round(time.Millisecond))
	return back
}

// clientPause stalls Redis with CLIENT PAUSE d ALL, from a connection of
// its own, and returns once the pause has ended (the first command after
// it is answered).
func clientPause(ctx context.Context, addr string, d time.Duration) error {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, ReadTimeout: d + 5*time.Second})
	defer c.Close()
	if err := c.Do(ctx, "CLIENT", "PAUSE", d.Milliseconds(), "ALL").Err(); err != nil {
		return err
	}
	return c.Ping(ctx).Err()
}

// debugSleep stalls Redis with DEBUG SLEEP: the server runs nothing, not
// even the reading of closed connections, so a call that timed out during
// it is still run after it, its reply lost.
func debugSleep(ctx context.Context, addr string, d time.Duration) error {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, ReadTimeout: d + 5*time.Second})
	defer c.Close()
	return c.Do(ctx, "DEBUG", "SLEEP", fmt.Sprintf("%.3f", d.Seconds())).Err()
}

// TestRedisStall stalls Redis for 2 s (CLIENT PAUSE ALL, then DEBUG SLEEP)
// under 8 producers and 8 workers: nothing acknowledged is lost, nothing
// is stored twice or held by two workers, and the work resumes (the 10 s
// pause is BenchmarkRedisPause10s, kept out of the CI suite for its time).
func TestRedisStall(t *testing.T) {
	t.Run("CLIENT PAUSE", func(t *testing.T) { stallRun(t, 2*time.Second, clientPause) })
	t.Run("DEBUG SLEEP", func(t *testing.T) { stallRun(t, 2*time.Second, debugSleep) })
}

// sleepUntil waits for a moment of the load's timeline (not for an event).
func sleepUntil(ctx context.Context, at time.Time) {
	select {
	case <-time.After(time.Until(at)):
	case <-ctx.Done():
	}
}

// BenchmarkRedisPause10s is TestRedisPause with a 10 s pause, longer
// than go-redis's 5 s read timeout, so calls fail during it (run with
// -bench RedisPause10s -benchtime 1x; it is one run whatever b.N).
func BenchmarkRedisPause10s(b *testing.B) {
	for range b.N {
		stallRun(b, 10*time.Second, clientPause)
	}
}
