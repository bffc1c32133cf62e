package redisstore_test

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/internal/testkit/redistest"
	"github.com/hourglass-io/hourglass/memstore"
	"github.com/hourglass-io/hourglass/ratelimit"
	"github.com/hourglass-io/hourglass/redisstore"
	"github.com/redis/go-redis/v9"
)

// rlKeys lists the rate limit keys under prefix on every master.
func rlKeys(t *testing.T, c redis.UniversalClient, prefix string) map[string]string {
	t.Helper()
	ctx := context.Background()
	out := map[string]string{}
	var mu sync.Mutex
	scan := func(ctx context.Context, c *redis.Client) error {
		it := c.Scan(ctx, 0, prefix+"rl:*", 100).Iterator()
		for it.Next(ctx) {
			mu.Lock()
			out[it.Val()] = c.Options().Addr
			mu.Unlock()
		}
		return it.Err()
	}
	var err error
	if cc, ok := c.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error { return scan(ctx, m) })
	} else {
		err = scan(ctx, c.(*redis.Client))
	}
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRateLimitState: each algorithm's state is what the docs say, small,
// and set to expire when the key is idle again.
func TestRateLimitState(t *testing.T) {
	ctx := context.Background()
	c := standaloneClient(t)
	// A prefix as short as the default "hg:", unique to this process, as
	// key names count in MEMORY USAGE.
	prefix := "m" + strconv.Itoa(os.Getpid()) + ":"
	s, err := redisstore.New(ctx, c, &redisstore.Options{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	l, err := ratelimit.New(s.RateLimits(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		key      string
		limit    ratelimit.Limit
		n        int
		typ      string
		maxBytes int64
		maxTTL   time.Duration
	}{
		{"gcra", "+15550100", ratelimit.Every(30 * time.Minute), 1, "string", 100, 30 * time.Minute},
		{"gcra at the limit", "user:42", ratelimit.PerSecond(100), 100, "string", 100, time.Second},
		{"sliding log", "log", ratelimit.Limit{Events: 100, Per: time.Minute, Algorithm: ratelimit.SlidingLog}, 100, "zset", 100 * 40, time.Minute},
		{"sliding window", "win", ratelimit.Limit{Events: 100, Per: time.Minute, Algorithm: ratelimit.SlidingWindow}, 100, "hash", 150, 2 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if res, err := l.AllowN(ctx, tc.key, tc.n, tc.limit); err != nil || !res.Allowed {
				t.Fatalf("AllowN: %+v, %v", res, err)
			}
			var key string
			for k := range rlKeys(t, c, prefix) {
				if strings.Contains(k, "{s:"+tc.key+"}") {
					key = k
				}
			}
			if key == "" {
				t.Fatalf("no key for %q", tc.key)
			}
			if typ := c.Type(ctx, key).Val(); typ != tc.typ {
				t.Errorf("%s is a %s, want a %s", key, typ, tc.typ)
			}
			ttl := c.PTTL(ctx, key).Val()
			if ttl <= 0 || ttl > tc.maxTTL+2*time.Millisecond {
				t.Errorf("%s expires in %v, want within %v", key, ttl, tc.maxTTL)
			}
			mem := c.MemoryUsage(ctx, key).Val()
			t.Logf("%s: %d bytes (MEMORY USAGE), %d events", key, mem, tc.n)
			if mem > tc.maxBytes {
				t.Errorf("%s takes %d bytes, want at most %d", key, mem, tc.maxBytes)
			}
		})
	}
	// A key whose burst is whole again has no state left.
	if _, err := l.Allow(ctx, "short", ratelimit.Every(20*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		found := false
		for k := range rlKeys(t, c, prefix) {
			found = found || strings.Contains(k, "{s:short}")
		}
		if !found {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the state of an idle key is still there after 5 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestRateLimitFailure: with Redis gone, each policy answers as documented
// and never reports a failure as a plain refusal.
func TestRateLimitFailure(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Standalone(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond, DialerRetries: 1, DialerRetryTimeout: time.Millisecond})
	defer c.Close()
	s, err := redisstore.New(ctx, c, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	lim := ratelimit.PerMinute(2)
	closed, err := ratelimit.New(s.RateLimits(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := closed.Allow(ctx, "k", lim); err != nil || !res.Allowed {
		t.Fatalf("before the outage: %+v, %v", res, err)
	}
	srv.Stop()

	res, err := closed.Allow(ctx, "k", lim)
	if !errors.Is(err, ratelimit.ErrStore) || res.Allowed {
		t.Errorf("FailClosed: %+v, %v; want not allowed and ErrStore", res, err)
	}
	if err := closed.Wait(ctx, "k", lim); !errors.Is(err, ratelimit.ErrStore) {
		t.Errorf("FailClosed Wait: %v, want ErrStore", err)
	}

	var heard []error
	open, err := ratelimit.New(s.RateLimits(), &ratelimit.Options{Failure: ratelimit.FailOpen, OnStoreError: func(err error) { heard = append(heard, err) }})
	if err != nil {
		t.Fatal(err)
	}
	res, err = open.Allow(ctx, "k", lim)
	if err != nil || !res.Allowed || !errors.Is(res.StoreErr, ratelimit.ErrStore) {
		t.Errorf("FailOpen: %+v, %v; want allowed, with StoreErr", res, err)
	}
	if err := open.Wait(ctx, "k", lim); err != nil {
		t.Errorf("FailOpen Wait: %v", err)
	}
	if len(heard) != 2 {
		t.Errorf("OnStoreError heard %d errors, want 2", len(heard))
	}

	local, err := memstore.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close()
	fl, err := ratelimit.New(s.RateLimits(), &ratelimit.Options{Failure: ratelimit.FailLocal, Local: local.RateLimits()})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for range 5 {
		res, err := fl.Allow(ctx, "k", lim)
		if err != nil || !errors.Is(res.StoreErr, ratelimit.ErrStore) {
			t.Fatalf("FailLocal: %+v, %v", res, err)
		}
		if res.Allowed {
			n++
		}
	}
	if n != 2 {
		t.Errorf("FailLocal admitted %d of 5 at 2 per minute, want 2", n)
	}
	r, err := fl.Reserve(ctx, "r", time.Minute, ratelimit.Every(time.Second))
	if err != nil || !r.OK() || r.StoreErr() == nil {
		t.Fatalf("FailLocal Reserve: %v", err)
	}
	r2, err := fl.Reserve(ctx, "r", time.Minute, ratelimit.Every(time.Second))
	if err != nil || !r2.OK() || r2.Delay() <= 0 {
		t.Fatalf("FailLocal second Reserve: delay %v, %v", r2.Delay(), err)
	}
	if err := r2.Cancel(ctx); err != nil {
		t.Errorf("FailLocal Cancel goes to the local store: %v", err)
	}
}

// TestRateLimitPartitionsSpread: the partitions of a hot key lie on
// several masters of a cluster.
func TestRateLimitPartitionsSpread(t *testing.T) {
	ctx := context.Background()
	c := clusterClient(t)
	prefix := redistest.Prefix(t)
	s, err := redisstore.New(ctx, c, &redisstore.Options{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	l, err := ratelimit.New(s.RateLimits(), &ratelimit.Options{Partitions: func(string) int { return 8 }})
	if err != nil {
		t.Fatal(err)
	}
	for range 200 {
		if _, err := l.Allow(ctx, "hot", ratelimit.PerSecond(80)); err != nil {
			t.Fatal(err)
		}
	}
	keys := rlKeys(t, c, prefix)
	masters := map[string]int{}
	for _, addr := range keys {
		masters[addr]++
	}
	t.Logf("%d partition keys on masters %v", len(keys), masters)
	if len(keys) != 8 || len(masters) < 2 {
		t.Errorf("%d partition keys on %d masters, want 8 on at least 2", len(keys), len(masters))
	}
}

// TestRateLimitScriptFlush: a Redis that has forgotten the scripts (a
// restart, a failover, SCRIPT FLUSH) is given them again.
func TestRateLimitScriptFlush(t *testing.T) {
	ctx := context.Background()
	c := standaloneClient(t)
	l, err := ratelimit.New(newStore(t, c, nil).RateLimits(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{true, false} {
		if err := c.ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		res, err := l.Allow(ctx, "k", ratelimit.Every(time.Hour))
		if err != nil || res.Allowed != want {
			t.Fatalf("Allow %d after SCRIPT FLUSH: %+v, %v", i, res, err)
		}
	}
}
