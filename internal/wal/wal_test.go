package wal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// rec is a replayed record.
type rec struct {
	kind byte
	data string
}

// collect opens dir and returns the log and what it replayed.
func collect(t *testing.T, dir string, opts *Options) (*Log, []rec) {
	t.Helper()
	var got []rec
	l, err := Open(dir, opts, func(kind byte, p []byte) error {
		got = append(got, rec{kind, string(p)})
		return nil
	})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return l, got
}

func appendWait(t *testing.T, l *Log, kind byte, data string) {
	t.Helper()
	if err := l.Wait(l.Append(kind, []byte(data))); err != nil {
		t.Fatalf("Wait: %v", err)
	}
}

func closeLog(t *testing.T, l *Log) {
	t.Helper()
	if err := l.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

func TestAppendReplay(t *testing.T) {
	for _, sync := range []SyncPolicy{SyncAlways, SyncEverySec, SyncNever} {
		t.Run(fmt.Sprint(sync), func(t *testing.T) {
			dir := t.TempDir()
			l, got := collect(t, dir, &Options{Sync: sync})
			if len(got) != 0 {
				t.Fatalf("a fresh directory replayed %v", got)
			}
			var want []rec
			for i := range 100 {
				r := rec{byte(1 + i%7), strings.Repeat("x", i)}
				want = append(want, r)
				l.Append(r.kind, []byte(r.data[:i/2]), []byte(r.data[i/2:]))
			}
			if err := l.Sync(); err != nil {
				t.Fatal(err)
			}
			closeLog(t, l)
			l, got = collect(t, dir, &Options{Sync: sync})
			defer closeLog(t, l)
			if !slices.Equal(got, want) {
				t.Fatalf("replayed %d records, want %d, or they differ", len(got), len(want))
			}
			if r := l.Recovery(); r.Records != 100 || r.CutBytes != 0 || r.Segments != 1 {
				t.Errorf("Recovery = %+v", r)
			}
			// Appends go after the replayed records.
			appendWait(t, l, 9, "after")
		})
	}
}

// TestGroupCommit: concurrent writers each wait for their own record; all
// of them are in the log afterwards, each writer's in its order.
func TestGroupCommit(t *testing.T) {
	dir := t.TempDir()
	l, _ := collect(t, dir, nil)
	const writers, each = 8, 200
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if err := l.Wait(l.Append(byte(1+w), fmt.Appendf(nil, "%d", i))); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	closeLog(t, l)
	l, got := collect(t, dir, nil)
	defer closeLog(t, l)
	next := make([]int, writers)
	for _, r := range got {
		w := int(r.kind) - 1
		if r.data != fmt.Sprint(next[w]) {
			t.Fatalf("writer %d: record %q, want %d", w, r.data, next[w])
		}
		next[w]++
	}
	for w, n := range next {
		if n != each {
			t.Errorf("writer %d: %d records, want %d", w, n, each)
		}
	}
}

func segPath(dir string, n uint64) string  { return filepath.Join(dir, segmentName(n)) }
func snapPath(dir string, n uint64) string { return filepath.Join(dir, snapshotName(n)) }

// writeRecords makes a log of n records in dir and returns the offset of
// each record.
func writeRecords(t *testing.T, dir string, n int) []int64 {
	t.Helper()
	l, _ := collect(t, dir, nil)
	offs := []int64{headerLen}
	for i := range n {
		appendWait(t, l, 1, fmt.Sprintf("record %d", i))
		st, err := os.Stat(segPath(dir, 1))
		if err != nil {
			t.Fatal(err)
		}
		offs = append(offs, st.Size())
	}
	closeLog(t, l)
	return offs[:n]
}

func TestTornTail(t *testing.T) {
	cases := []struct {
		name   string
		damage func(t *testing.T, path string, size int64)
		keep   int // records that survive, of 10
	}{
		{"truncated in the payload", func(t *testing.T, path string, size int64) { truncate(t, path, size-3) }, 9},
		{"truncated in the header", func(t *testing.T, path string, size int64) {
			truncate(t, path, size-int64(len("record 9"))-recHeader-1+3)
		}, 9},
		{"last bytes garbled", func(t *testing.T, path string, size int64) { garble(t, path, size-2) }, 9},
		{"zeros appended", func(t *testing.T, path string, size int64) { appendBytes(t, path, make([]byte, 4096)) }, 10},
		{"garbage appended", func(t *testing.T, path string, size int64) {
			appendBytes(t, path, []byte("\x05\x00\x00\x00garbage that is no record"))
		}, 10},
		{"impossible length", func(t *testing.T, path string, size int64) {
			appendBytes(t, path, []byte{0xff, 0xff, 0xff, 0xff, 1, 2})
		}, 10},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			offs := writeRecords(t, dir, 10)
			path := segPath(dir, 1)
			st, _ := os.Stat(path)
			c.damage(t, path, st.Size())
			l, got := collect(t, dir, nil)
			if len(got) != c.keep {
				t.Fatalf("replayed %d records, want %d", len(got), c.keep)
			}
			for i, r := range got {
				if r.data != fmt.Sprintf("record %d", i) {
					t.Fatalf("record %d is %q", i, r.data)
				}
			}
			r := l.Recovery()
			if r.CutBytes == 0 {
				t.Errorf("Recovery = %+v, want a cut", r)
			}
			if c.keep < 10 && r.CutOffset != offs[c.keep] {
				t.Errorf("cut at %d, want %d (the start of the damaged record)", r.CutOffset, offs[c.keep])
			}
			// The log goes on after the cut, and a reopen is clean.
			appendWait(t, l, 2, "after the cut")
			closeLog(t, l)
			l, got = collect(t, dir, nil)
			defer closeLog(t, l)
			if len(got) != c.keep+1 || got[c.keep].data != "after the cut" {
				t.Errorf("after the cut, replayed %v", got)
			}
			if r := l.Recovery(); r.CutBytes != 0 {
				t.Errorf("second reopen cut again: %+v", r)
			}
		})
	}
}

// TestCorruptMiddle: a bad checksum with intact records after it is not a
// torn tail: Open fails, naming the file and the offset.
func TestCorruptMiddle(t *testing.T) {
	dir := t.TempDir()
	offs := writeRecords(t, dir, 10)
	path := segPath(dir, 1)
	garble(t, path, offs[4]+recHeader+3)
	_, err := Open(dir, nil, func(byte, []byte) error { return nil })
	var ce *CorruptError
	if !errors.As(err, &ce) || !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open: %v, want a CorruptError", err)
	}
	if ce.File != path || ce.Offset != offs[4] {
		t.Errorf("error names %s at %d, want %s at %d", ce.File, ce.Offset, path, offs[4])
	}
	if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), fmt.Sprint(offs[4])) {
		t.Errorf("message %q does not name the file and the offset", err)
	}
	// Nothing was cut: the damage is left for a person to look at.
	if st, _ := os.Stat(path); st.Size() <= offs[9] {
		t.Errorf("the damaged segment was truncated to %d", st.Size())
	}
}

// TestCorruptOlderSegment: damage at the end of a segment that is not the
// last is an error, not a torn tail.
func TestCorruptOlderSegment(t *testing.T) {
	dir := t.TempDir()
	l, _ := collect(t, dir, nil)
	appendWait(t, l, 1, "one")
	appendWait(t, l, 1, "two")
	w, err := l.BeginSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	w.Abort() // the cut stays: records now go to segment 2
	appendWait(t, l, 1, "three")
	closeLog(t, l)
	st, _ := os.Stat(segPath(dir, 1))
	garble(t, segPath(dir, 1), st.Size()-1)
	_, err = Open(dir, nil, func(byte, []byte) error { return nil })
	var ce *CorruptError
	if !errors.As(err, &ce) || ce.File != segPath(dir, 1) {
		t.Fatalf("Open: %v, want a CorruptError in segment 1", err)
	}
}

func TestReplayError(t *testing.T) {
	dir := t.TempDir()
	offs := writeRecords(t, dir, 3)
	_, err := Open(dir, nil, func(_ byte, p []byte) error {
		if string(p) == "record 2" {
			return errors.New("no such thing")
		}
		return nil
	})
	var ce *CorruptError
	if !errors.As(err, &ce) || ce.Offset != offs[2] || !strings.Contains(err.Error(), "no such thing") {
		t.Fatalf("Open: %v, want the replay error at offset %d", err, offs[2])
	}
}

func TestSnapshot(t *testing.T) {
	dir := t.TempDir()
	l, _ := collect(t, dir, &Options{Sync: SyncNever})
	for i := range 50 {
		l.Append(1, fmt.Appendf(nil, "old %d", i))
	}
	before := l.Size()
	w, err := l.BeginSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(strings.Repeat("b", 1000))
	w.Add(2, []byte("state"), body)
	w.Add(3, []byte("more"), nil)
	// Records appended after the cut are not in the snapshot.
	l.Append(1, []byte("new 0"))
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := l.Size(); got >= before || got != recordSize([]byte("new 0")) {
		t.Errorf("Size after the snapshot = %d (before %d), want the record after the cut only", got, before)
	}
	l.Append(1, []byte("new 1"))
	closeLog(t, l)

	names := dirNames(t, dir)
	want := []string{segmentName(2), snapshotName(2), "LOCK"}
	if !slices.Equal(names, want) {
		t.Errorf("files %v, want %v", names, want)
	}
	l, got := collect(t, dir, nil)
	defer closeLog(t, l)
	wantRecs := []rec{{2, "state" + string(body)}, {3, "more"}, {1, "new 0"}, {1, "new 1"}}
	if !slices.Equal(got, wantRecs) {
		t.Errorf("replayed %v", got)
	}
	if r := l.Recovery(); r.Snapshot != 2 || r.SnapshotRecords != 2 || r.Records != 2 {
		t.Errorf("Recovery = %+v", r)
	}
}

// TestSnapshotCrash: the states a crash can leave during a snapshot all
// recover to the right records.
func TestSnapshotCrash(t *testing.T) {
	t.Run("unfinished snapshot file", func(t *testing.T) {
		dir := t.TempDir()
		writeRecords(t, dir, 3)
		os.WriteFile(filepath.Join(dir, snapshotName(2)+".tmp"), []byte("half a snapshot"), 0o600)
		l, got := collect(t, dir, nil)
		defer closeLog(t, l)
		if len(got) != 3 {
			t.Errorf("replayed %d records, want 3", len(got))
		}
		if slices.Contains(dirNames(t, dir), snapshotName(2)+".tmp") {
			t.Error("the unfinished snapshot was not removed")
		}
	})
	t.Run("old segments not yet removed", func(t *testing.T) {
		dir := t.TempDir()
		l, _ := collect(t, dir, nil)
		appendWait(t, l, 1, "covered")
		w, _ := l.BeginSnapshot()
		w.Add(2, []byte("snap"), nil)
		appendWait(t, l, 1, "after")
		if err := w.Commit(); err != nil {
			t.Fatal(err)
		}
		closeLog(t, l)
		// Put back a stale segment 1, as if the crash came before its removal.
		os.WriteFile(segPath(dir, 1), append(slices.Clone(segmentMagic), appendRecord(nil, 1, []byte("covered"))...), 0o600)
		l, got := collect(t, dir, nil)
		defer closeLog(t, l)
		if want := []rec{{2, "snap"}, {1, "after"}}; !slices.Equal(got, want) {
			t.Errorf("replayed %v, want %v", got, want)
		}
		if slices.Contains(dirNames(t, dir), segmentName(1)) {
			t.Error("the stale segment was not removed")
		}
	})
	t.Run("snapshot without trailer", func(t *testing.T) {
		dir := t.TempDir()
		writeRecords(t, dir, 1)
		os.WriteFile(snapPath(dir, 2), append(slices.Clone(snapshotMagic), appendRecord(nil, 1, []byte("x"))...), 0o600)
		_, err := Open(dir, nil, func(byte, []byte) error { return nil })
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("Open: %v, want ErrCorrupt", err)
		}
	})
	t.Run("segment missing", func(t *testing.T) {
		dir := t.TempDir()
		l, _ := collect(t, dir, nil)
		appendWait(t, l, 1, "a")
		w, _ := l.BeginSnapshot()
		w.Abort()
		appendWait(t, l, 1, "b")
		w, _ = l.BeginSnapshot()
		w.Abort()
		appendWait(t, l, 1, "c")
		closeLog(t, l)
		os.Remove(segPath(dir, 2))
		_, err := Open(dir, nil, func(byte, []byte) error { return nil })
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), segmentName(2)) {
			t.Errorf("Open: %v, want ErrCorrupt naming segment 2", err)
		}
	})
	t.Run("new segment without header", func(t *testing.T) {
		dir := t.TempDir()
		writeRecords(t, dir, 2)
		os.WriteFile(segPath(dir, 2), []byte("hgl"), 0o600)
		l, got := collect(t, dir, nil)
		if len(got) != 2 {
			t.Errorf("replayed %d records, want 2", len(got))
		}
		appendWait(t, l, 1, "into segment 2")
		closeLog(t, l)
		l, got = collect(t, dir, nil)
		defer closeLog(t, l)
		if len(got) != 3 {
			t.Errorf("replayed %d records, want 3", len(got))
		}
	})
}

func TestLock(t *testing.T) {
	dir := t.TempDir()
	l, _ := collect(t, dir, nil)
	if _, err := Open(dir, nil, func(byte, []byte) error { return nil }); !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open: %v, want ErrLocked", err)
	}
	closeLog(t, l)
	l, _ = collect(t, dir, nil)
	closeLog(t, l)
	if err := l.Close(); !errors.Is(err, ErrClosed) {
		t.Errorf("second Close: %v, want ErrClosed", err)
	}
}

// TestEverySec: the background goroutine fsyncs what Wait only wrote.
func TestEverySec(t *testing.T) {
	dir := t.TempDir()
	l, _ := collect(t, dir, &Options{Sync: SyncEverySec, SyncInterval: 5 * time.Millisecond})
	defer closeLog(t, l)
	appendWait(t, l, 1, "x")
	deadline := time.Now().Add(10 * time.Second)
	for {
		l.mu.Lock()
		synced, written := l.synced, l.written
		l.mu.Unlock()
		if synced >= written && written > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not fsynced: synced %d, written %d", synced, written)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestSnapshotDuringWrites: writers keep appending while snapshots are cut
// and committed; every record either is covered by a snapshot or replays.
func TestSnapshotDuringWrites(t *testing.T) {
	dir := t.TempDir()
	l, _ := collect(t, dir, &Options{Sync: SyncNever})
	var mu sync.Mutex // orders Append and BeginSnapshot, as a store's lock does
	count := 0        // records appended, the state
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 500 {
				mu.Lock()
				count++
				tk := l.Append(1, []byte("+1"))
				mu.Unlock()
				if err := l.Wait(tk); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	for range 5 {
		mu.Lock()
		w, err := l.BeginSnapshot()
		if err != nil {
			mu.Unlock()
			t.Fatal(err)
		}
		w.Add(2, fmt.Appendf(nil, "%d", count), nil)
		mu.Unlock()
		if err := w.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	closeLog(t, l)
	total := 0
	l, err := Open(dir, nil, func(kind byte, p []byte) error {
		switch kind {
		case 1:
			total++
		case 2:
			fmt.Sscan(string(p), &total)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer closeLog(t, l)
	if total != 2000 {
		t.Errorf("replayed state %d, want 2000", total)
	}
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	slices.Sort(names)
	return names
}

func truncate(t *testing.T, path string, size int64) {
	t.Helper()
	if err := os.Truncate(path, size); err != nil {
		t.Fatal(err)
	}
}

func garble(t *testing.T, path string, off int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x5a
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

func appendBytes(t *testing.T, path string, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
}

// TestStickyError: once a write fails, every later Wait fails with the
// same error, and so does Close.
func TestStickyError(t *testing.T) {
	dir := t.TempDir()
	l, _ := collect(t, dir, nil)
	appendWait(t, l, 1, "fine")
	l.f.Close() // the disk goes away
	err := l.Wait(l.Append(1, []byte("lost")))
	if err == nil {
		t.Fatal("Wait after a failed write succeeded")
	}
	if err2 := l.Wait(l.Append(1, []byte("also lost"))); err2 != err {
		t.Errorf("second Wait: %v, want the first error %v", err2, err)
	}
	if err := l.Err(); err == nil {
		t.Error("Err() is nil after a failed write")
	}
	if _, err := l.BeginSnapshot(); err == nil {
		t.Error("BeginSnapshot after a failed write succeeded")
	}
	if err := l.Close(); err == nil {
		t.Error("Close after a failed write succeeded")
	}
	// The directory is free again, and what was written before is there.
	l, got := collect(t, dir, nil)
	defer closeLog(t, l)
	if len(got) != 1 || got[0].data != "fine" {
		t.Errorf("replayed %v", got)
	}
}
