package storetest

import (
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/ratelimit"
)

// LimitRateWakesWaiter checks, on the store's real clock, that a Reserve
// waiting on a tube its rate holds back returns when the rate frees a job,
// with no poll to wake it (the poll interval is an hour), and never sooner
// than the rate allows. Back ends call it with a store of their own that
// runs on the real clock; the suite's cases use an injected one.
func LimitRateWakesWaiter(t *testing.T, s queue.Store) {
	t.Helper()
	ctx := t.Context()
	q, err := queue.New(s, &queue.Options{PollInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	const every = 100 * time.Millisecond
	if err := q.SetLimits(ctx, "paced", queue.Limits{Rate: ratelimit.Every(every)}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := q.Put(ctx, "paced", queue.NewJob{Body: []byte("x")}); err != nil {
			t.Fatal(err)
		}
	}
	var last time.Time
	for i := range 3 {
		if _, err := q.Reserve(ctx, queue.ReserveOptions{Tubes: []string{"paced"}, Timeout: 30 * time.Second}); err != nil {
			t.Fatalf("reserve %d: %v", i, err)
		}
		now := time.Now()
		if i > 0 && now.Sub(last) < every-5*time.Millisecond { // the store's clock and ours may differ by a little
			t.Errorf("reserve %d came %v after the one before, want at least %v", i, now.Sub(last), every)
		}
		last = now
	}
}
