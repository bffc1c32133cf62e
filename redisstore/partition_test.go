package redisstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/redisstore"
)

// A tube split into 3 partitions spreads its jobs over 3 slots and still
// behaves as one tube: every job delivered once, stats summed, kick and
// pause over all partitions.
func TestPartitions(t *testing.T) {
	ctx := context.Background()
	c := clusterClient(t)
	s := newStore(t, c, &redisstore.Options{Partitions: func(tube string) int {
		if tube == "hot" {
			return 3
		}
		return 1
	}})
	q, err := queue.New(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	const n = 300
	tags := map[queue.ID]bool{}
	for i := range n {
		id, err := q.Put(ctx, "hot", queue.NewJob{Body: fmt.Appendf(nil, "%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		tags[id%256] = true
	}
	if len(tags) != 3 {
		t.Fatalf("jobs of a 3-partition tube on %d tags, want 3", len(tags))
	}
	st, err := q.StatsTube(ctx, "hot")
	if err != nil || st.Ready != n || st.TotalJobs != n {
		t.Fatalf("StatsTube = %+v, %v; want %d ready of %d put", st, err, n, n)
	}
	if err := q.PauseTube(ctx, "hot", time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Reserve(ctx, queue.ReserveOptions{Tubes: []string{"hot"}, Timeout: -1}); err != queue.ErrTimeout {
		t.Fatalf("Reserve from a paused partitioned tube: %v, want ErrTimeout", err)
	}
	if err := q.PauseTube(ctx, "hot", 0); err != nil {
		t.Fatal(err)
	}
	seen := map[queue.ID]bool{}
	var last []queue.ID
	for len(seen) < n {
		jobs, err := q.ReserveN(ctx, 7, queue.ReserveOptions{Tubes: []string{"hot"}, Timeout: -1})
		if err != nil {
			t.Fatalf("after %d jobs: %v", len(seen), err)
		}
		for _, j := range jobs {
			if seen[j.ID] {
				t.Fatalf("job %d delivered twice", j.ID)
			}
			seen[j.ID] = true
		}
		if len(last) > 0 {
			// Bury the previous batch, to kick it back below.
			for _, id := range last {
				if err := q.Bury(ctx, id, 0); err != nil {
					t.Fatal(err)
				}
			}
		}
		last = last[:0]
		for _, j := range jobs {
			last = append(last, j.ID)
		}
	}
	if _, err := q.DeleteMany(ctx, last); err != nil {
		t.Fatal(err)
	}
	st, err = q.StatsTube(ctx, "hot")
	if err != nil || st.Buried != n-int64(len(last)) || st.Ready+st.Reserved != 0 {
		t.Fatalf("after reserving everything: %+v, %v", st, err)
	}
	kicked, err := q.Kick(ctx, "hot", n)
	if err != nil || kicked != n-len(last) {
		t.Fatalf("Kick = %d, %v; want %d", kicked, err, n-len(last))
	}
	if err := s.CheckInvariants(ctx); err != nil {
		t.Fatal(err)
	}
}
