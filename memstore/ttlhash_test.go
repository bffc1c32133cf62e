package memstore

import (
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/internal/storetest"
	"github.com/hourglass-io/hourglass/ttlhash"
)

// TestTTLHashConformance runs the ttlhash.Store suite on a Store made by
// New and on one made by Open, whose log is replayed at the end of every
// subtest into a second Store that must hold the same, and once more from
// a snapshot.
func TestTTLHashConformance(t *testing.T) {
	t.Run("Memory", func(t *testing.T) {
		storetest.TTLHash(t, func(t *testing.T, clock *storetest.Clock) ttlhash.Store {
			s := New(&Options{Clock: clock.Now, MaxEvents: storetest.TTLHashMaxEvents})
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
	s.hxAdvance(s.now(), 0)
	x := &s.hx
	var lines []string
	for n, hh := range x.hashes {
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
