package redisstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/internal/testkit/redistest"
	"github.com/hourglass-io/hourglass/internal/testkit/storetest"
	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/redisstore"
	"github.com/redis/go-redis/v9"
)

// On one Redis, job IDs increase in put order across every tube (whatever
// tag each lives on), and a reserve watching several tubes takes equal
// priorities in put order, as beanstalkd does.
func TestIDsFollowPutOrderAcrossTubes(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, standaloneClient(t), nil)
	q, err := queue.New(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	tubes := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	var last queue.ID
	for i := range 200 {
		tube := tubes[i*7%len(tubes)]
		id, err := q.Put(ctx, tube, queue.NewJob{Body: []byte(tube), Priority: 5, TTR: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if id <= last {
			t.Fatalf("put %d (tube %s) got id %d after %d", i, tube, id, last)
		}
		last = id
	}

	// The case: five jobs in a, then two in b; a worker watching
	// both gets a1..a5, then b1, b2.
	var want []queue.ID
	for _, tube := range []string{"x", "x", "x", "x", "x", "y", "y"} {
		id, err := q.Put(ctx, tube, queue.NewJob{Body: []byte(tube), Priority: 5, TTR: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, id)
	}
	for i, w := range want {
		j, err := q.Reserve(ctx, queue.ReserveOptions{Tubes: []string{"y", "x"}, Timeout: -1})
		if err != nil {
			t.Fatal(err)
		}
		if j.ID != w {
			t.Fatalf("reserve %d from x and y: job %d (tube %s), want %d", i, j.ID, j.Tube, w)
		}
	}
}

// Job IDs are never issued twice, even when Redis loses what it had: after
// a restart or a failover that lost everything, the next IDs are above every
// ID issued before, both after puts faster than the clock's 32 a
// millisecond (once the clock has moved past them: a restart takes longer)
// and after puts the clock covers (at once). On one Redis and on a cluster.
func TestIDsNotReusedAfterLoss(t *testing.T) {
	ctx := context.Background()
	for _, topo := range topologies {
		t.Run(topo.name, func(t *testing.T) {
			clock := storetest.NewClock(time.Now())
			c := topo.client(t)
			prefix := redistest.Prefix(t)
			q := clockedQueue(t, c, prefix, clock)
			seen := map[queue.ID]bool{}
			var high queue.ID
			put := func(round string, i int) {
				t.Helper()
				id, err := q.Put(ctx, fmt.Sprintf("t%d", i%5), queue.NewJob{Body: []byte("x"), TTR: time.Minute})
				if err != nil {
					t.Fatal(err)
				}
				if seen[id] {
					t.Fatalf("%s: id %d issued twice", round, id)
				}
				if id <= high {
					t.Errorf("%s: id %d not above %d, the highest before the loss", round, id, high)
				}
				seen[id] = true
			}
			lost := func() {
				for id := range seen {
					high = max(high, id)
				}
				deleteKeys(t, c, prefix)
			}
			// Fast puts (200 in one millisecond of Redis time), then a
			// restart a second later that lost them all.
			for round := range 3 {
				for i := range 200 {
					put(fmt.Sprintf("fast round %d", round), i)
				}
				lost()
				flushFunctions(t, c)
				clock.Advance(time.Second)
			}
			// Puts the clock covers (one a millisecond), then a loss in
			// the next millisecond.
			for round := range 3 {
				for i := range 20 {
					clock.Advance(time.Millisecond)
					put(fmt.Sprintf("slow round %d", round), i)
				}
				lost()
				clock.Advance(time.Millisecond)
			}
		})
	}
}

// flushFunctions deletes the functions of every master, as a restart
// without persistence or a new node would have none: the store loads them
// again, and their state starts afresh.
func flushFunctions(t *testing.T, c redis.UniversalClient) {
	t.Helper()
	ctx := context.Background()
	var err error
	if cc, ok := c.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error { return n.FunctionFlush(ctx).Err() })
	} else {
		err = c.FunctionFlush(ctx).Err()
	}
	if err != nil {
		t.Fatal(err)
	}
}

// deleteKeys deletes every key under prefix, on every master.
func deleteKeys(t *testing.T, c redis.UniversalClient, prefix string) {
	t.Helper()
	ctx := context.Background()
	del := func(ctx context.Context, n redis.Cmdable) error {
		keys, err := n.Keys(ctx, prefix+"*").Result()
		if err != nil {
			return err
		}
		for _, k := range keys {
			if err := n.Del(ctx, k).Err(); err != nil {
				return err
			}
		}
		return nil
	}
	var err error
	if cc, ok := c.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error { return del(ctx, n) })
	} else {
		err = del(ctx, c)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// A process's cache of job tubes is checked, not trusted: when an ID it
// remembers now names a job in another tube (Redis lost the old job and
// issued the ID again in the same millisecond), commands naming the ID
// reach the job where it is, and its holder can delete it.
func TestStaleTubeCache(t *testing.T) {
	ctx := context.Background()
	c := standaloneClient(t)
	prefix := redistest.Prefix(t)
	clock := storetest.NewClock(time.Now())
	p1, p2 := clockedQueue(t, c, prefix, clock), clockedQueue(t, c, prefix, clock)
	// Two tubes on one tag, so that one ID can name a job of either.
	a, b := "a", ""
	for i := 0; b == ""; i++ {
		if n := fmt.Sprint("b", i); redisstore.TubeTag(n) == redisstore.TubeTag(a) {
			b = n
		}
	}
	id, err := p1.Put(ctx, a, queue.NewJob{Body: []byte("old"), TTR: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p1.Peek(ctx, id); err != nil { // p1 remembers id -> a
		t.Fatal(err)
	}
	deleteKeys(t, c, prefix)
	again, err := p2.Put(ctx, b, queue.NewJob{Body: []byte("new"), TTR: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if again != id {
		t.Fatalf("the setup did not reissue id %d (got %d)", id, again)
	}
	j, err := p1.Peek(ctx, id)
	if err != nil || string(j.Body) != "new" || j.Tube != b {
		t.Fatalf("peek %d through the stale cache: %q in %q, %v; want the new job in %s", id, j.Body, j.Tube, err, b)
	}
	j, err = p1.ReserveJob(ctx, id)
	if err != nil {
		t.Fatalf("reserve-job %d through the stale cache: %v", id, err)
	}
	if _, err := p1.Touch(ctx, id); err != nil {
		t.Fatalf("touch %d by its holder: %v", id, err)
	}
	if err := p1.Delete(ctx, id); err != nil {
		t.Fatalf("delete %d by its holder: %v", id, err)
	}
}

// clockedQueue is a Queue on a store of its own under prefix on c, on the
// test's clock; both are closed when the test ends.
func clockedQueue(t *testing.T, c redis.UniversalClient, prefix string, clock *storetest.Clock) *queue.Queue {
	t.Helper()
	s, err := redisstore.New(context.Background(), c, &redisstore.Options{Prefix: prefix, Clock: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	q, err := queue.New(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Close() })
	return q
}
