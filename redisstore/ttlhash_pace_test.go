package redisstore_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/internal/testkit/storetest"
	"github.com/hourglass-io/hourglass/redisstore"
)

// TestTTLHashRefiningIsPaced fills one 4 s bucket of the due index with
// 3,000 deadlines and sweeps the shard every millisecond of its store's
// clock, as a Sweeper keeps up, from the moment the bucket falls due: the
// refining is spread over the three seconds before the bucket goes urgent
// (a share done at the half, all of it by the end, a chunk or so a call)
// rather than done as fast as calls come, and every field then expires at
// its deadline. A field whose 4 s bucket is already due when it is set
// goes straight to z, and expires on time too.
func TestTTLHashRefiningIsPaced(t *testing.T) {
	// A start on a 4,096 ms boundary: bucket b covers [t0+8192, t0+12288)
	// ms, falls due at t0+4096 and goes urgent at t0+7168.
	t0 := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC).UnixMilli() / 4096 * 4096
	clock := storetest.NewClock(time.UnixMilli(t0))
	c := standaloneClient(t)
	s, err := newStore(t, c, &redisstore.Options{Clock: clock.Now}).HashesWith(&redisstore.HashesOptions{Shards: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	const n = 3000
	err = parallel(n, func(i int) error {
		ttl := 8192*time.Millisecond + time.Duration(i*4096/n)*time.Millisecond
		_, err := s.Set(ctx, fmt.Sprintf("h%02d", i%50), ttlSet(ttl, fmt.Sprintf("f%04d", i), []byte("v")))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	// Due in 4,196 ms: its 4 s bucket [t0+4096, t0+8192) fell due at t0,
	// before this set.
	clock.Advance(time.Millisecond)
	if _, err := s.Set(ctx, "late", ttlSet(4195*time.Millisecond, "f", []byte("v"))); err != nil {
		t.Fatal(err)
	}
	_, base := redisstore.HashShard(s, "late")
	if got := c.ZCard(ctx, base+"z").Val(); got != 1 {
		t.Fatalf("z holds %d entries after the late set, want 1 (its bucket was due)", got)
	}
	sweep := func() (looked, expired int) {
		r, err := s.Sweep(ctx, 0, 256)
		if err != nil {
			t.Fatal(err)
		}
		return r.Looked, r.Expired
	}
	// Up to the bucket's due time nothing is refined.
	refined, most, calls := 0, 0, 0
	for clock.Now().UnixMilli() < t0+4096 {
		l, _ := sweep()
		refined += l
		clock.Advance(time.Millisecond)
	}
	if refined != 0 {
		t.Fatalf("refined %d entries before the bucket fell due", refined)
	}
	var atHalf int
	expired := 0
	for clock.Now().UnixMilli() < t0+7168 {
		l, x := sweep()
		refined += l - x
		expired += x
		if l-x > 0 {
			calls++
			most = max(most, l-x)
		}
		if clock.Now().UnixMilli() == t0+4096+1536 {
			atHalf = refined
		}
		clock.Advance(time.Millisecond)
	}
	t.Logf("refined %d entries in %d calls, at most %d in one; %d by the half of the window", refined, calls, most, atHalf)
	if refined != n {
		t.Fatalf("refined %d of %d entries before the bucket went urgent", refined, n)
	}
	if atHalf < n/4 || atHalf > n*9/10 {
		t.Errorf("refined %d of %d entries by the half of the window: want the work spread over it", atHalf, n)
	}
	if most > 128 {
		t.Errorf("one call refined %d entries: want a chunk or so", most)
	}
	// Every field, the late one first, expires at its deadline: the
	// sweep of each millisecond expires what falls due in it.
	for clock.Now().UnixMilli() <= t0+12288 {
		r, err := s.Sweep(ctx, 0, 256)
		if err != nil {
			t.Fatal(err)
		}
		expired += r.Expired
		if r.More {
			t.Fatalf("the sweep at %d ms left due work", clock.Now().UnixMilli()-t0)
		}
		clock.Advance(time.Millisecond)
	}
	if expired != n+1 {
		t.Fatalf("expired %d fields, want %d", expired, n+1)
	}
	evs, err := c.XRange(ctx, base+"e", "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if e.Values["x"] != e.Values["d"] {
			t.Fatalf("field %v of %v expired at %v ms, its deadline %v", e.Values["f"], e.Values["h"], e.Values["x"], e.Values["d"])
		}
	}
	if len(evs) != n+1 {
		t.Fatalf("%d events, want %d", len(evs), n+1)
	}
	if left := c.HLen(ctx, base+"w").Val() + c.ZCard(ctx, base+"z").Val(); left != 0 {
		t.Errorf("%d wheel fields and members of z left after the last deadline", left)
	}
}
