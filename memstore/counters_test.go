package memstore

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hourglass-io/hourglass/internal/testkit/storetest"
	"github.com/hourglass-io/hourglass/queue"
)

// TestCountersSurviveReopen: the counter samples come back after a
// reopen, from the log and from a snapshot, and a minute whose keep ended
// while the store was closed does not.
func TestCountersSurviveReopen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	clock := storetest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	open := func() *Store {
		t.Helper()
		s, err := Open(dir, &Options{Clock: clock.Now, Fsync: FsyncNo})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	m0 := clock.Now().Unix() / 60
	a := queue.CounterSample{Minute: m0, Tube: "mail", Puts: 5, Deletes: 4, Buries: 1}
	b := queue.CounterSample{Minute: m0 + 30, Tube: "mail", Puts: 9, Deletes: 7, Buries: 1, Timeouts: 1}
	s := open()
	if err := s.RecordCounters(ctx, m0, time.Hour, []queue.CounterSample{a}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(30 * time.Minute)
	if err := s.RecordCounters(ctx, m0+30, time.Hour, []queue.CounterSample{b}); err != nil {
		t.Fatal(err)
	}
	want := []queue.CounterSample{a, b}
	check := func(step string, s *Store, want []queue.CounterSample) {
		t.Helper()
		got, err := s.CounterHistory(ctx, m0-10, m0+60)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", step, diff)
		}
	}
	s.Close()
	s = open()
	check("from the log", s, want)
	if err := s.compactNow(); err != nil {
		t.Fatal(err)
	}
	s.Close()
	clock.Advance(30 * time.Minute) // the first minute's keep ends
	s = open()
	defer s.Close()
	check("from the snapshot, an hour on", s, []queue.CounterSample{b})
}

// TestLogStats: a Store made by Open reports its log's size, and the time
// of its last snapshot once one is written, also after a reopen; one made
// by New reports no log.
func TestLogStats(t *testing.T) {
	ctx := context.Background()
	mem := must(New(nil))
	defer mem.Close()
	if ls := mem.LogStats(); ls != (LogStats{}) {
		t.Errorf("New: %+v, want no log", ls)
	}
	dir := t.TempDir()
	s, err := Open(dir, &Options{Fsync: FsyncNo})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, "t", []queue.NewJob{{Body: []byte("x"), TTR: time.Second}}); err != nil {
		t.Fatal(err)
	}
	ls := s.LogStats()
	if ls.Dir != dir || ls.Bytes == 0 || ls.LiveBytes == 0 || !ls.LastSnapshot.IsZero() {
		t.Errorf("before a snapshot: %+v, want the dir, some bytes and no snapshot", ls)
	}
	before := time.Now()
	if err := s.compactNow(); err != nil {
		t.Fatal(err)
	}
	if ls := s.LogStats(); ls.LastSnapshot.Before(before) {
		t.Errorf("after a snapshot: %+v, want its time", ls)
	}
	s.Close()
	s, err = Open(dir, &Options{Fsync: FsyncNo})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if ls := s.LogStats(); ls.LastSnapshot.IsZero() || ls.LastSnapshot.After(time.Now()) {
		t.Errorf("reopened: %+v, want the snapshot's time", ls)
	}
}
