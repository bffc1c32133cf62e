package memstore

import (
	"context"
	"errors"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/internal/wal"
	"github.com/hourglass-io/hourglass/queue"
)

// failingFS is the log's file layer with an fsync that fails on demand as
// Linux fails one: the pages not written are dropped (the file loses what
// was written since its last good fsync), EIO is reported once, and the
// next fsync succeeds.
type failingFS struct {
	mu       sync.Mutex
	failNext bool
	synced   map[string]int64
}

func (fs *failingFS) OpenFile(name string, flag int, perm os.FileMode) (wal.File, error) {
	f, err := wal.OSFS{}.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &failingFile{File: f, fs: fs, name: name}, nil
}

type failingFile struct {
	wal.File
	fs   *failingFS
	name string
}

func (f *failingFile) Sync() error {
	st, err := os.Stat(f.name)
	if err != nil {
		return err
	}
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if !st.IsDir() && f.fs.failNext {
		f.fs.failNext = false
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

// TestFsyncFailure: once an fsync of the log fails, the Store takes no
// write (ErrLogFailed, and nothing changes), serves reads from memory, and
// a reopen recovers every job acknowledged before the failure.
func TestFsyncFailure(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	fs := &failingFS{synced: map[string]int64{}}
	s := openT(t, dir, &Options{fs: fs})
	var acked []queue.ID
	for range 5 {
		acked = append(acked, put(t, s, "t", queue.NewJob{Body: []byte("acked")}))
	}

	fs.mu.Lock()
	fs.failNext = true
	fs.mu.Unlock()
	_, err := s.Put(ctx, "t", []queue.NewJob{{Body: []byte("during"), TTR: time.Minute}})
	if !errors.Is(err, ErrLogFailed) || !errors.Is(err, syscall.EIO) {
		t.Fatalf("Put during the failed fsync: %v, want ErrLogFailed wrapping EIO", err)
	}
	before, err := s.Stats(ctx)
	if err != nil {
		t.Fatalf("Stats after the failure: %v", err)
	}
	if _, err := s.Put(ctx, "t", []queue.NewJob{{Body: []byte("after"), TTR: time.Minute}}); !errors.Is(err, ErrLogFailed) {
		t.Errorf("Put after the failure: %v, want ErrLogFailed", err)
	}
	if _, err := s.Reserve(ctx, queue.ReserveRequest{Owner: "w", Tubes: []string{"t"}, Max: 1}); !errors.Is(err, ErrLogFailed) {
		t.Errorf("Reserve after the failure: %v, want ErrLogFailed", err)
	}
	if _, err := s.Delete(ctx, "", acked[:1]); !errors.Is(err, ErrLogFailed) {
		t.Errorf("Delete after the failure: %v, want ErrLogFailed", err)
	}
	// Reads are served, and the refused writes changed nothing.
	if _, err := s.StatsJob(ctx, acked[0]); err != nil {
		t.Errorf("StatsJob after the failure: %v", err)
	}
	if jobs, err := s.PeekStateN(ctx, "t", queue.Ready, 10); err != nil || len(jobs) != 6 {
		t.Errorf("PeekStateN after the failure: %d jobs, %v; want the 5 acknowledged and the one whose fsync failed", len(jobs), err)
	}
	if after, err := s.Stats(ctx); err != nil || after != before {
		t.Errorf("Stats after the refused writes: %+v (%v), want %+v", after, err, before)
	}
	if err := s.Close(); !errors.Is(err, ErrLogFailed) {
		t.Errorf("Close: %v, want ErrLogFailed", err)
	}

	s = openT(t, dir, nil)
	defer closeT(t, s)
	jobs, err := s.PeekStateN(ctx, "t", queue.Ready, 10)
	if err != nil {
		t.Fatal(err)
	}
	var got []queue.ID
	for _, j := range jobs {
		got = append(got, j.ID)
	}
	if len(got) != len(acked) {
		t.Fatalf("after the reopen: jobs %v, want the acknowledged %v", got, acked)
	}
	for i := range got {
		if got[i] != acked[i] {
			t.Fatalf("after the reopen: jobs %v, want the acknowledged %v", got, acked)
		}
	}
}
