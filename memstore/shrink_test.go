package memstore

import (
	"context"
	"testing"

	"github.com/hourglass-io/hourglass/queue"
)

// TestJobTablesShrink: the tables of live and of kept jobs by ID are
// copied into tables of their size once they hold under an eighth of the
// most they held, so a burst of jobs leaves no buckets behind; the jobs
// left are all still found.
func TestJobTablesShrink(t *testing.T) {
	ctx := context.Background()
	s, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const n = 2 * shrinkMin
	batch := make([]queue.NewJob, n)
	for i := range batch {
		batch[i] = queue.NewJob{Body: []byte("x"), TTR: queue.MinTTR}
	}
	res, err := s.Put(ctx, "burst", batch)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetRetention(ctx, "burst", queue.MaxRetention); err != nil {
		t.Fatal(err)
	}
	// Finish all but 10: the live table shrinks; the kept one grows.
	for _, r := range res[10:] {
		if err := s.Finish(ctx, "o", r.ID, []byte("r")); err != nil {
			t.Fatal(err)
		}
	}
	q := &s.queue
	s.mu.Lock()
	live, liveMax, kept, keptMax := len(q.jobs), q.jobsMax, len(q.kept), q.keptMax
	s.mu.Unlock()
	if live != 10 || liveMax >= n/8 {
		t.Errorf("after finishing all but 10 of %d jobs: the live table holds %d and counts a most of %d, want 10 and a most under %d (copied)", n, live, liveMax, n/8)
	}
	if kept != n-10 || keptMax != n-10 {
		t.Errorf("kept table: %d entries, most %d, want %d", kept, keptMax, n-10)
	}
	for _, r := range res {
		if _, err := s.Lookup(ctx, r.ID); err != nil {
			t.Fatalf("Lookup(%d) after the table shrank: %v", r.ID, err)
		}
	}
}
