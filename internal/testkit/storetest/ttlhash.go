package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/hourglass-io/hourglass/ttlhash"
)

// TTLHashMaxEvents is the event cap a store given to TTLHash must have
// (its retention case checks the cap).
const TTLHashMaxEvents = 64

// NewTTLHashStore returns a fresh, empty ttlhash.Store on clock (a back end
// may keep only milliseconds) whose event cap is TTLHashMaxEvents. It
// registers its own cleanup with t.
type NewTTLHashStore func(t *testing.T, clock *Clock) ttlhash.Store

// TTLHash runs the conformance suite for the ttlhash.Store contract
// against stores made by newStore, one fresh store per subtest. Time is the
// injected clock's, except for the visibility timeout of Claim, which a
// store may measure on its own clock (Redis does): that case waits, with a
// deadline, for a short timeout to pass.
func TTLHash(t *testing.T, newStore NewTTLHashStore) {
	for _, c := range []struct {
		name string
		run  func(t *testing.T, e *hxEnv)
	}{
		{"SetGet", testHXSetGet},
		{"ReadsNeverExpired", testHXReadsNeverExpired},
		{"SetClearsOrKeepsTTL", testHXSetTTLRules},
		{"ExpireCodes", testHXExpireCodes},
		{"Persist", testHXPersist},
		{"Del", testHXDel},
		{"Scan", testHXScan},
		{"Events", testHXEvents},
		{"Redelivery", testHXRedelivery},
		{"Retention", testHXRetention},
		{"ManyDeadlines", testHXManyDeadlines},
		{"Groups", testHXGroups},
		{"BadInput", testHXBadInput},
		{"Notifier", testHXNotifier},
		{"ShardReader", testHXShardReader},
		{"AckReader", testHXAckReader},
	} {
		t.Run(c.name, func(t *testing.T) {
			clock := NewClock(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
			s := newStore(t, clock)
			h, err := ttlhash.New(s, &ttlhash.Options{VisibilityTimeout: 50 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			e := &hxEnv{t: t, ctx: context.Background(), s: s, h: h, clock: clock, names: map[string]bool{}}
			c.run(t, e)
			e.checkInvariants()
		})
	}
}

type hxEnv struct {
	t     *testing.T
	ctx   context.Context
	s     ttlhash.Store
	h     *ttlhash.Hashes
	clock *Clock

	// mu guards names.
	mu    sync.Mutex
	names map[string]bool // the hashes the case named (hash), for the invariant check
}

func (e *hxEnv) ok(what string, err error) {
	e.t.Helper()
	if err != nil {
		e.t.Fatalf("%s: %v", what, err)
	}
}

// sweep sweeps every shard until nothing due is left and returns how many
// fields expired.
func (e *hxEnv) sweep() int {
	e.t.Helper()
	n := 0
	for sh := range e.s.Shards() {
		for {
			r, err := e.s.Sweep(e.ctx, sh, 100)
			e.ok("Sweep", err)
			n += r.Expired
			if !r.More {
				break
			}
		}
	}
	return n
}

// snapshot reads a hash every way there is: Get per field, GetAll, Scan
// and Len must agree.
func (e *hxEnv) snapshot(hash string, fields ...string) map[string]string {
	e.t.Helper()
	h := e.hash(hash)
	all, err := h.GetAll(e.ctx)
	e.ok("GetAll", err)
	m := map[string]string{}
	for _, en := range all {
		m[en.Name] = string(en.Value)
	}
	scanned := map[string]string{}
	e.ok("Scan", h.Scan(e.ctx, 3, func(en ttlhash.Entry) bool { scanned[en.Name] = string(en.Value); return true }))
	if diff := gocmp.Diff(m, scanned); diff != "" {
		e.t.Errorf("%s: GetAll and Scan differ (-GetAll +Scan):\n%s", hash, diff)
	}
	n, err := h.Len(e.ctx)
	e.ok("Len", err)
	if n != len(m) {
		e.t.Errorf("%s: Len %d, GetAll has %d", hash, n, len(m))
	}
	if len(fields) > 0 {
		es, err := h.GetMany(e.ctx, fields...)
		e.ok("GetMany", err)
		for i, f := range fields {
			v, live := m[f]
			switch {
			case es[i] == nil && live:
				e.t.Errorf("%s: GetMany misses %q that GetAll has", hash, f)
			case es[i] != nil && !live:
				e.t.Errorf("%s: GetMany has %q that GetAll misses", hash, f)
			case es[i] != nil && string(es[i].Value) != v:
				e.t.Errorf("%s: GetMany %q = %q, GetAll %q", hash, f, es[i].Value, v)
			}
		}
	}
	return m
}

func (e *hxEnv) wantHash(hash string, want map[string]string, fields ...string) {
	e.t.Helper()
	got := e.snapshot(hash, fields...)
	if want == nil {
		want = map[string]string{}
	}
	if diff := gocmp.Diff(want, got); diff != "" {
		e.t.Errorf("%s (-want +got):\n%s", hash, diff)
	}
}

// drain reads every event group has for consumer, acknowledging them when
// ack is true.
func (e *hxEnv) drain(group, consumer string, ack bool) []ttlhash.Event {
	e.t.Helper()
	var all []ttlhash.Event
	for {
		evs, err := e.s.Read(e.ctx, group, consumer, 50)
		e.ok("Read", err)
		if len(evs) == 0 {
			return all
		}
		if ack {
			ids := make([]string, len(evs))
			for i, ev := range evs {
				ids[i] = ev.ID
			}
			n, err := e.s.Ack(e.ctx, group, ids)
			e.ok("Ack", err)
			if n != len(ids) {
				e.t.Errorf("Ack of %d events acknowledged %d", len(ids), n)
			}
		}
		all = append(all, evs...)
	}
}

func eventKeys(evs []ttlhash.Event) []string {
	var out []string
	for _, ev := range evs {
		out = append(out, ev.Hash+"/"+ev.Field+"="+string(ev.Value))
	}
	sort.Strings(out)
	return out
}

func wantCodes(t *testing.T, what string, got []int, err error, want ...int) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

func testHXSetGet(t *testing.T, e *hxEnv) {
	h := e.hash("users")
	added, err := h.Set(e.ctx, "a", []byte("1"))
	e.ok("Set", err)
	if !added {
		t.Error("Set of a new field: not reported new")
	}
	added, err = h.Set(e.ctx, "a", []byte("2"))
	e.ok("Set", err)
	if added {
		t.Error("Set of an existing field: reported new")
	}
	n, err := h.SetMany(e.ctx, []ttlhash.Field{{Name: "a", Value: []byte("3")}, {Name: "b", Value: nil}, {Name: "", Value: []byte{0, 1, 255}}}, 0)
	e.ok("SetMany", err)
	if n != 2 {
		t.Errorf("SetMany: %d new, want 2", n)
	}
	v, ok, err := h.Get(e.ctx, "a")
	e.ok("Get", err)
	if !ok || string(v) != "3" {
		t.Errorf("Get a = %q, %v; want 3", v, ok)
	}
	_, ok, err = h.Get(e.ctx, "zz")
	e.ok("Get", err)
	if ok {
		t.Error("Get of a missing field: found")
	}
	e.wantHash("users", map[string]string{"a": "3", "b": "", "": "\x00\x01\xff"}, "a", "b", "", "zz")
	e.wantHash("nobody", nil, "a")
	es, err := h.GetMany(e.ctx, "a")
	e.ok("GetMany", err)
	if !es[0].Deadline.IsZero() {
		t.Errorf("a field without TTL has the deadline %v", es[0].Deadline)
	}
	big := bytes.Repeat([]byte("x"), 100000)
	_, err = h.SetTTL(e.ctx, "big", big, time.Hour)
	e.ok("SetTTL big", err)
	v, _, err = h.Get(e.ctx, "big")
	e.ok("Get big", err)
	if !bytes.Equal(v, big) {
		t.Errorf("a value of %d bytes came back as %d bytes", len(big), len(v))
	}
	es, err = h.GetMany(e.ctx, "big")
	e.ok("GetMany", err)
	if want := e.clock.Now().Add(time.Hour); !es[0].Deadline.Equal(want) {
		t.Errorf("deadline %v, want %v", es[0].Deadline, want)
	}
}

func testHXReadsNeverExpired(t *testing.T, e *hxEnv) {
	h := e.hash("cache")
	_, err := h.SetTTL(e.ctx, "short", []byte("s"), 10*time.Second)
	e.ok("SetTTL", err)
	_, err = h.SetTTL(e.ctx, "long", []byte("l"), 20*time.Second)
	e.ok("SetTTL", err)
	_, err = h.Set(e.ctx, "forever", []byte("f"))
	e.ok("Set", err)
	ttls, err := h.TTL(e.ctx, "short", "long", "forever", "none")
	e.ok("TTL", err)
	if want := []time.Duration{10 * time.Second, 20 * time.Second, ttlhash.NoTTL, ttlhash.NoField}; !slices.Equal(ttls, want) {
		t.Errorf("TTL = %v, want %v", ttls, want)
	}
	e.clock.Advance(10*time.Second - time.Millisecond)
	e.wantHash("cache", map[string]string{"short": "s", "long": "l", "forever": "f"}, "short", "long")
	e.clock.Advance(time.Millisecond)
	// Due, not swept: never returned.
	e.wantHash("cache", map[string]string{"long": "l", "forever": "f"}, "short", "long")
	ttls, err = h.TTL(e.ctx, "short", "long")
	e.ok("TTL", err)
	if want := []time.Duration{ttlhash.NoField, 10 * time.Second}; !slices.Equal(ttls, want) {
		t.Errorf("TTL after the deadline = %v, want %v", ttls, want)
	}
	e.sweep()
	e.wantHash("cache", map[string]string{"long": "l", "forever": "f"}, "short", "long")
	e.clock.Advance(time.Hour)
	e.wantHash("cache", map[string]string{"forever": "f"}, "short", "long")
	e.sweep()
	e.wantHash("cache", map[string]string{"forever": "f"}, "short", "long")
}

func testHXSetTTLRules(t *testing.T, e *hxEnv) {
	h := e.hash("h")
	_, err := h.SetTTL(e.ctx, "a", []byte("1"), time.Minute)
	e.ok("SetTTL", err)
	_, err = h.SetTTL(e.ctx, "b", []byte("1"), time.Minute)
	e.ok("SetTTL", err)
	_, err = h.Set(e.ctx, "a", []byte("2"))
	e.ok("Set", err)
	_, err = h.SetKeepTTL(e.ctx, "b", []byte("2"))
	e.ok("SetKeepTTL", err)
	ttls, err := h.TTL(e.ctx, "a", "b")
	e.ok("TTL", err)
	if want := []time.Duration{ttlhash.NoTTL, time.Minute}; !slices.Equal(ttls, want) {
		t.Errorf("after Set and SetKeepTTL: TTL = %v, want %v (Set clears, SetKeepTTL keeps)", ttls, want)
	}
	// SetTTL on a field with a TTL replaces it.
	_, err = h.SetTTL(e.ctx, "b", []byte("3"), time.Second)
	e.ok("SetTTL", err)
	e.clock.Advance(time.Second)
	e.sweep()
	e.wantHash("h", map[string]string{"a": "2"}, "a", "b")
	// The old, later deadline of b yields nothing more.
	e.clock.Advance(2 * time.Minute)
	if n := e.sweep(); n != 0 {
		t.Errorf("a sweep at b's old deadline expired %d fields, want 0", n)
	}
}

func testHXExpireCodes(t *testing.T, e *hxEnv) {
	h := e.hash("h")
	set := func(f string, ttl time.Duration) {
		t.Helper()
		var err error
		if ttl == 0 {
			_, err = h.Set(e.ctx, f, []byte(f))
		} else {
			_, err = h.SetTTL(e.ctx, f, []byte(f), ttl)
		}
		e.ok("set "+f, err)
	}
	set("plain", 0)
	set("ttl", time.Minute)
	codes, err := h.Expire(e.ctx, 30*time.Second, ttlhash.NX, "plain", "ttl", "none")
	wantCodes(t, "Expire NX", codes, err, ttlhash.Done, ttlhash.NotMet, ttlhash.NoField)
	codes, err = h.Expire(e.ctx, 2*time.Minute, ttlhash.GT, "plain", "ttl")
	wantCodes(t, "Expire GT", codes, err, ttlhash.Done, ttlhash.Done)
	codes, err = h.Expire(e.ctx, time.Minute, ttlhash.GT, "plain")
	wantCodes(t, "Expire GT, earlier", codes, err, ttlhash.NotMet)
	codes, err = h.Expire(e.ctx, time.Minute, ttlhash.LT, "plain")
	wantCodes(t, "Expire LT, earlier", codes, err, ttlhash.Done)
	set("plain2", 0)
	codes, err = h.Expire(e.ctx, time.Minute, ttlhash.XX, "plain2")
	wantCodes(t, "Expire XX without TTL", codes, err, ttlhash.NotMet)
	codes, err = h.Expire(e.ctx, time.Minute, ttlhash.GT, "plain2")
	wantCodes(t, "Expire GT without TTL (infinite)", codes, err, ttlhash.NotMet)
	codes, err = h.Expire(e.ctx, time.Hour, ttlhash.LT, "plain2")
	wantCodes(t, "Expire LT without TTL (infinite)", codes, err, ttlhash.Done)
	codes, err = h.Expire(e.ctx, 3*time.Minute, ttlhash.XX, "plain2")
	wantCodes(t, "Expire XX with TTL", codes, err, ttlhash.Done)
	ttls, err := h.TTL(e.ctx, "plain", "ttl", "plain2")
	e.ok("TTL", err)
	if want := []time.Duration{time.Minute, 2 * time.Minute, 3 * time.Minute}; !slices.Equal(ttls, want) {
		t.Errorf("TTL = %v, want %v", ttls, want)
	}
	at := e.clock.Now().Add(90 * time.Second)
	codes, err = h.ExpireAt(e.ctx, at, ttlhash.None, "plain")
	wantCodes(t, "ExpireAt", codes, err, ttlhash.Done)
	es, err := h.GetMany(e.ctx, "plain")
	e.ok("GetMany", err)
	if !es[0].Deadline.Equal(at) {
		t.Errorf("deadline after ExpireAt = %v, want %v", es[0].Deadline, at)
	}
	// A deadline now or past expires the field at once, with its event.
	e.ok("CreateGroup", e.h.CreateGroup(e.ctx, "g"))
	codes, err = h.ExpireAt(e.ctx, e.clock.Now().Add(-time.Hour), ttlhash.None, "plain")
	wantCodes(t, "ExpireAt past", codes, err, ttlhash.Deleted)
	codes, err = h.Expire(e.ctx, 0, ttlhash.None, "ttl", "plain")
	wantCodes(t, "Expire 0", codes, err, ttlhash.Deleted, ttlhash.NoField)
	e.wantHash("h", map[string]string{"plain2": "plain2"}, "plain", "ttl")
	evs := e.drain("g", "c", true)
	if diff := gocmp.Diff([]string{"h/plain=plain", "h/ttl=ttl"}, eventKeys(evs)); diff != "" {
		t.Errorf("events of fields expired by Expire (-want +got):\n%s", diff)
	}
	// An Expire's deadline comes due like any other.
	e.clock.Advance(3 * time.Minute)
	e.sweep()
	evs = e.drain("g", "c", true)
	if diff := gocmp.Diff([]string{"h/plain2=plain2"}, eventKeys(evs)); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	e.wantHash("h", nil)
}

func testHXPersist(t *testing.T, e *hxEnv) {
	h := e.hash("h")
	_, err := h.SetTTL(e.ctx, "a", []byte("1"), time.Second)
	e.ok("SetTTL", err)
	_, err = h.Set(e.ctx, "b", []byte("1"))
	e.ok("Set", err)
	codes, err := h.Persist(e.ctx, "a", "b", "c")
	wantCodes(t, "Persist", codes, err, ttlhash.Done, ttlhash.NoTTL, ttlhash.NoField)
	e.clock.Advance(time.Minute)
	if n := e.sweep(); n != 0 {
		t.Errorf("a sweep after Persist expired %d fields", n)
	}
	e.wantHash("h", map[string]string{"a": "1", "b": "1"})
	_, err = h.SetTTL(e.ctx, "a", []byte("2"), time.Second)
	e.ok("SetTTL", err)
	e.clock.Advance(time.Second)
	codes, err = h.Persist(e.ctx, "a")
	wantCodes(t, "Persist of an expired field", codes, err, ttlhash.NoField)
}

func testHXDel(t *testing.T, e *hxEnv) {
	h := e.hash("h")
	e.ok("CreateGroup", e.h.CreateGroup(e.ctx, "g"))
	_, err := h.SetMany(e.ctx, []ttlhash.Field{{Name: "a", Value: []byte("1")}, {Name: "b", Value: []byte("2")}}, time.Second)
	e.ok("SetMany", err)
	_, err = h.Set(e.ctx, "c", []byte("3"))
	e.ok("Set", err)
	e.clock.Advance(time.Second)
	// a and b have expired, unswept: Del counts them not, and they yield their events.
	n, err := h.Del(e.ctx, "a", "c", "zz")
	e.ok("Del", err)
	if n != 1 {
		t.Errorf("Del of an expired, a live and a missing field = %d, want 1", n)
	}
	e.sweep()
	evs := e.drain("g", "c1", true)
	if diff := gocmp.Diff([]string{"h/a=1", "h/b=2"}, eventKeys(evs)); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	e.wantHash("h", nil, "a", "b", "c")
	// A hash emptied and filled again works as new.
	_, err = h.SetTTL(e.ctx, "a", []byte("again"), time.Second)
	e.ok("SetTTL", err)
	e.clock.Advance(time.Second)
	if n := e.sweep(); n != 1 {
		t.Errorf("sweep of a refilled hash expired %d, want 1", n)
	}
}

func testHXScan(t *testing.T, e *hxEnv) {
	h := e.hash("big")
	want := map[string]string{}
	var fs []ttlhash.Field
	for i := range 300 {
		f := fmt.Sprintf("f%03d", i)
		fs = append(fs, ttlhash.Field{Name: f, Value: []byte(f)})
	}
	_, err := h.SetMany(e.ctx, fs[:150], time.Second)
	e.ok("SetMany", err)
	_, err = h.SetMany(e.ctx, fs[150:], 0)
	e.ok("SetMany", err)
	for _, f := range fs[150:] {
		want[f.Name] = f.Name
	}
	e.clock.Advance(time.Second)
	e.wantHash("big", want)
	stop := 0
	e.ok("Scan", h.Scan(e.ctx, 10, func(ttlhash.Entry) bool { stop++; return stop < 5 }))
	if stop != 5 {
		t.Errorf("Scan went on after fn returned false: %d calls", stop)
	}
}

func testHXEvents(t *testing.T, e *hxEnv) {
	e.ok("CreateGroup", e.h.CreateGroup(e.ctx, "a"))
	e.ok("CreateGroup", e.h.CreateGroup(e.ctx, "b"))
	e.ok("CreateGroup again", e.h.CreateGroup(e.ctx, "a"))
	start := e.clock.Now()
	for i := range 20 {
		h := e.hash(fmt.Sprintf("h%d", i%5))
		_, err := h.SetTTL(e.ctx, fmt.Sprintf("f%d", i), []byte(fmt.Sprintf("v%d", i)), time.Duration(i+1)*time.Second)
		e.ok("SetTTL", err)
	}
	if evs := e.drain("a", "c", false); len(evs) != 0 {
		t.Fatalf("events before any deadline: %v", evs)
	}
	e.clock.Advance(10*time.Second + 500*time.Millisecond)
	e.sweep()
	got := e.drain("a", "c1", true)
	if len(got) != 10 {
		t.Fatalf("group a got %d events, want 10", len(got))
	}
	for _, ev := range got {
		var i int
		fmt.Sscanf(ev.Field, "f%d", &i)
		if ev.Hash != fmt.Sprintf("h%d", i%5) || string(ev.Value) != fmt.Sprintf("v%d", i) {
			t.Errorf("event %+v: wrong hash or value", ev)
		}
		if want := start.Add(time.Duration(i+1) * time.Second); !ev.Deadline.Equal(want) {
			t.Errorf("event of %s: deadline %v, want %v", ev.Field, ev.Deadline, want)
		}
		if !ev.ExpiredAt.Equal(e.clock.Now()) {
			t.Errorf("event of %s: expired at %v, want %v (the sweep's time)", ev.Field, ev.ExpiredAt, e.clock.Now())
		}
		if ev.Redelivered {
			t.Errorf("event of %s: first delivery marked redelivered", ev.Field)
		}
	}
	if evs := e.drain("a", "c2", true); len(evs) != 0 {
		t.Errorf("group a: %d events handed out twice", len(evs))
	}
	// Group b has its own copy of each.
	gotB := e.drain("b", "c1", false)
	if diff := gocmp.Diff(eventKeys(got), eventKeys(gotB)); diff != "" {
		t.Errorf("groups a and b got different events (-a +b):\n%s", diff)
	}
	st, err := e.h.EventStats(e.ctx)
	e.ok("EventStats", err)
	wantSt := ttlhash.EventStats{Retained: st.Retained, Groups: []ttlhash.GroupStats{{Name: "a", Pending: 0}, {Name: "b", Pending: 10}}}
	if diff := gocmp.Diff(wantSt, st); diff != "" {
		t.Errorf("EventStats (-want +got):\n%s", diff)
	}
	if st.Retained < 10 {
		t.Errorf("Retained %d with 10 events unacknowledged by b", st.Retained)
	}
	e.clock.Advance(time.Minute)
	e.sweep()
	if n := len(e.drain("a", "c1", true)); n != 10 {
		t.Errorf("group a: %d more events, want 10", n)
	}
	var ids []string
	for _, ev := range gotB {
		ids = append(ids, ev.ID)
	}
	n, err := e.h.Ack(e.ctx, "b", ids...)
	e.ok("Ack", err)
	if n != 10 {
		t.Errorf("Ack = %d, want 10", n)
	}
	n, err = e.h.Ack(e.ctx, "b", ids...)
	e.ok("Ack again", err)
	if n != 0 {
		t.Errorf("second Ack = %d, want 0", n)
	}
	if n := len(e.drain("b", "c1", true)); n != 10 {
		t.Errorf("group b: %d more events, want 10", n)
	}
}

func testHXRedelivery(t *testing.T, e *hxEnv) {
	e.ok("CreateGroup", e.h.CreateGroup(e.ctx, "g"))
	h := e.hash("h")
	_, err := h.SetMany(e.ctx, []ttlhash.Field{{Name: "a", Value: []byte("1")}, {Name: "b", Value: []byte("2")}}, time.Second)
	e.ok("SetMany", err)
	e.clock.Advance(time.Second)
	e.sweep()
	first, err := e.h.Read(e.ctx, "g", "dies", 10)
	e.ok("Read", err)
	if len(first) != 2 {
		t.Fatalf("Read: %d events, want 2", len(first))
	}
	// Within the visibility timeout nobody else gets them.
	evs, err := e.h.Read(e.ctx, "g", "other", 10)
	e.ok("Read", err)
	if len(evs) != 0 {
		t.Fatalf("events handed to another consumer within the visibility timeout: %v", eventKeys(evs))
	}
	n, err := e.h.Ack(e.ctx, "g", first[0].ID)
	e.ok("Ack", err)
	if n != 1 {
		t.Fatalf("Ack = %d", n)
	}
	e.clock.Advance(time.Second)
	// A store may measure the visibility timeout on its own clock (Redis
	// does): ReadWait looks again every PollInterval until it has passed.
	hw, err := ttlhash.New(e.s, &ttlhash.Options{VisibilityTimeout: 50 * time.Millisecond, PollInterval: 5 * time.Millisecond})
	e.ok("ttlhash.New", err)
	evs, err = hw.ReadWait(e.ctx, "g", "other", 10, time.Now().Add(10*time.Second))
	e.ok("ReadWait", err)
	if len(evs) != 1 || evs[0].ID != first[1].ID || !evs[0].Redelivered || string(evs[0].Value) != string(first[1].Value) {
		t.Fatalf("after the visibility timeout: %+v, want the unacknowledged %+v redelivered", evs, first[1])
	}
	n, err = e.h.Ack(e.ctx, "g", evs[0].ID)
	e.ok("Ack", err)
	if n != 1 {
		t.Fatalf("Ack of the redelivered event = %d", n)
	}
	st, err := e.h.EventStats(e.ctx)
	e.ok("EventStats", err)
	if len(st.Groups) != 1 || st.Groups[0].Pending != 0 {
		t.Errorf("EventStats: %+v, want g with nothing pending", st)
	}
}

func testHXRetention(t *testing.T, e *hxEnv) {
	e.ok("CreateGroup", e.h.CreateGroup(e.ctx, "g"))
	const total = 4 * TTLHashMaxEvents
	for i := range total {
		_, err := e.hash(fmt.Sprintf("h%d", i)).SetTTL(e.ctx, "f", []byte("v"), time.Second)
		e.ok("SetTTL", err)
	}
	e.clock.Advance(time.Second)
	if n := e.sweep(); n != total {
		t.Fatalf("sweep expired %d, want %d", n, total)
	}
	st, err := e.h.EventStats(e.ctx)
	e.ok("EventStats", err)
	if st.Retained > TTLHashMaxEvents || st.Retained+st.Dropped != total {
		t.Errorf("EventStats %+v: want at most %d retained and the rest of %d dropped", st, TTLHashMaxEvents, total)
	}
	evs := e.drain("g", "c", true)
	if int64(len(evs)) != st.Retained {
		t.Errorf("read %d events, %d retained", len(evs), st.Retained)
	}
	// Events acknowledged by every group are not held: more expiries fit.
	for i := range TTLHashMaxEvents / 2 {
		_, err := e.hash(fmt.Sprintf("k%d", i)).SetTTL(e.ctx, "f", []byte("v"), time.Second)
		e.ok("SetTTL", err)
	}
	e.clock.Advance(time.Second)
	e.sweep()
	st2, err := e.h.EventStats(e.ctx)
	e.ok("EventStats", err)
	if st2.Dropped != st.Dropped {
		t.Errorf("dropped %d events while the only group had acknowledged everything", st2.Dropped-st.Dropped)
	}
	if n := len(e.drain("g", "c", true)); n != TTLHashMaxEvents/2 {
		t.Errorf("read %d new events, want %d", n, TTLHashMaxEvents/2)
	}
}

func testHXManyDeadlines(t *testing.T, e *hxEnv) {
	e.ok("CreateGroup", e.h.CreateGroup(e.ctx, "g"))
	// Deadlines over a day, from 1 ms to 24 h, over 20 hashes; some
	// changed, some persisted, some deleted.
	type fld struct {
		hash, name string
		dl         time.Time
	}
	start := e.clock.Now()
	var live []fld
	for i := range 400 {
		ttl := time.Duration(1+(i*i*7919)%(24*3600*1000)) * time.Millisecond
		f := fld{fmt.Sprintf("h%d", i%20), fmt.Sprintf("f%d", i), start.Add(ttl)}
		_, err := e.hash(f.hash).SetTTL(e.ctx, f.name, []byte(f.name), ttl)
		e.ok("SetTTL", err)
		switch i % 10 {
		case 1:
			codes, err := e.hash(f.hash).Expire(e.ctx, ttl/2+time.Millisecond, ttlhash.None, f.name)
			wantCodes(t, "Expire", codes, err, ttlhash.Done)
			f.dl = start.Add(ttl/2 + time.Millisecond)
		case 2:
			_, err := e.hash(f.hash).Persist(e.ctx, f.name)
			e.ok("Persist", err)
			f.dl = time.Time{}
		case 3:
			_, err := e.hash(f.hash).Del(e.ctx, f.name)
			e.ok("Del", err)
			continue
		}
		live = append(live, f)
	}
	swept, events := 0, 0
	for step := time.Duration(0); step < 25*time.Hour; {
		d := 37*time.Millisecond + step/3
		e.clock.Advance(d)
		step += d
		swept += e.sweep()
		now := e.clock.Now()
		for _, ev := range e.drain("g", "c", true) {
			events++
			if ev.ExpiredAt.Before(ev.Deadline) {
				t.Errorf("%s/%s expired at %v, before its deadline %v", ev.Hash, ev.Field, ev.ExpiredAt, ev.Deadline)
			}
		}
		due := 0
		for _, f := range live {
			if !f.dl.IsZero() && !f.dl.After(now) {
				due++
				ttls, err := e.hash(f.hash).TTL(e.ctx, f.name)
				e.ok("TTL", err)
				if ttls[0] != ttlhash.NoField {
					t.Fatalf("at +%v: %s/%s due at +%v has TTL %v", now.Sub(start), f.hash, f.name, f.dl.Sub(start), ttls[0])
				}
			}
		}
		if swept != due {
			t.Fatalf("at +%v: the sweeps expired %d fields, %d are due", now.Sub(start), swept, due)
		}
	}
	// The cap may have dropped some events; none is missing otherwise.
	st, err := e.h.EventStats(e.ctx)
	e.ok("EventStats", err)
	if int64(events)+st.Dropped != int64(swept) {
		t.Errorf("%d events read + %d dropped, %d fields expired", events, st.Dropped, swept)
	}
	persisted := map[string]int{}
	for _, f := range live {
		if f.dl.IsZero() {
			persisted[f.hash]++
		}
	}
	for i := range 20 {
		hash := fmt.Sprintf("h%d", i)
		n, err := e.hash(hash).Len(e.ctx)
		e.ok("Len", err)
		if n != persisted[hash] {
			t.Errorf("%s: %d fields left, want the %d persisted", hash, n, persisted[hash])
		}
	}
}

func testHXGroups(t *testing.T, e *hxEnv) {
	if _, err := e.s.Read(e.ctx, "nope", "c", 1); !errors.Is(err, ttlhash.ErrNoGroup) {
		t.Errorf("Read of a missing group: %v, want ErrNoGroup", err)
	}
	if err := e.h.DeleteGroup(e.ctx, "nope"); !errors.Is(err, ttlhash.ErrNoGroup) {
		t.Errorf("DeleteGroup of a missing group: %v, want ErrNoGroup", err)
	}
	e.ok("CreateGroup", e.h.CreateGroup(e.ctx, "g"))
	_, err := e.hash("h").SetTTL(e.ctx, "f", []byte("v"), time.Millisecond)
	e.ok("SetTTL", err)
	e.clock.Advance(time.Millisecond)
	e.sweep()
	// A group created later gets the events still kept.
	e.ok("CreateGroup", e.h.CreateGroup(e.ctx, "late"))
	if n := len(e.drain("late", "c", true)); n != 1 {
		t.Errorf("a late group got %d events, want 1", n)
	}
	e.ok("DeleteGroup", e.h.DeleteGroup(e.ctx, "g"))
	if _, err := e.s.Read(e.ctx, "g", "c", 1); !errors.Is(err, ttlhash.ErrNoGroup) {
		t.Errorf("Read of a deleted group: %v, want ErrNoGroup", err)
	}
	st, err := e.h.EventStats(e.ctx)
	e.ok("EventStats", err)
	if len(st.Groups) != 1 || st.Groups[0].Name != "late" {
		t.Errorf("EventStats groups %+v, want only late", st.Groups)
	}
}

// testHXNotifier: a store that is a Notifier wakes the listeners of
// TopicEvents after events are appended, with TopicEvents or the topic of
// the shard that has them, and refuses a topic it does not announce.
func testHXNotifier(t *testing.T, e *hxEnv) {
	n, ok := e.s.(ttlhash.Notifier)
	if !ok {
		t.Log("the store is not a ttlhash.Notifier: nothing to check")
		return
	}
	if _, err := n.Listen(e.ctx, "no such topic", func(string) {}); !errors.Is(err, ttlhash.ErrNoTopic) {
		t.Errorf("Listen of an unknown topic: %v, want ttlhash.ErrNoTopic", err)
	}
	woken := make(chan string, 64)
	stop, err := n.Listen(e.ctx, ttlhash.TopicEvents, func(topic string) {
		select {
		case woken <- topic:
		default:
		}
	})
	e.ok("Listen", err)
	defer stop()
	e.ok("CreateGroup", e.h.CreateGroup(e.ctx, "g"))
	_, err = e.h.Hash("h").SetTTL(e.ctx, "f", []byte("v"), time.Second)
	e.ok("SetTTL", err)
	e.clock.Advance(2 * time.Second)
	e.sweep()
	select {
	case topic := <-woken:
		if _, shard := ttlhash.ParseEventShardTopic(topic); topic != ttlhash.TopicEvents && !shard {
			t.Errorf("woken with topic %q, want %q or a shard's", topic, ttlhash.TopicEvents)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no wake-up 10 s after a field expired")
	}
}

func testHXBadInput(t *testing.T, e *hxEnv) {
	h := e.hash("h")
	_, err := h.Set(e.ctx, "keep", []byte("1"))
	e.ok("Set", err)
	long := strings.Repeat("x", ttlhash.MaxNameLen+1)
	for _, c := range []struct {
		name string
		err  error
		want error
	}{
		{"empty hash", func() error { _, err := e.hash("").Set(e.ctx, "f", nil); return err }(), ttlhash.ErrInvalidName},
		{"long hash", func() error { _, err := e.hash(long).Len(e.ctx); return err }(), ttlhash.ErrInvalidName},
		{"long field", func() error { _, err := h.Set(e.ctx, strings.Repeat("f", ttlhash.MaxFieldLen+1), nil); return err }(), ttlhash.ErrInvalidName},
		{"zero TTL", func() error { _, err := h.SetTTL(e.ctx, "keep", []byte("2"), 0); return err }(), ttlhash.ErrInvalid},
		{"negative TTL", func() error { _, err := h.SetTTL(e.ctx, "keep", []byte("2"), -time.Second); return err }(), ttlhash.ErrInvalid},
		{"sub-ms TTL", func() error { _, err := h.SetTTL(e.ctx, "keep", []byte("2"), time.Microsecond); return err }(), ttlhash.ErrInvalid},
		{"huge TTL", func() error { _, err := h.SetTTL(e.ctx, "keep", []byte("2"), ttlhash.MaxTTL+time.Hour); return err }(), ttlhash.ErrInvalid},
		{"no fields", func() error { _, err := h.SetMany(e.ctx, nil, 0); return err }(), ttlhash.ErrInvalid},
		{"no fields Del", func() error { _, err := h.Del(e.ctx); return err }(), ttlhash.ErrInvalid},
		{"bad cond", func() error { _, err := h.Expire(e.ctx, time.Second, ttlhash.Cond(9), "keep"); return err }(), ttlhash.ErrInvalid},
		{"negative Expire", func() error { _, err := h.Expire(e.ctx, -time.Second, ttlhash.None, "keep"); return err }(), ttlhash.ErrInvalid},
		{"ExpireAt before 1970", func() error { _, err := h.ExpireAt(e.ctx, time.Unix(-5, 0), ttlhash.None, "keep"); return err }(), ttlhash.ErrInvalid},
		{"scan count", h.Scan(e.ctx, 0, func(ttlhash.Entry) bool { return true }), ttlhash.ErrInvalid},
		{"empty group", e.h.CreateGroup(e.ctx, ""), ttlhash.ErrInvalidGroup},
		{"empty consumer", func() error { _, err := e.h.Read(e.ctx, "g", "", 1); return err }(), ttlhash.ErrInvalidGroup},
		{"read max", func() error { _, err := e.h.Read(e.ctx, "g", "c", 0); return err }(), ttlhash.ErrInvalid},
		{"bad event ID", func() error { _, err := e.h.Ack(e.ctx, "g", "nonsense"); return err }(), ttlhash.ErrInvalidEventID},
		{"bad options", func() error { _, err := ttlhash.New(e.s, &ttlhash.Options{Batch: -1}); return err }(), ttlhash.ErrInvalid},
		{"bad sweeper options", func() error { _, err := ttlhash.NewSweeper(e.s, &ttlhash.SweeperOptions{Interval: -1}); return err }(), ttlhash.ErrInvalid},
	} {
		if !errors.Is(c.err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, c.err, c.want)
		}
	}
	// Nothing changed.
	e.wantHash("h", map[string]string{"keep": "1"})
	ttls, err := h.TTL(e.ctx, "keep")
	e.ok("TTL", err)
	if ttls[0] != ttlhash.NoTTL {
		t.Errorf("TTL after refused calls = %v", ttls[0])
	}
}

// expireMany sets n fields, over several hashes, that expire at once, and
// sweeps them: n events for every group.
func (e *hxEnv) expireMany(n int) {
	e.t.Helper()
	for i := range n {
		_, err := e.hash(fmt.Sprintf("sh%d", i)).SetTTL(e.ctx, "f", []byte(strconv.Itoa(i)), time.Second)
		e.ok("SetTTL", err)
	}
	e.clock.Advance(2 * time.Second)
	if got := e.sweep(); got != n {
		e.t.Fatalf("sweep expired %d fields, want %d", got, n)
	}
}

// testHXShardReader: a store that keeps events in shards
// (ttlhash.ShardReader) hands each event out once over all its shards,
// reading from the given shards only, and refuses a shard it does not
// have.
func testHXShardReader(t *testing.T, e *hxEnv) {
	r, ok := e.s.(ttlhash.ShardReader)
	if !ok {
		return // one log of events
	}
	e.ok("CreateGroup", e.s.CreateGroup(e.ctx, "g"))
	e.expireMany(24)
	seen := map[string]int{}
	for sh := range e.s.Shards() {
		for {
			evs, err := r.ReadShards(e.ctx, "g", "c", []int{sh}, 5)
			e.ok("ReadShards", err)
			if len(evs) == 0 {
				break
			}
			for _, ev := range evs {
				seen[ev.Hash]++
			}
		}
	}
	if len(seen) != 24 {
		t.Errorf("ReadShards over every shard handed out events of %d hashes, want 24", len(seen))
	}
	for h, n := range seen {
		if n != 1 {
			t.Errorf("the event of %s handed out %d times", h, n)
		}
	}
	if evs, err := e.s.Read(e.ctx, "g", "c", 50); err != nil || len(evs) != 0 {
		t.Errorf("Read after every shard was read = %d events, %v; want none", len(evs), err)
	}
	if _, err := r.ReadShards(e.ctx, "g", "c", []int{e.s.Shards()}, 5); !errors.Is(err, ttlhash.ErrInvalid) {
		t.Errorf("ReadShards of shard %d of %d: %v, want ErrInvalid", e.s.Shards(), e.s.Shards(), err)
	}
}

// testHXAckReader: a store that acknowledges and reads in one call
// (ttlhash.AckReader) acknowledges the IDs it is given, as Ack does, and
// reads the next events, as Read does.
func testHXAckReader(t *testing.T, e *hxEnv) {
	r, ok := e.s.(ttlhash.AckReader)
	if !ok {
		return // Ack and Read are separate calls
	}
	e.ok("CreateGroup", e.s.CreateGroup(e.ctx, "g"))
	e.expireMany(10)
	ids := func(evs []ttlhash.Event) []string {
		out := make([]string, len(evs))
		for i, ev := range evs {
			out[i] = ev.ID
		}
		return out
	}
	var prev []string
	total := 0
	for _, want := range []int{4, 4, 2, 0} {
		evs, err := r.AckRead(e.ctx, "g", "c", prev, nil, 4)
		e.ok("AckRead", err)
		if len(evs) != want {
			t.Fatalf("AckRead after %d events = %d events, want %d", total, len(evs), want)
		}
		if n, err := e.s.Ack(e.ctx, "g", prev); err != nil || n != 0 {
			t.Errorf("Ack of events AckRead acknowledged = %d pending, %v; want 0", n, err)
		}
		total += len(evs)
		prev = ids(evs)
	}
}
