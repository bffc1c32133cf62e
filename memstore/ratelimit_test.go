package memstore

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/internal/testkit/storetest"
	"github.com/hourglass-io/hourglass/ratelimit"
)

func TestRateLimitConformance(t *testing.T) {
	storetest.RateLimit(t, func(t *testing.T, clock *storetest.Clock) ratelimit.Store {
		s := must(New(&Options{Clock: clock.Now}))
		t.Cleanup(func() { s.Close() })
		return s.RateLimits()
	})
}

// TestRateLimitIdleKeysDropped: the state of keys that are idle again is
// deleted by later decisions, so memory follows the keys in use.
func TestRateLimitIdleKeysDropped(t *testing.T) {
	clock := storetest.NewClock(time.Unix(1_900_000_000, 0))
	s := must(New(&Options{Clock: clock.Now}))
	defer s.Close()
	ls := s.RateLimits()
	if s.RateLimits() != ls {
		t.Fatal("Limits returned another store")
	}
	l, err := ratelimit.New(ls, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	lims := [][]ratelimit.Limit{
		{ratelimit.PerSecond(10)},
		{ratelimit.Limit{Events: 3, Per: time.Second, Algorithm: ratelimit.SlidingLog}},
		{ratelimit.Limit{Events: 3, Per: time.Second, Algorithm: ratelimit.SlidingWindow}},
	}
	for i := range 3000 {
		if _, err := l.Allow(ctx, "k"+string(rune('a'+i%26))+string(rune(i)), lims[i%3]...); err != nil {
			t.Fatal(err)
		}
	}
	if n := ls.Len(); n != 3000 {
		t.Fatalf("%d states after 3000 keys, want 3000", n)
	}
	clock.Advance(time.Minute)
	for i := range 3000 {
		if _, err := l.Allow(ctx, "hot", ratelimit.PerSecond(1_000_000)); err != nil {
			t.Fatal(err)
		}
		if i%100 == 0 {
			clock.Advance(time.Second)
		}
	}
	if n := ls.Len(); n > 300 {
		t.Fatalf("%d states left after 3000 decisions on one key, want the idle ones mostly gone", n)
	}
}

// BenchmarkRateLimitAllow is one GCRA decision in process, on one hot key
// and over 100,000 keys.
func BenchmarkRateLimitAllow(b *testing.B) {
	keys := make([]string, 100_000)
	for i := range keys {
		keys[i] = "user:" + strconv.Itoa(i)
	}
	for _, w := range []struct {
		name string
		n    int
	}{{"hot-key", 1}, {"100k-keys", len(keys)}} {
		b.Run(w.name, func(b *testing.B) {
			s := must(New(nil))
			defer s.Close()
			l, err := ratelimit.New(s.RateLimits(), nil)
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			lim := ratelimit.PerSecond(1_000_000)
			i := 0
			for b.Loop() {
				if _, err := l.Allow(ctx, keys[i%w.n], lim); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}
