package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/lock"
	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/ratelimit"
	"github.com/hourglass-io/hourglass/redisstore"
	"github.com/hourglass-io/hourglass/ttlhash"
	"github.com/redis/go-redis/v9"
)

// commandCalls reads the number of calls of each command since the last
// CONFIG RESETSTAT (commands run by functions count too).
func commandCalls(t testing.TB, c *redis.Client) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for name, st := range commandStats(t, c) {
		out[name] = int64(st.calls)
	}
	return out
}

// A put wakes waiting reservers when it makes a job ready, or when a
// delayed job falls due before the tube's next due time; a delayed put
// behind an earlier one publishes nothing.
func TestPutWakesOnlyWhenSooner(t *testing.T) {
	ctx := context.Background()
	_, c, q := ownServer(t, nil)
	cases := []struct {
		name  string
		delay time.Duration
		wakes int64
	}{
		{"first delayed job of the tube", time.Hour, 1},
		{"later than the tube's next due", 2 * time.Hour, 0},
		{"sooner than the tube's next due", time.Minute, 1},
		{"between the two", 30 * time.Minute, 0},
		{"ready now", 0, 1},
	}
	for _, tc := range cases {
		if err := c.ConfigResetStat(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		if _, err := q.Put(ctx, "w", queue.NewJob{Body: []byte("x"), Delay: tc.delay, TTR: time.Minute}); err != nil {
			t.Fatal(err)
		}
		if got := commandCalls(t, c)["spublish"]; got != tc.wakes {
			t.Errorf("%s: %d wake-ups published, want %d", tc.name, got, tc.wakes)
		}
	}
}

// Concurrent puts to one tube go out together: fewer function calls than
// puts, every job stored once with its own id, each caller's order kept.
func TestPutsMerge(t *testing.T) {
	ctx := context.Background()
	_, c, q := ownServer(t, nil)
	if err := c.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	const callers, each = 16, 200
	ids := make([][]queue.ID, callers)
	var wg sync.WaitGroup
	for g := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				id, err := q.Put(ctx, "m", queue.NewJob{Body: fmt.Appendf(nil, "%d/%d", g, i), TTR: time.Minute})
				if err != nil {
					t.Error(err)
					return
				}
				ids[g] = append(ids[g], id)
			}
		}()
	}
	wg.Wait()
	calls := commandCalls(t, c)
	if calls["fcall"] >= callers*each {
		t.Errorf("%d function calls for %d puts: none merged", calls["fcall"], callers*each)
	}
	seen := map[queue.ID]bool{}
	for g := range callers {
		for i, id := range ids[g] {
			if seen[id] {
				t.Fatalf("id %d given twice", id)
			}
			seen[id] = true
			if i > 0 && id <= ids[g][i-1] {
				t.Errorf("caller %d: put %d got id %d after %d", g, i, id, ids[g][i-1])
			}
			j, err := q.Peek(ctx, id)
			if err != nil || string(j.Body) != fmt.Sprintf("%d/%d", g, i) {
				t.Fatalf("peek %d: %q, %v; want %d/%d", id, j.Body, err, g, i)
			}
		}
	}
	t.Logf("%d puts in %d function calls", callers*each, calls["fcall"])
}

// After Redis loses the library (a restart without persistence, FUNCTION
// FLUSH), the next call loads it again and succeeds, for every primitive.
func TestLibraryReloaded(t *testing.T) {
	ctx := context.Background()
	_, c, q := ownServer(t, nil)
	s, err := redisstore.New(ctx, c, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	steps := []struct {
		name string
		f    func() error
	}{
		{"put", func() error { _, err := q.Put(ctx, "r", queue.NewJob{Body: []byte("x"), TTR: time.Minute}); return err }},
		{"limit", func() error {
			_, err := s.RateLimits().GCRA(ctx, "k", 1, []ratelimit.Limit{ratelimit.PerSecond(10)}, ratelimit.OpAllow, -1, time.Time{})
			return err
		}},
		{"lock", func() error {
			_, err := s.Locks().Acquire(ctx, lock.AcquireRequest{Name: "l", Token: "t", Limit: 1, TTL: time.Second})
			return err
		}},
		{"hash", func() error {
			_, err := s.Hashes().Set(ctx, "h", ttlhash.SetRequest{Fields: []ttlhash.Field{{Name: "f", Value: []byte("v")}}, TTL: time.Minute})
			return err
		}},
	}
	for _, st := range steps {
		if err := c.FunctionFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		if err := st.f(); err != nil {
			t.Errorf("%s after FUNCTION FLUSH: %v", st.name, err)
		}
	}
}

// A caller whose context ends while it waits for its turn leaves the queue
// without its call being made; the others are served; with one batch in
// flight at a time or several.
func TestCancelledCallerLeaves(t *testing.T) {
	for _, inflight := range []int{1, 3} {
		t.Run(fmt.Sprintf("inflight=%d", inflight), func(t *testing.T) {
			defer redisstore.SetMaxInflight(inflight)()
			testCancelledCallerLeaves(t)
		})
	}
}

func testCancelledCallerLeaves(t *testing.T) {
	ctx := context.Background()
	_, _, q := ownServer(t, nil)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var made, cancelled int
	for g := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				cctx, cancel := context.WithCancel(ctx)
				switch (g + i) % 4 {
				case 0:
					cancel()
				case 1:
					go cancel() // races the call
				}
				_, err := q.Put(cctx, "c", queue.NewJob{Body: []byte("x"), TTR: time.Minute})
				cancel()
				mu.Lock()
				switch {
				case err == nil:
					made++
				case errors.Is(err, context.Canceled):
					cancelled++
				default:
					t.Error(err)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	st, err := q.StatsTube(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	if int(st.Ready) != made {
		t.Errorf("%d jobs ready, %d puts succeeded (%d cancelled)", st.Ready, made, cancelled)
	}
	// The queue is not stuck: one more put goes through.
	tctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := q.Put(tctx, "c", queue.NewJob{Body: []byte("x"), TTR: time.Minute}); err != nil {
		t.Fatal(err)
	}
}

// Waiting on many tubes, one after another, leaves a bounded number of
// subscriptions behind, and none once the queue closes; a channel whose
// last listener leaves is unsubscribed on Redis too.
func TestSubscriptionsReleased(t *testing.T) {
	ctx := context.Background()
	for _, topo := range topologies {
		t.Run(topo.name, func(t *testing.T) {
			c := topo.client(t)
			s := newStore(t, c, nil)
			q, err := queue.New(s, nil)
			if err != nil {
				t.Fatal(err)
			}
			const tubes = 600
			for i := range tubes {
				_, err := q.Reserve(ctx, queue.ReserveOptions{Tubes: []string{fmt.Sprintf("t%d", i)}, Timeout: time.Millisecond})
				if !errors.Is(err, queue.ErrTimeout) {
					t.Fatalf("reserve on t%d: %v, want ErrTimeout", i, err)
				}
			}
			channels, _ := redisstore.Subscriptions(s)
			if channels == 0 || channels > 300 {
				t.Errorf("after waiting on %d tubes: %d channels subscribed, want some and at most about 256", tubes, channels)
			}
			if err := q.Close(); err != nil {
				t.Fatal(err)
			}
			if channels, conns := redisstore.Subscriptions(s); channels != 0 || conns != 0 {
				t.Errorf("after Close: %d channels on %d connections", channels, conns)
			}

			// Redis's side: a channel with a listener counts one subscriber,
			// and none once the listener stops.
			stop, err := s.Listen(ctx, "solo", func(string) {})
			if err != nil {
				t.Fatal(err)
			}
			if n := shardSubscribers(t, c, s, "solo"); n != 1 {
				t.Errorf("%d subscribers while listening, want 1", n)
			}
			stop()
			deadline := time.Now().Add(5 * time.Second)
			for shardSubscribers(t, c, s, "solo") != 0 {
				if time.Now().After(deadline) {
					t.Fatal("the channel still has a subscriber 5 s after its listener stopped")
				}
				time.Sleep(5 * time.Millisecond) // polls Redis's count; the unsubscription is asynchronous
			}
		})
	}
}

// shardSubscribers is PUBSUB SHARDNUMSUB of tube's wake-up channel, on the
// node that owns it.
func shardSubscribers(t *testing.T, c redis.UniversalClient, s *redisstore.Store, tube string) int64 {
	t.Helper()
	ch := redisstore.Channel(s, tube)
	m, err := c.PubSubShardNumSub(context.Background(), ch).Result()
	if err != nil {
		t.Fatal(err)
	}
	return m[ch]
}
