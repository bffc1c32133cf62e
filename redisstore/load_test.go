package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/internal/testkit/redistest"
	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/redisstore"
	"github.com/redis/go-redis/v9"
)

// The library loads, and it holds a function for every operation file: a
// syntax error fails here, with its line in the library.
func TestLibraryLoads(t *testing.T) {
	c := standaloneClient(t)
	ctx := context.Background()
	name, src, fns := redisstore.Library()
	if err := c.FunctionLoadReplace(ctx, src).Err(); err != nil {
		t.Fatalf("loading library %s: %v", name, err)
	}
	libs, err := c.FunctionList(ctx, redis.FunctionListQuery{LibraryNamePattern: name}).Result()
	if err != nil || len(libs) != 1 {
		t.Fatalf("FUNCTION LIST %s: %v, %v", name, libs, err)
	}
	have := map[string]bool{}
	for _, f := range libs[0].Functions {
		have[f.Name] = true
	}
	files, err := fs.Glob(os.DirFS("scripts"), "*.lua")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		file := strings.TrimSuffix(f, ".lua")
		if strings.HasSuffix(file, "lib") {
			continue
		}
		if fn, ok := fns[file]; !ok || !have[fn] {
			t.Errorf("scripts/%s: no function in the library (registered as %q)", f, fn)
		}
	}
}

// 32 reservers over 8 Queue values sharing one Redis take 20k jobs, and each
// job is delivered exactly once.
func TestExactlyOnce(t *testing.T) {
	n := 20000
	if testing.Short() {
		n = 2000
	}
	for _, topo := range topologies {
		t.Run(topo.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			c := topo.client(t)
			prefix := redistest.Prefix(t)
			var queues []*queue.Queue
			for range 8 {
				s, err := redisstore.New(ctx, c, &redisstore.Options{Prefix: prefix})
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				q, err := queue.New(s, nil)
				if err != nil {
					t.Fatal(err)
				}
				defer q.Close()
				queues = append(queues, q)
			}
			jobs := make([]queue.NewJob, 100)
			for i := 0; i < n; i += len(jobs) {
				for k := range jobs {
					jobs[k] = queue.NewJob{Body: fmt.Appendf(nil, "%d", i+k), TTR: time.Minute}
				}
				if _, err := queues[i/100%8].PutMany(ctx, "work", jobs); err != nil {
					t.Fatal(err)
				}
			}
			var mu sync.Mutex
			seen := make(map[queue.ID]int, n)
			var wg sync.WaitGroup
			errc := make(chan error, 32)
			for r := range 32 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					q := queues[r%8].WithOwner(fmt.Sprintf("reserver-%d", r))
					for {
						j, err := q.Reserve(ctx, queue.ReserveOptions{Tubes: []string{"work"}, Timeout: -1})
						if errors.Is(err, queue.ErrTimeout) {
							return
						}
						if err != nil {
							errc <- err
							return
						}
						mu.Lock()
						seen[j.ID]++
						mu.Unlock()
						if err := q.Delete(ctx, j.ID); err != nil {
							errc <- fmt.Errorf("delete %d: %w", j.ID, err)
							return
						}
					}
				}()
			}
			wg.Wait()
			close(errc)
			for err := range errc {
				t.Fatal(err)
			}
			if len(seen) != n {
				t.Fatalf("delivered %d distinct jobs, want %d", len(seen), n)
			}
			for id, k := range seen {
				if k != 1 {
					t.Fatalf("job %d delivered %d times", id, k)
				}
			}
		})
	}
}

// A reserver that stops mid-job sees its job handed to another after the TTR.
func TestTTRHandsJobToAnother(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s := newStore(t, standaloneClient(t), nil)
	q, err := queue.New(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	id, err := q.Put(ctx, "ttr", queue.NewJob{Body: []byte("x"), TTR: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	a, b := q.WithOwner("a"), q.WithOwner("b")
	if _, err := a.Reserve(ctx, queue.ReserveOptions{Tubes: []string{"ttr"}}); err != nil {
		t.Fatal(err)
	}
	// a stops here; b waits, without polling, for the TTR to run out.
	j, err := b.Reserve(ctx, queue.ReserveOptions{Tubes: []string{"ttr"}})
	if err != nil {
		t.Fatal(err)
	}
	if j.ID != id || j.Reserves != 2 {
		t.Fatalf("b got %+v, want job %d on its second reservation", j, id)
	}
	st, err := b.StatsJob(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if st.Timeouts != 1 {
		t.Fatalf("timeouts = %d, want 1", st.Timeouts)
	}
	if err := a.Delete(ctx, id); !errors.Is(err, queue.ErrReserved) {
		t.Fatalf("a's delete after losing the job: %v, want ErrReserved", err)
	}
}

// A delayed job reaches a waiting reserver at its due time in Redis's clock,
// not before.
func TestDelayedDeliveryInRedisTime(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := standaloneClient(t)
	s := newStore(t, c, nil)
	q, err := queue.New(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	before, err := c.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.Put(ctx, "later", queue.NewJob{Body: []byte("x"), Delay: 300 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Reserve(ctx, queue.ReserveOptions{Tubes: []string{"later"}}); err != nil {
		t.Fatal(err)
	}
	after, err := c.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	// The store keeps Redis's clock in whole milliseconds: a job put at
	// 12.700 ms with a 300 ms delay is due at 312 ms, which the microsecond
	// reading of TIME would call 299.3 ms later. Compare whole milliseconds.
	if got := after.Truncate(time.Millisecond).Sub(before.Truncate(time.Millisecond)); got < 300*time.Millisecond {
		t.Fatalf("delivered %v after the put in Redis's milliseconds, before the 300ms delay", got)
	}
}

// A Redis that is down gives errors, never "not found".
func TestRedisDownIsAnError(t *testing.T) {
	ctx := context.Background()
	srv, _, q := ownServer(t, &redis.Options{MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	id, err := q.Put(ctx, "t", queue.NewJob{Body: []byte("x")})
	if err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	checks := map[string]error{}
	_, checks["put"] = q.Put(ctx, "t", queue.NewJob{Body: []byte("x")})
	_, checks["reserve"] = q.Reserve(ctx, queue.ReserveOptions{Tubes: []string{"t"}, Timeout: -1})
	checks["delete"] = q.Delete(ctx, id)
	_, checks["peek"] = q.Peek(ctx, id)
	_, checks["stats-tube"] = q.StatsTube(ctx, "t")
	checks["kick-job"] = q.KickJob(ctx, id)
	for op, err := range checks {
		if err == nil {
			t.Errorf("%s with Redis down: no error", op)
			continue
		}
		checkNotOutcome(t, err)
	}
}

// A basic round trip through Sentinel.
func TestSentinel(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sen := redistest.NewSentinel(t)
	c := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: sen.MasterName, SentinelAddrs: sen.SentinelAddrs(), MaxRetries: -1})
	defer c.Close()
	s := newStore(t, c, nil)
	q, err := queue.New(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	id, err := q.Put(ctx, "s", queue.NewJob{Body: []byte("via sentinel")})
	if err != nil {
		t.Fatal(err)
	}
	j, err := q.Reserve(ctx, queue.ReserveOptions{Tubes: []string{"s"}, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if j.ID != id || string(j.Body) != "via sentinel" {
		t.Fatalf("got %+v", j)
	}
}

// A store refuses a Redis whose layout version it does not read.
func TestLayoutVersion(t *testing.T) {
	ctx := context.Background()
	c := standaloneClient(t)
	prefix := redistest.Prefix(t)
	if err := c.Set(ctx, prefix+"layout", "999", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := redisstore.New(ctx, c, &redisstore.Options{Prefix: prefix}); err == nil {
		t.Fatal("New accepted layout version 999")
	}
}

// When the master fails and Sentinel promotes its replica, calls fail with
// errors (never an outcome such as "not found") until the client finds the
// new master, and then every job that had reached the replica is there, in
// exactly one state.
func TestSentinelFailover(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	sen := redistest.NewSentinel(t)
	c := redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName: sen.MasterName, SentinelAddrs: sen.SentinelAddrs(), MaxRetries: -1,
		DialTimeout: 200 * time.Millisecond, ReadTimeout: 500 * time.Millisecond, WriteTimeout: 500 * time.Millisecond,
	})
	defer c.Close()
	s := newStore(t, c, nil)
	q, err := queue.New(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	const n = 50
	for i := range n {
		delay := time.Duration(0)
		if i%2 == 1 {
			delay = time.Hour
		}
		if _, err := q.Put(ctx, "fo", queue.NewJob{Body: fmt.Appendf(nil, "%d", i), Delay: delay}); err != nil {
			t.Fatal(err)
		}
	}
	// Make sure the replica has every write before the master dies:
	// replication is asynchronous, and this test is about what survives.
	if err := c.Do(ctx, "WAIT", 1, 5000).Err(); err != nil {
		t.Fatal(err)
	}
	// Sentinel announces the promotion on +switch-master: wait for that.
	sc := redis.NewClient(&redis.Options{Addr: sen.SentinelAddrs()[0]})
	defer sc.Close()
	sub := sc.Subscribe(ctx, "+switch-master")
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	sen.Master.Stop()
	if _, err := q.StatsTube(ctx, "fo"); err == nil {
		t.Fatal("StatsTube succeeded with the master down")
	} else {
		checkNotOutcome(t, err)
	}
	if _, err := sub.ReceiveMessage(ctx); err != nil {
		t.Fatalf("no +switch-master before the deadline: %v", err)
	}
	// The client finds the new master on its next connection; the calls
	// until then fail with errors, never with outcomes.
	var outage int
	for {
		st, err := q.StatsTube(ctx, "fo")
		if err == nil {
			if st.Ready != n/2 || st.Delayed != n/2 {
				t.Fatalf("after the failover: %+v, want %d ready and %d delayed", st, n/2, n/2)
			}
			break
		}
		checkNotOutcome(t, err)
		if outage++; outage > 20 {
			t.Fatalf("still failing after the failover: %v", err)
		}
	}
	t.Logf("failed calls during the failover: %d", outage)
	j, err := q.Reserve(ctx, queue.ReserveOptions{Tubes: []string{"fo"}, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Delete(ctx, j.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.CheckInvariants(ctx); err != nil {
		t.Fatal(err)
	}
}

// checkNotOutcome fails the test if a store failure was reported as one of
// the queue's outcomes.
func checkNotOutcome(t *testing.T, err error) {
	t.Helper()
	for _, sentinel := range []error{queue.ErrNotFound, queue.ErrReserved, queue.ErrNotReserved, queue.ErrTimeout, queue.ErrNotKickable, queue.ErrFull} {
		if errors.Is(err, sentinel) {
			t.Fatalf("a store failure reported as an outcome: %v", err)
		}
	}
}

// When a cluster master fails and its replica takes over its slots, calls
// to those slots fail with errors (never outcomes) until the client learns
// the new layout, and then every job that had reached the replica is there,
// in exactly one state; tubes on the other masters are not disturbed.
func TestClusterFailover(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cl := redistest.NewCluster(t, 3, 1)
	c := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs: cl.Addrs(), MaxRetries: -1,
		DialTimeout: 200 * time.Millisecond, ReadTimeout: 500 * time.Millisecond, WriteTimeout: 500 * time.Millisecond,
	})
	defer c.Close()
	s := newStore(t, c, nil)
	q, err := queue.New(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	// Enough tubes that some live on every master (all on the two others:
	// a chance of (2/3)^24, about 1 in 17,000).
	var tubes []string
	for i := range 24 {
		tubes = append(tubes, fmt.Sprintf("f%d", i))
	}
	const per = 10
	for _, tube := range tubes {
		for i := range per {
			delay := time.Duration(0)
			if i%2 == 1 {
				delay = time.Hour
			}
			if _, err := q.Put(ctx, tube, queue.NewJob{Body: []byte(tube), Delay: delay}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Every write on its replica before the master dies (WAIT on each master).
	admin := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs(), ReadTimeout: 5 * time.Second})
	defer admin.Close()
	if err := admin.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		n, err := m.Do(ctx, "WAIT", 1, 3000).Int()
		if err == nil && n < 1 {
			err = fmt.Errorf("WAIT: no replica of %s has every write", m.Options().Addr)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	cl.Masters[0].Stop()

	total := 0
	for _, tube := range tubes {
		failures := 0
		for {
			st, err := q.StatsTube(ctx, tube)
			if err == nil {
				if st.Ready != per/2 || st.Delayed != per/2 {
					t.Fatalf("%s after the failover: %+v, want %d ready and %d delayed", tube, st, per/2, per/2)
				}
				break
			}
			checkNotOutcome(t, err)
			failures++
			if ctx.Err() != nil {
				t.Fatalf("%s: no new master before the deadline; last error: %v", tube, err)
			}
		}
		total += failures
	}
	t.Logf("failed calls during the failover: %d", total)
	if total == 0 {
		t.Fatal("no call failed: the test did not reach a tube on the stopped master")
	}
	if err := s.CheckInvariants(ctx); err != nil {
		t.Fatal(err)
	}
}
