package httpapi_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/server/httpapi"
)

// TestDashboardCancelInChromium: an operator cancels a reserved job from
// its page, and two more at once from the tube's reserved list; each is
// gone and its holder's delete refused, at desktop and phone widths.
func TestDashboardCancelInChromium(t *testing.T) {
	ts := startServer(t, memStore(t), func(s *httpapi.Server) { s.StoreKind = "memory" })
	ctx := context.Background()
	var held []queue.ID
	for i := range 3 {
		if _, err := ts.q.Put(ctx, "reports", queue.NewJob{Body: []byte(fmt.Sprintf(`{"report":%d}`, i))}); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		j, err := ts.q.Reserve(ctx, queue.ReserveOptions{Tubes: []string{"reports"}, Timeout: -1})
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, j.ID)
	}
	bctx := browser(t)
	gone := func(id queue.ID) {
		t.Helper()
		if _, err := ts.q.Peek(ctx, id); !errors.Is(err, queue.ErrNotFound) {
			t.Errorf("job %d after its cancel: %v, want not found", id, err)
		}
		if err := ts.q.Delete(ctx, id); !errors.Is(err, queue.ErrNotFound) {
			t.Errorf("the holder's delete of cancelled job %d: %v, want not found", id, err)
		}
	}

	// The job page of a reserved job: cancel, confirmed, on to the tube.
	cancel := chromedp.CSS(`#job button[data-action="cancel"]`)
	err := chromedp.Do(bctx, chromedp.Navigate(fmt.Sprintf("%s/#job=%d", ts.url, held[0])),
		chromedp.WaitVisible(chromedp.CSS(`#job[data-state="reserved"]`)), chromedp.WaitVisible(cancel))
	if err != nil {
		t.Fatalf("opening the reserved job: %v", err)
	}
	screenshots(t, bctx, "job-cancel")
	err = chromedp.Do(bctx, chromedp.Click(cancel),
		chromedp.WaitVisible(chromedp.CSS(`#job button.confirming`)), chromedp.Click(cancel),
		chromedp.WaitVisible(chromedp.CSS(`#browse[data-state="reserved"]`)))
	if err != nil {
		t.Fatalf("cancelling from the job page: %v", err)
	}
	gone(held[0])

	// The reserved list: select all, cancel them together.
	bulk := chromedp.CSS(`#browse button[data-action="cancel-selected"]`)
	err = chromedp.Do(bctx, chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`#browse tr[data-job="%d"]`, held[1]))),
		chromedp.Click(chromedp.CSS(`#browse input[data-select-all]`)),
		chromedp.WaitEnabled(bulk))
	if err != nil {
		t.Fatalf("selecting the reserved jobs: %v", err)
	}
	screenshots(t, bctx, "cancel-selected")
	err = chromedp.Do(bctx, chromedp.Click(bulk),
		chromedp.WaitVisible(chromedp.CSS(`#browse button.confirming`)), chromedp.Click(bulk))
	if err != nil {
		t.Fatalf("cancelling the selected jobs: %v", err)
	}
	for _, id := range held[1:] {
		waitGone(t, ctx, ts.q, id)
	}
	gone(held[1])
	gone(held[2])
	st, err := ts.q.StatsTube(ctx, "reports")
	if err == nil && st.Cancels != 3 {
		t.Errorf("reports counts %d cancels, want 3", st.Cancels)
	}
}

// waitGone waits, with a deadline, until job id is no longer found.
func waitGone(t *testing.T, ctx context.Context, q *queue.Queue, id queue.ID) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := q.Peek(ctx, id); errors.Is(err, queue.ErrNotFound) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %d still there 30 s after its cancel", id)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
