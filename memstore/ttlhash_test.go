package memstore

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/internal/testkit/storetest"
	"github.com/hourglass-io/hourglass/ttlhash"
)

// TestTTLHashConformance runs the ttlhash.Store suite on a Store made by
// New and on one made by Open, whose log is replayed at the end of every
// subtest into a second Store that must hold the same, and once more from
// a snapshot.
func TestTTLHashConformance(t *testing.T) {
	t.Run("Memory", func(t *testing.T) {
		storetest.TTLHash(t, func(t *testing.T, clock *storetest.Clock) ttlhash.Store {
			s := must(New(&Options{Clock: clock.Now, MaxEvents: storetest.TTLHashMaxEvents}))
			t.Cleanup(func() { s.Close() })
			return s.Hashes()
		})
	})
	t.Run("Disk", func(t *testing.T) {
		storetest.TTLHash(t, func(t *testing.T, clock *storetest.Clock) ttlhash.Store {
			dir := t.TempDir()
			opts := &Options{Clock: clock.Now, Fsync: FsyncNo, MaxEvents: storetest.TTLHashMaxEvents}
			s, err := Open(dir, opts)
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			t.Cleanup(func() {
				before := hxDump(s)
				s.Close()
				r, err := Open(dir, opts)
				if err != nil {
					t.Errorf("reopen: %v", err)
					return
				}
				if after := hxDump(r); after != before {
					t.Errorf("after reopening:\n%s\nbefore:\n%s", after, before)
				}
				if err := r.compactNow(); err != nil {
					t.Errorf("snapshot: %v", err)
				}
				r.Close()
				r2, err := Open(dir, opts)
				if err != nil {
					t.Errorf("reopen after a snapshot: %v", err)
					return
				}
				defer r2.Close()
				if after := hxDump(r2); after != before {
					t.Errorf("after a snapshot and reopening:\n%s\nbefore:\n%s", after, before)
				}
			})
			return s.Hashes()
		})
	})
}

// hxDump describes the durable ttlhash state: the fields with their
// deadlines, the events kept, the dropped count and, per group, the events
// it has not acknowledged (pending ones count as not acknowledged). It
// first expires what is due, as the Store's timer would at any moment.
func hxDump(s *Store) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fields.expire(s.now(), 0)
	x := &s.events
	var lines []string
	for n, hh := range s.fields.hashes {
		for _, f := range hh.fields {
			lines = append(lines, "field "+n+"/"+f.name+"="+string(f.value)+" @"+strconv.FormatInt(f.dl, 10))
		}
	}
	sort.Strings(lines)
	for _, e := range x.events {
		lines = append(lines, "event "+strconv.FormatUint(e.seq, 10)+" "+e.hash+"/"+e.field+"="+string(e.value)+
			" "+time.UnixMilli(e.dl).UTC().Format(time.RFC3339Nano))
	}
	lines = append(lines, "dropped "+strconv.FormatInt(x.dropped, 10))
	var gs []string
	for _, g := range x.groups {
		var un []string
		for _, e := range x.events {
			if (e.seq >= g.next && !g.acked[e.seq]) || g.pending[e.seq] != nil {
				un = append(un, strconv.FormatUint(e.seq, 10))
			}
		}
		gs = append(gs, "group "+g.name+": "+strings.Join(un, ","))
	}
	sort.Strings(gs)
	return strings.Join(append(lines, gs...), "\n")
}

// TestTTLHashEventsSurviveRestart: events expired before a Close are
// handed out after Open, those acknowledged never again, those handed out
// and not acknowledged again.
func TestTTLHashEventsSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	clock := storetest.NewClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	opts := &Options{Clock: clock.Now}
	ctx := t.Context()
	open := func() (*Store, *ttlhash.Hashes) {
		t.Helper()
		s, err := Open(dir, opts)
		if err != nil {
			t.Fatal(err)
		}
		h, err := ttlhash.New(s.Hashes(), nil)
		if err != nil {
			t.Fatal(err)
		}
		return s, h
	}
	s, h := open()
	if err := h.CreateGroup(ctx, "g"); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if _, err := h.Hash("h").SetTTL(ctx, fmt.Sprint(i), []byte{byte(i)}, time.Second); err != nil {
			t.Fatal(err)
		}
	}
	clock.Advance(time.Second)
	if _, err := s.Hashes().Sweep(ctx, 0, 100); err != nil {
		t.Fatal(err)
	}
	evs, err := h.Read(ctx, "g", "c", 5)
	if err != nil || len(evs) != 5 {
		t.Fatalf("Read: %d events, %v", len(evs), err)
	}
	if _, err := h.Ack(ctx, "g", evs[0].ID, evs[1].ID, evs[2].ID); err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := range 10 {
		f := fmt.Sprint(i)
		if f != evs[0].Field && f != evs[1].Field && f != evs[2].Field {
			want = append(want, f)
		}
	}
	s.Close()

	s, h = open()
	evs, err = h.Read(ctx, "g", "c", 100)
	if err != nil {
		t.Fatal(err)
	}
	var fields []string
	var ids []string
	for _, e := range evs {
		fields = append(fields, e.Field)
		ids = append(ids, e.ID)
	}
	sort.Strings(fields)
	if got := strings.Join(fields, ","); got != strings.Join(want, ",") {
		t.Errorf("after a restart, events of %s handed out; want those not acknowledged: %s", got, strings.Join(want, ","))
	}
	if n, err := h.Ack(ctx, "g", ids...); err != nil || n != 7 {
		t.Fatalf("Ack = %d, %v", n, err)
	}
	s.Close()

	s, h = open()
	defer s.Close()
	evs, err = h.Read(ctx, "g", "c", 100)
	if err != nil || len(evs) != 0 {
		t.Errorf("after acknowledging everything and a restart: %d events, %v", len(evs), err)
	}
	n, err := h.Hash("h").Len(ctx)
	if err != nil || n != 0 {
		t.Errorf("Len = %d, %v", n, err)
	}
}
