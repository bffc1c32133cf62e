package queue_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/hourglass-io/hourglass/memstore"
	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/ratelimit"
)

// A tube with a cap of 2: a third reserve finds nothing until one of the two
// reserved jobs is deleted, whichever client asks.
func ExampleQueue_SetLimits() {
	ctx := context.Background()
	store, err := memstore.New(nil)
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	q, err := queue.New(store, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer q.Close()

	// At most 100 reserves a second (10 at once), at most 2 reserved at once.
	if err := q.SetLimits(ctx, "emails", queue.Limits{Rate: ratelimit.PerSecond(100).WithBurst(10), Cap: 2}); err != nil {
		log.Fatal(err)
	}
	for i := range 3 {
		if _, err := q.Put(ctx, "emails", queue.NewJob{Body: fmt.Appendf(nil, "mail %d", i)}); err != nil {
			log.Fatal(err)
		}
	}
	only := queue.ReserveOptions{Tubes: []string{"emails"}, Timeout: -1} // do not wait
	a, _ := q.Reserve(ctx, only)
	b, _ := q.Reserve(ctx, only)
	_, err = q.Reserve(ctx, only)
	fmt.Println(string(a.Body), "and", string(b.Body), "reserved; a third:", errors.Is(err, queue.ErrTimeout))

	q.Delete(ctx, a.ID)
	c, _ := q.Reserve(ctx, queue.ReserveOptions{Tubes: []string{"emails"}, Timeout: time.Second})
	fmt.Println(string(c.Body), "reserved once", string(a.Body), "was deleted")

	st, _ := q.StatsTube(ctx, "emails")
	fmt.Println(st.Limits, "- held back:", st.LimitHolds)
	// Output:
	// mail 0 and mail 1 reserved; a third: true
	// mail 2 reserved once mail 0 was deleted
	// rate 100/1s burst 10, cap 2 - held back: 1
}
