package redisstore_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/internal/testkit/redistest"
	"github.com/hourglass-io/hourglass/redisstore"
	"github.com/hourglass-io/hourglass/ttlhash"
	"github.com/redis/go-redis/v9"
)

// TestTTLHashReadsEarlierLayout writes a shard as the earlier layout did —
// wheel buckets "<level>:<index>" from level 0 up whose entries carry no
// deadline, to be checked against the field — beside fields set now, and
// checks that a Sweeper expires every due field of both once, with its
// event, drops the stale entries, and leaves no bucket behind.
func TestTTLHashReadsEarlierLayout(t *testing.T) {
	c := standaloneClient(t)
	prefix := redistest.Prefix(t)
	h := newStoreWithPrefix(t, c, prefix).Hashes()
	ctx := t.Context()
	if err := h.CreateGroup(ctx, "g"); err != nil {
		t.Fatal(err)
	}
	enc6 := func(ms int64) string {
		var b [8]byte
		binary.BigEndian.PutUint64(b[:], uint64(ms))
		return string(b[2:])
	}
	// the earlier layout's bucket of deadline dl at now, and its due time
	oldBucket := func(dl, now int64) (string, int64) {
		l := 0
		for dl-now >= 16*int64(math.Pow(16, float64(l))) {
			l++
		}
		w := int64(math.Pow(16, float64(l)))
		idx := dl / w
		due := idx * w
		if l > 0 {
			due -= w
		}
		return strconv.Itoa(l) + ":" + strconv.FormatInt(idx, 10), due
	}
	now := time.Now().UnixMilli()
	type field struct {
		hash, name string
		entry      int64 // the wheel entry's deadline (ms from now)
		data       int64 // the stored deadline (ms from now; 0: no TTL; -1: no field)
	}
	fields := []field{
		{"old-a", "past", -20, -20},             // level 0, due already
		{"old-a", "soon", 5, 5},                 // level 0
		{"old-a", "later", 60, 60},              // level 1
		{"old-b", "further", 700, 700},          // level 2
		{"old-b", "far", 1500, 1500},            // level 2
		{"old-b", "moved", 40, 2000},            // stale: its deadline moved (to 900 ms, below)
		{"old-b", "persisted", 50, 0},           // stale: no TTL now
		{"old-c", "deleted", 80, -1},            // stale: the field is gone
		{"old-c", "kept", 3_600_000, 3_600_000}, // not due in this test
	}
	want := map[string]bool{}
	ids := map[string]int64{}
	chunks := map[string]map[string][]byte{} // shard base -> bucket -> open chunk
	dues := map[string]int64{}
	p := c.TxPipeline()
	for _, f := range fields {
		_, base := redisstore.HashShard(h, f.hash)
		id, ok := ids[f.hash]
		if !ok {
			id = int64(len(ids) + 1)
			ids[f.hash] = id
			p.HSet(ctx, base+"m", "seq", 10) // ids of this shard: 1..10 (ids never reused)
			p.HSet(ctx, base+"i", f.hash, id)
			p.HSet(ctx, base+"n", id, f.hash)
		}
		switch f.data {
		case -1:
		case 0:
			p.HSet(ctx, base+"d:"+f.hash, f.name, enc6(0)+"v-"+f.name)
		default:
			p.HSet(ctx, base+"d:"+f.hash, f.name, enc6(now+f.data)+"v-"+f.name)
			if f.data < 3_000 {
				want[f.hash+"/"+f.name] = true
			}
		}
		b, due := oldBucket(now+f.entry, now)
		if chunks[base] == nil {
			chunks[base] = map[string][]byte{}
		}
		entry := binary.AppendUvarint(chunks[base][b], uint64(id))
		entry = binary.AppendUvarint(entry, uint64(len(f.name)))
		chunks[base][b] = append(entry, f.name...)
		dues[b] = due
	}
	for base, bs := range chunks {
		for b, chunk := range bs {
			p.HSet(ctx, base+"w", "o"+b, chunk)
			p.ZAdd(ctx, base+"q", redis.Z{Score: float64(dues[b]), Member: b})
		}
	}
	if _, err := p.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	// The moved field's current deadline has its entry in the layout of
	// now, from the write that moved it: a write of now.
	if _, err := h.Expire(ctx, "old-b", ttlhash.ExpireRequest{At: time.UnixMilli(now + 900), Fields: []string{"moved"}}); err != nil {
		t.Fatal(err)
	}
	want["old-b/moved"] = true
	// A field written now, in the same hash.
	if _, err := h.Set(ctx, "old-a", ttlhash.SetRequest{TTL: 300 * time.Millisecond, Fields: []ttlhash.Field{{Name: "new", Value: []byte("v-new")}}}); err != nil {
		t.Fatal(err)
	}
	want["old-a/new"] = true

	sw, err := ttlhash.NewSweeper(h, nil)
	if err != nil {
		t.Fatal(err)
	}
	sw.Start()
	t.Cleanup(func() { sw.Close() })
	hs, err := ttlhash.New(h, nil)
	if err != nil {
		t.Fatal(err)
	}
	type got struct {
		key, value string
	}
	events := make(chan got, 100)
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- hs.Consume(cctx, "g", "c", func(_ context.Context, e ttlhash.Event) error {
			events <- got{e.Hash + "/" + e.Field, string(e.Value)}
			return nil
		})
	}()
	seen := map[string]int{}
	timeout := time.After(10 * time.Second)
	for len(seen) < len(want) {
		select {
		case e := <-events:
			seen[e.key]++
			if e.value != "v-"+e.key[len("old-a/"):] {
				t.Errorf("%s: value %q", e.key, e.value)
			}
		case <-timeout:
			t.Fatalf("events after 10 s: %v, want %v", seen, want)
		}
	}
	cancel()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	close(events)
	for e := range events {
		seen[e.key]++
	}
	// Everything due is swept now; nothing else comes.
	if _, err := h.SweepAll(ctx, 1000); err != nil {
		t.Fatal(err)
	}
	evs, err := h.Read(ctx, "g", "c", 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		seen[e.Hash+"/"+e.Field]++
	}
	for k := range want {
		if seen[k] != 1 {
			t.Errorf("%s: %d events, want 1", k, seen[k])
		}
	}
	for k, n := range seen {
		if !want[k] {
			t.Errorf("%s: %d events, want none", k, n)
		}
	}
	var buckets, near int64
	for base := range chunks {
		buckets += c.ZCard(ctx, base+"q").Val() + c.ZCard(ctx, base+"r").Val()
		near += c.ZCard(ctx, base+"z").Val()
	}
	if buckets != 1 || near != 0 {
		t.Errorf("%d buckets and %d near entries left, want the kept field's bucket alone", buckets, near)
	}
	// A deadline written now goes to a bucket of r, never of q, which a
	// sweeper of the earlier version may still be reading during an upgrade.
	_, base := redisstore.HashShard(h, "old-c")
	q0 := c.ZCard(ctx, base+"q").Val()
	if _, err := h.Set(ctx, "old-c", ttlhash.SetRequest{TTL: time.Hour, Fields: []ttlhash.Field{{Name: "later", Value: []byte("v")}}}); err != nil {
		t.Fatal(err)
	}
	if q, r := c.ZCard(ctx, base+"q").Val(), c.ZCard(ctx, base+"r").Val(); q != q0 || r != 1 {
		t.Errorf("after a write: q holds %d buckets (was %d), r %d; want q unchanged and one bucket in r", q, q0, r)
	}
	for _, hash := range []string{"old-a", "old-b", "old-c"} {
		all, err := h.GetAll(ctx, hash)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range all {
			names = append(names, e.Name)
		}
		wantLeft := map[string]string{"old-a": "[]", "old-b": "[persisted]", "old-c": "[kept later]"}[hash]
		if fmt.Sprint(names) != wantLeft {
			t.Errorf("%s holds %v, want %s", hash, names, wantLeft)
		}
	}
}
