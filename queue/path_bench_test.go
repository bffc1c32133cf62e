package queue_test

import (
	"context"
	"testing"

	"github.com/hourglass-io/hourglass/queue"
)

// BenchmarkJobPath is one job's put, reserve and delete through a Queue
// over the embedded engine in memory, one caller, with 20,000 jobs ready
// in the tube (the depth of `hourglass bench --jobs 20000`'s reserves):
// the store's and the Queue's own work per job, without a network.
//
//	go test -run '^$' -bench JobPath -count 6 ./queue/
func BenchmarkJobPath(b *testing.B) {
	q := memQueue(b)
	ctx := context.Background()
	job := queue.NewJob{Body: make([]byte, 100), Priority: 1024}
	for range 20000 {
		if _, err := q.Put(ctx, "t", job); err != nil {
			b.Fatal(err)
		}
	}
	ropts := queue.ReserveOptions{Tubes: []string{"t"}, Timeout: -1}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := q.Put(ctx, "t", job); err != nil {
			b.Fatal(err)
		}
		j, err := q.Reserve(ctx, ropts)
		if err != nil {
			b.Fatal(err)
		}
		if err := q.Delete(ctx, j.ID); err != nil {
			b.Fatal(err)
		}
	}
}
