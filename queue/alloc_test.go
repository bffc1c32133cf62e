package queue_test

import (
	"context"
	"testing"

	"github.com/hourglass-io/hourglass/memstore"
	"github.com/hourglass-io/hourglass/queue"
	"go.opentelemetry.io/otel/trace/noop"
)

// allocsPerJob returns the allocations of one Put and of one Reserve
// followed by a Delete through a Queue with options opts over the
// embedded engine, as testing.AllocsPerRun counts them.
func allocsPerJob(t *testing.T, opts *queue.Options) (put, reserveDelete float64) {
	t.Helper()
	s, err := memstore.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	q, err := queue.New(s, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { q.Close(); s.Close() }()
	ctx := context.Background()
	body := make([]byte, 100)
	job := queue.NewJob{Body: body}
	ropts := queue.ReserveOptions{Tubes: []string{"a"}, Timeout: -1}
	const runs = 1000
	for range runs + 10 {
		if _, err := q.Put(ctx, "a", job); err != nil {
			t.Fatal(err)
		}
	}
	put = testing.AllocsPerRun(runs, func() {
		if _, err := q.Put(ctx, "b", job); err != nil {
			t.Fatal(err)
		}
	})
	reserveDelete = testing.AllocsPerRun(runs, func() {
		j, err := q.Reserve(ctx, ropts)
		if err != nil {
			t.Fatal(err)
		}
		if err := q.Delete(ctx, j.ID); err != nil {
			t.Fatal(err)
		}
	})
	return put, reserveDelete
}

// Without a tracer a put, a reserve and a delete allocate what they did
// before jobs carried trace contexts (docs/tracing.md, "Cost"): the
// figures below were counted on the commit before tracing came in, and a
// no-op provider, given or global, changes nothing.
func TestNoTracerAllocs(t *testing.T) {
	// before tracing (efcdde0): 4 and 7; a delete of one job has since
	// dropped its tables of outcomes, and a reserve its copy of a list of
	// tubes without duplicates, its context wrapper for a context that
	// never ends, and the embedded engine a map per reserve (spares)
	const wantPut, wantReserveDelete = 4, 4
	for _, c := range []struct {
		name string
		opts *queue.Options
	}{
		{"nil options", nil},
		{"no provider (the global one, not set)", &queue.Options{}},
		{"a no-op provider", &queue.Options{TracerProvider: noop.NewTracerProvider()}},
	} {
		put, rd := allocsPerJob(t, c.opts)
		t.Logf("%s: allocations per put %.0f, per reserve and delete %.0f", c.name, put, rd)
		if put != wantPut || rd != wantReserveDelete {
			t.Errorf("%s: %.0f allocations per put and %.0f per reserve and delete, want %d and %d", c.name, put, rd, wantPut, wantReserveDelete)
		}
	}
}
