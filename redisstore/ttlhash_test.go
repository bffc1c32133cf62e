package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/internal/testkit/redistest"
	"github.com/hourglass-io/hourglass/internal/testkit/storetest"
	"github.com/hourglass-io/hourglass/memstore"
	"github.com/hourglass-io/hourglass/redisstore"
	"github.com/hourglass-io/hourglass/ttlhash"
)

func TestTTLHashConformance(t *testing.T) {
	for _, top := range topologies {
		t.Run(top.name, func(t *testing.T) {
			t.Parallel()
			storetest.TTLHash(t, func(t *testing.T, clock *storetest.Clock) ttlhash.Store {
				s := newStore(t, top.client(t), &redisstore.Options{Clock: clock.Now})
				h, err := s.HashesWith(&redisstore.HashesOptions{MaxEvents: storetest.TTLHashMaxEvents})
				if err != nil {
					t.Fatal(err)
				}
				return h
			})
		})
	}
}

func TestHashesOptions(t *testing.T) {
	s := newStore(t, standaloneClient(t), nil)
	for _, o := range []redisstore.HashesOptions{{Shards: 3}, {Shards: 512}, {Shards: -1}, {MaxEvents: -1}} {
		if _, err := s.HashesWith(&o); err == nil {
			t.Errorf("HashesWith(%+v): no error", o)
		}
	}
	if h := s.Hashes(); h.Shards() != redisstore.DefaultHashShards {
		t.Errorf("Shards() = %d", h.Shards())
	}
	_ = context.Background()
}

// TestTTLHashDifferential drives the embedded engine and Redis with the
// same random operations and compares every answer.
func TestTTLHashDifferential(t *testing.T) {
	c := standaloneClient(t)
	for seed := uint64(1); seed <= 4; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			storetest.TTLHashDifferential(t, seed, 1500,
				func(t *testing.T, clock *storetest.Clock) ttlhash.Store {
					s, err := memstore.New(&memstore.Options{Clock: clock.Now})
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { s.Close() })
					return s.Hashes()
				},
				func(t *testing.T, clock *storetest.Clock) ttlhash.Store {
					return newStore(t, c, &redisstore.Options{Clock: clock.Now}).Hashes()
				})
		})
	}
}

// TestTTLHashSweeperWokenBySoonerDeadline: a Sweeper that found nothing due
// sleeps (here for up to an hour), and a field given a deadline sooner than
// any other, by another process's store, wakes it: the field's event comes
// long before the Interval.
func TestTTLHashSweeperWokenBySoonerDeadline(t *testing.T) {
	c := standaloneClient(t)
	prefix := redistest.Prefix(t)
	mine := newStoreWithPrefix(t, c, prefix).Hashes()
	theirs := newStoreWithPrefix(t, c, prefix).Hashes()
	ctx := context.Background()
	if err := mine.CreateGroup(ctx, "g"); err != nil {
		t.Fatal(err)
	}
	w, err := ttlhash.NewSweeper(mine, &ttlhash.SweeperOptions{Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	events := make(chan struct{}, 1)
	stop, err := mine.Listen(ctx, ttlhash.TopicEvents, func(string) {
		select {
		case events <- struct{}{}:
		default:
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	set := func(field string, ttl time.Duration) {
		t.Helper()
		if _, err := theirs.Set(ctx, "sessions", ttlhash.SetRequest{Fields: []ttlhash.Field{{Name: field, Value: []byte("v")}}, TTL: ttl}); err != nil {
			t.Fatal(err)
		}
	}
	wantEvent := func(field string) {
		t.Helper()
		deadline := time.After(10 * time.Second)
		for {
			evs, err := mine.Read(ctx, "g", "c", 10)
			if err != nil {
				t.Fatal(err)
			}
			if len(evs) > 0 {
				if len(evs) != 1 || evs[0].Field != field {
					t.Fatalf("events %+v, want one for field %s", evs, field)
				}
				if _, err := mine.Ack(ctx, "g", []string{evs[0].ID}); err != nil {
					t.Fatal(err)
				}
				return
			}
			select {
			case <-events:
			case <-deadline:
				t.Fatalf("no event for field %s 10 s after it was due: the sweeper was not woken", field)
			}
		}
	}
	// A field due at once: its event shows the sweeper has made a pass,
	// after which nothing is left and it sleeps for the Interval.
	set("first", time.Millisecond)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	wantEvent("first")
	// A far deadline, then a sooner one: each is the soonest when set, and
	// wakes the sleeping sweeper.
	set("far", time.Hour)
	set("soon", 100*time.Millisecond)
	wantEvent("soon")
}

// TestTTLHashReadFewerThanShards: a Read asking for fewer events than the
// store has shards still looks at every shard, so an empty answer means
// there is nothing to read.
func TestTTLHashReadFewerThanShards(t *testing.T) {
	clock := storetest.NewClock(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
	s := newStore(t, standaloneClient(t), &redisstore.Options{Clock: clock.Now}).Hashes()
	ctx := context.Background()
	if err := s.CreateGroup(ctx, "g"); err != nil {
		t.Fatal(err)
	}
	// Each round: one expired field in one hash, so one event in one shard
	// of 16; a Read of one event finds it, whichever shard the Read's
	// rotation starts at, and the next Read finds nothing.
	for i := range s.Shards() {
		if _, err := s.Set(ctx, "one", ttlhash.SetRequest{Fields: []ttlhash.Field{{Name: fmt.Sprint("f", i), Value: []byte("v")}}, TTL: time.Millisecond}); err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Second)
		rs, err := s.SweepAll(ctx, 10)
		if err != nil {
			t.Fatal(err)
		}
		if n := sumExpired(rs); n != 1 {
			t.Fatalf("round %d: the sweep expired %d fields, want 1", i, n)
		}
		evs, err := s.Read(ctx, "g", "c", 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) != 1 {
			t.Fatalf("round %d: Read(max 1) = %d events, want the one there is", i, len(evs))
		}
		if evs, err = s.Read(ctx, "g", "c", 1); err != nil || len(evs) != 0 {
			t.Fatalf("round %d: a second Read = %d events, %v; want none", i, len(evs), err)
		}
	}
}

func sumExpired(rs []ttlhash.SweepResult) int {
	n := 0
	for _, r := range rs {
		n += r.Expired
	}
	return n
}

// A wake-up of hash events names the shard that has them, and ReadShards
// reads that shard only.
func TestTTLHashWakeNamesShard(t *testing.T) {
	clock := storetest.NewClock(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
	s := newStore(t, standaloneClient(t), &redisstore.Options{Clock: clock.Now}).Hashes()
	ctx := context.Background()
	if err := s.CreateGroup(ctx, "g"); err != nil {
		t.Fatal(err)
	}
	woken := make(chan int, 64)
	stop, err := s.Listen(ctx, ttlhash.TopicEvents, func(topic string) {
		shard, ok := ttlhash.ParseEventShardTopic(topic)
		if !ok {
			t.Errorf("woken with topic %q, want a shard's", topic)
		}
		woken <- shard
	})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	// A listener of one shard's topic is woken with it.
	one := make(chan string, 64)
	for i := range s.Shards() {
		stop, err := s.Listen(ctx, ttlhash.EventShardTopic(i), func(topic string) { one <- topic })
		if err != nil {
			t.Fatal(err)
		}
		defer stop()
	}
	if _, err := s.Set(ctx, "one", ttlhash.SetRequest{Fields: []ttlhash.Field{{Name: "f", Value: []byte("v")}}, TTL: time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second)
	if _, err := s.SweepAll(ctx, 10); err != nil {
		t.Fatal(err)
	}
	var shard int
	select {
	case shard = <-woken:
	case <-time.After(5 * time.Second):
		t.Fatal("no wake-up 5 s after the sweep")
	}
	select {
	case topic := <-one:
		if want := ttlhash.EventShardTopic(shard); topic != want {
			t.Errorf("the shards' listeners were woken with %q, want %q", topic, want)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no wake-up of the shard's topic 5 s after the sweep")
	}
	other := (shard + 1) % s.Shards()
	if evs, err := s.ReadShards(ctx, "g", "c", []int{other}, 10); err != nil || len(evs) != 0 {
		t.Fatalf("ReadShards(shard %d) = %d events, %v; want none (the event is in shard %d)", other, len(evs), err, shard)
	}
	evs, err := s.ReadShards(ctx, "g", "c", []int{shard}, 10)
	if err != nil || len(evs) != 1 || evs[0].Field != "f" {
		t.Fatalf("ReadShards(shard %d) = %v, %v; want the event of f", shard, evs, err)
	}
	if _, err := s.ReadShards(ctx, "g", "c", []int{s.Shards()}, 10); !errors.Is(err, ttlhash.ErrInvalid) {
		t.Fatalf("ReadShards of shard %d of %d: %v, want ttlhash.ErrInvalid", s.Shards(), s.Shards(), err)
	}
}

// TestTTLHashAckRead: AckRead acknowledges the events it is given and
// reads the next ones in one call; an ID it cannot parse is refused with
// ErrInvalidEventID before anything is acknowledged or read.
func TestTTLHashAckRead(t *testing.T) {
	clock := storetest.NewClock(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
	s := newStore(t, standaloneClient(t), &redisstore.Options{Clock: clock.Now}).Hashes()
	ctx := context.Background()
	if err := s.CreateGroup(ctx, "g"); err != nil {
		t.Fatal(err)
	}
	set := func(hash string) {
		t.Helper()
		if _, err := s.Set(ctx, hash, ttlhash.SetRequest{Fields: []ttlhash.Field{{Name: "f", Value: []byte(hash)}}, TTL: time.Millisecond}); err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Second)
		if _, err := s.SweepAll(ctx, 10); err != nil {
			t.Fatal(err)
		}
	}
	pending := func() int64 {
		t.Helper()
		st, err := s.EventStats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return st.Groups[0].Pending
	}
	set("a")
	first, err := s.Read(ctx, "g", "c", 10)
	if err != nil || len(first) != 1 {
		t.Fatalf("Read = %v, %v; want the event of a", first, err)
	}
	set("b")
	if _, err := s.AckRead(ctx, "g", "c", []string{first[0].ID, "not an id"}, nil, 10); !errors.Is(err, ttlhash.ErrInvalidEventID) {
		t.Fatalf("AckRead of a bad ID: %v, want ttlhash.ErrInvalidEventID", err)
	}
	if n := pending(); n != 1 {
		t.Fatalf("after a refused AckRead %d events pending, want 1 (nothing acknowledged)", n)
	}
	next, err := s.AckRead(ctx, "g", "c", []string{first[0].ID}, nil, 10)
	if err != nil || len(next) != 1 || string(next[0].Value) != "b" {
		t.Fatalf("AckRead = %v, %v; want the event of b (read after the refused call)", next, err)
	}
	if n := pending(); n != 1 {
		t.Fatalf("after AckRead %d events pending, want 1 (b's)", n)
	}
	if k, err := s.Ack(ctx, "g", []string{first[0].ID}); err != nil || k != 0 {
		t.Fatalf("Ack of a's event again = %d, %v; want 0: AckRead acknowledged it", k, err)
	}
}

// TestTTLHashSweeperStandsBy: of two Sweepers of one store, one sweeps on
// time and the other stands by; when the first stops, the second expires
// the rest. Every field yields one event, and the due announcements name
// their shard.
func TestTTLHashSweeperStandsBy(t *testing.T) {
	const fields = 400
	c := standaloneClient(t)
	prefix := redistest.Prefix(t)
	s := newStoreWithPrefix(t, c, prefix).Hashes()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := s.SweepShards(ctx, []int{s.Shards()}, 10); !errors.Is(err, ttlhash.ErrInvalid) {
		t.Fatalf("SweepShards of shard %d of %d: %v, want ttlhash.ErrInvalid", s.Shards(), s.Shards(), err)
	}
	due := make(chan string, fields)
	stop, err := s.Listen(ctx, ttlhash.TopicDue, func(topic string) {
		select {
		case due <- topic:
		default:
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	hs, err := ttlhash.New(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := hs.CreateGroup(ctx, "g"); err != nil {
		t.Fatal(err)
	}
	var sweepers []*ttlhash.Sweeper
	for range 2 {
		w, err := ttlhash.NewSweeper(newStoreWithPrefix(t, c, prefix).Hashes(), &ttlhash.SweeperOptions{Interval: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		sweepers = append(sweepers, w)
	}
	for i := range fields {
		ttl := time.Duration(50+i*5) * time.Millisecond // over 2 s
		if _, err := hs.Hash(fmt.Sprintf("h%d", i%40)).SetTTL(ctx, fmt.Sprintf("f%d", i), []byte("v"), ttl); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case topic := <-due:
		if shard, ok := ttlhash.ParseDueShardTopic(topic); !ok || shard >= s.Shards() {
			t.Errorf("a due announcement came with topic %q, want a shard's", topic)
		}
	case <-ctx.Done():
		t.Fatal("no due announcement")
	}
	seen := map[string]int{}
	consumed := make(chan struct{})
	go func() {
		defer close(consumed)
		err := hs.Consume(ctx, "g", "c", func(_ context.Context, e ttlhash.Event) error {
			seen[e.Hash+"/"+e.Field]++
			if len(seen) == fields/4 {
				sweepers[0].Close() // the rest falls to the other
			}
			if len(seen) == fields {
				cancel()
			}
			return nil
		})
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Error(err)
		}
	}()
	<-consumed
	if len(seen) != fields {
		t.Fatalf("%d of %d fields yielded an event before the time limit", len(seen), fields)
	}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("%s: %d events", k, n)
		}
	}
	if got := sweepers[0].Expired() + sweepers[1].Expired(); got != fields {
		t.Errorf("the sweepers expired %d fields, want %d", got, fields)
	}
	if sweepers[1].Expired() == 0 {
		t.Error("the second sweeper expired nothing after the first stopped")
	}
}

// TestTTLHashConsumersShareWakeUps: three consumers of one group in one
// process (one Hashes) and one in another share the events: each field
// yields one event, handled once, and when every Consume has returned
// nothing is pending (the acknowledgement sent while reading went out).
// The visibility timeout is long, so that only wake-ups, not the timed
// looks for events to hand out again, bring the events within the limit.
func TestTTLHashConsumersShareWakeUps(t *testing.T) {
	const fields = 600
	for _, c := range []struct {
		name string
		open func(t *testing.T) (here, there ttlhash.Store)
	}{
		{"redis", func(t *testing.T) (ttlhash.Store, ttlhash.Store) {
			c := standaloneClient(t)
			prefix := redistest.Prefix(t)
			return newStoreWithPrefix(t, c, prefix).Hashes(), newStoreWithPrefix(t, c, prefix).Hashes()
		}},
		{"embedded", func(t *testing.T) (ttlhash.Store, ttlhash.Store) {
			s, err := memstore.New(nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s.Hashes(), s.Hashes()
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			here, there := c.open(t)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			hsHere, err := ttlhash.New(here, &ttlhash.Options{Batch: 16, VisibilityTimeout: 10 * time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			hsThere, err := ttlhash.New(there, &ttlhash.Options{Batch: 16, VisibilityTimeout: 10 * time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			if err := hsHere.CreateGroup(ctx, "g"); err != nil {
				t.Fatal(err)
			}
			w, err := ttlhash.NewSweeper(here, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Start(); err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			var mu sync.Mutex
			seen := map[string]int{}
			var wg sync.WaitGroup
			for i, hs := range []*ttlhash.Hashes{hsHere, hsHere, hsHere, hsThere} {
				wg.Go(func() {
					err := hs.Consume(ctx, "g", fmt.Sprint("c", i), func(_ context.Context, e ttlhash.Event) error {
						mu.Lock()
						defer mu.Unlock()
						seen[e.Hash+"/"+e.Field]++
						if len(seen) == fields {
							cancel()
						}
						return nil
					})
					if !errors.Is(err, context.Canceled) {
						t.Errorf("Consume: %v", err)
					}
				})
			}
			for i := range fields {
				ttl := time.Duration(20+i) * time.Millisecond
				if _, err := hsHere.Hash(fmt.Sprintf("h%d", i%30)).SetTTL(context.Background(), fmt.Sprintf("f%d", i), []byte("v"), ttl); err != nil {
					t.Fatal(err)
				}
			}
			wg.Wait()
			if len(seen) != fields {
				t.Fatalf("%d of %d fields yielded an event before the time limit", len(seen), fields)
			}
			for k, n := range seen {
				if n != 1 {
					t.Errorf("%s: handled %d times", k, n)
				}
			}
			st, err := hsHere.EventStats(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			for _, g := range st.Groups {
				if g.Pending != 0 {
					t.Errorf("group %s: %d events pending after every Consume returned", g.Name, g.Pending)
				}
			}
		})
	}
}

// TestTTLHashTrimsAcknowledged: the events every group has acknowledged
// are trimmed by the sweep that takes a stream past a multiple of 64
// entries, and those not yet handed out or acknowledged stay; an
// acknowledgement alone trims nothing.
func TestTTLHashTrimsAcknowledged(t *testing.T) {
	ctx := context.Background()
	clock := storetest.NewClock(time.Now())
	st, err := newStore(t, standaloneClient(t), &redisstore.Options{Clock: clock.Now}).HashesWith(&redisstore.HashesOptions{Shards: 1})
	if err != nil {
		t.Fatal(err)
	}
	hs, err := ttlhash.New(st, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := hs.CreateGroup(ctx, "g"); err != nil {
		t.Fatal(err)
	}
	expire := func(from, n int) {
		t.Helper()
		for i := from; i < from+n; i++ {
			if _, err := hs.Hash("h").SetTTL(ctx, fmt.Sprintf("f%d", i), []byte("v"), time.Millisecond); err != nil {
				t.Fatal(err)
			}
		}
		clock.Advance(300 * time.Millisecond)
		got := 0
		for {
			r, err := st.Sweep(ctx, 0, 256)
			if err != nil {
				t.Fatal(err)
			}
			if got += r.Expired; !r.More {
				break
			}
		}
		if got != n {
			t.Fatalf("swept %d fields, want %d", got, n)
		}
	}
	retained := func(want int64) {
		t.Helper()
		es, err := hs.EventStats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if es.Retained != want {
			t.Fatalf("%d events kept, want %d", es.Retained, want)
		}
	}
	ackAll := func(n int) {
		t.Helper()
		evs, err := hs.Read(ctx, "g", "c", 1000)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) != n {
			t.Fatalf("read %d events, want %d", len(evs), n)
		}
		ids := make([]string, len(evs))
		for i, e := range evs {
			ids[i] = e.ID
		}
		if k, err := hs.Ack(ctx, "g", ids...); err != nil || k != n {
			t.Fatalf("Ack: %d, %v; want %d", k, err, n)
		}
	}
	expire(0, 50) // under 64: nothing to trim
	ackAll(50)
	retained(50) // acknowledged, kept until a sweep passes 64
	expire(50, 30)
	retained(30) // the sweep passed 64: the 50 acknowledged went
	ackAll(30)
	expire(80, 10)
	retained(40) // 40 is no multiple of 64 passed: kept
	ackAll(10)
	expire(90, 30) // to 70: passes 64
	retained(30)
}
