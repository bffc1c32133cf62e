package wal

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/internal/testkit/tmpfstest"
)

// faultFS is a file layer whose next fsync of a file can be made to fail
// as Linux fails one: the pages the kernel could not write are dropped
// (the file loses what was written since its last good fsync) and the
// error is reported once; a later fsync succeeds.
type faultFS struct {
	mu       sync.Mutex
	failNext bool
	synced   map[string]int64 // size of each file at its last good fsync
	failures int
}

func newFaultFS() *faultFS { return &faultFS{synced: map[string]int64{}} }

func (fs *faultFS) failNextSync() {
	fs.mu.Lock()
	fs.failNext = true
	fs.mu.Unlock()
}

func (fs *faultFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := OSFS{}.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &faultFile{File: f, fs: fs, name: name}, nil
}

type faultFile struct {
	File
	fs   *faultFS
	name string
}

func (f *faultFile) Sync() error {
	st, err := os.Stat(f.name)
	if err != nil {
		return err
	}
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if st.IsDir() {
		return f.File.Sync()
	}
	if f.fs.failNext {
		f.fs.failNext = false
		f.fs.failures++
		if err := os.Truncate(f.name, f.fs.synced[f.name]); err != nil {
			return err
		}
		return &os.PathError{Op: "fsync", Path: f.name, Err: syscall.EIO}
	}
	if err := f.File.Sync(); err != nil {
		return err
	}
	f.fs.synced[f.name] = st.Size()
	return nil
}

// logLines is a slog handler's output, for what the log says.
type logLines struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// TestFsyncFails: after a failed fsync the log acknowledges nothing more,
// not even once an fsync would succeed again (the kernel dropped the pages
// it could not write; a retry would acknowledge records that are gone). It
// says so in its log and in every error, and a reopen recovers exactly
// what was acknowledged.
func TestFsyncFails(t *testing.T) {
	for name, policy := range map[string]SyncPolicy{"always": SyncAlways, "everysec": SyncEverySec} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			fs := newFaultFS()
			var lines logLines
			opts := &Options{Sync: policy, SyncInterval: 5 * time.Millisecond, FS: fs,
				Logger: slog.New(slog.NewTextHandler(&lines, nil))}
			l, _ := collect(t, dir, opts)
			var acked []string
			for i := range 5 {
				r := fmt.Sprintf("acked %d", i)
				appendWait(t, l, 1, r)
				acked = append(acked, r)
			}
			if err := l.Sync(); err != nil {
				t.Fatal(err)
			}

			fs.failNextSync()
			err := l.Wait(l.Append(1, []byte("while the fsync fails")))
			if policy == SyncEverySec {
				// Written to the operating system, which is all this
				// policy waits for; the next background fsync fails.
				if err != nil {
					t.Fatalf("Wait under SyncEverySec: %v", err)
				}
				deadline := time.Now().Add(10 * time.Second)
				for l.Err() == nil {
					if time.Now().After(deadline) {
						t.Fatal("the failed background fsync did not stop the log")
					}
					time.Sleep(time.Millisecond)
				}
				err = l.Err()
			}
			if !errors.Is(err, ErrFailed) || !errors.Is(err, syscall.EIO) {
				t.Fatalf("the write during the failed fsync: %v, want ErrFailed wrapping EIO", err)
			}
			// fsync works again; the log must still refuse.
			for i := range 3 {
				if err := l.Wait(l.Append(1, []byte(fmt.Sprintf("after %d", i)))); !errors.Is(err, ErrFailed) {
					t.Fatalf("a write after the failed fsync: %v, want ErrFailed", err)
				}
			}
			if err := l.Room(10); !errors.Is(err, ErrFailed) {
				t.Errorf("Room after the failure: %v, want ErrFailed", err)
			}
			if err := l.Sync(); !errors.Is(err, ErrFailed) {
				t.Errorf("Sync after the failure: %v, want ErrFailed", err)
			}
			if _, err := l.BeginSnapshot(); !errors.Is(err, ErrFailed) {
				t.Errorf("BeginSnapshot after the failure: %v, want ErrFailed", err)
			}
			if out := lines.String(); !strings.Contains(out, "level=ERROR") || !strings.Contains(out, "THE LOG HAS FAILED") {
				t.Errorf("the log's output says nothing loud of the failure:\n%s", out)
			}
			if fs.failures != 1 {
				t.Errorf("%d fsyncs failed, want 1", fs.failures)
			}
			if err := l.Close(); !errors.Is(err, ErrFailed) {
				t.Errorf("Close: %v, want ErrFailed", err)
			}

			l, got := collect(t, dir, nil)
			defer closeLog(t, l)
			var data []string
			for _, r := range got {
				data = append(data, r.data)
			}
			if strings.Join(data, "|") != strings.Join(acked, "|") {
				t.Errorf("recovered %q, want what was acknowledged, %q", data, acked)
			}
		})
	}
}

// TestFullDisk fills a small tmpfs under the log: Room refuses records
// before anything is appended, every record it admitted is written and
// acknowledged, a snapshot that finds no room fails leaving the log and
// the last snapshot as they were, and once space is freed, records are
// admitted again at the next Room, without reopening.
func TestFullDisk(t *testing.T) {
	dir := tmpfstest.Mount(t, 2<<20)
	opts := &Options{Preallocate: 64 << 10, Reserve: 4 << 10}
	l, _ := collect(t, dir, opts)
	var acked []string
	put := func(tag string, i int) error {
		r := fmt.Sprintf("%s %d %s", tag, i, strings.Repeat("x", 200))
		if err := l.Room(int64(len(r) + 16)); err != nil {
			return err
		}
		if err := l.Wait(l.Append(1, []byte(r))); err != nil {
			t.Fatalf("Wait of an admitted record: %v", err)
		}
		acked = append(acked, r)
		return nil
	}
	snapshot := func() error {
		w, err := l.BeginSnapshot()
		if err != nil {
			return err
		}
		for _, r := range acked {
			w.Add(1, []byte(r), nil)
		}
		return w.Commit()
	}
	for i := range 100 {
		if err := put("before", i); err != nil {
			t.Fatal(err)
		}
	}
	if err := snapshot(); err != nil {
		t.Fatal(err)
	}
	fill := tmpfstest.Fill(t, dir)
	refused := 0
	for i := range 1000 {
		err := put("full", i)
		if err == nil {
			continue
		}
		if !errors.Is(err, ErrNoSpace) || !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("Room on a full disk: %v, want ErrNoSpace wrapping ENOSPC", err)
		}
		refused++
	}
	if refused == 0 {
		t.Fatal("a full disk refused nothing")
	}
	if err := snapshot(); err == nil {
		t.Fatal("a snapshot on a full disk succeeded")
	}
	if l.Err() != nil {
		t.Fatalf("the log failed on a full disk: %v", l.Err())
	}
	if tmps, _ := filepath.Glob(filepath.Join(dir, "*.tmp")); len(tmps) > 0 {
		t.Errorf("a failed snapshot left %v", tmps)
	}

	fill.Free(t)
	for i := range 200 {
		if err := put("after", i); err != nil {
			t.Fatalf("Room once space is back: %v", err)
		}
	}
	if err := snapshot(); err != nil {
		t.Fatalf("a snapshot once space is back: %v", err)
	}
	for i := range 10 {
		if err := put("last", i); err != nil {
			t.Fatal(err)
		}
	}
	closeLog(t, l)
	l, got := collect(t, dir, opts)
	defer closeLog(t, l)
	if len(got) != len(acked) {
		t.Fatalf("recovered %d records, want the %d acknowledged", len(got), len(acked))
	}
	for i := range got {
		if got[i].data != acked[i] {
			t.Fatalf("record %d: %.20q, want %.20q", i, got[i].data, acked[i])
		}
	}
}
