package httpapi_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/server/httpapi"
)

// TestDashboardKeysInChromium: a job finished with a result in a tube that
// keeps its finished jobs is found by searching its unique key, on the
// tubes view and on its tube's page, and its page shows it finished, with
// its result, when it finished and when its tube drops it, and its last
// error; a key nobody holds finds nothing.
func TestDashboardKeysInChromium(t *testing.T) {
	ts := startServer(t, memStore(t), func(s *httpapi.Server) { s.StoreKind = "memory" })
	ctx := context.Background()
	if err := ts.q.SetRetention(ctx, "orders", time.Hour); err != nil {
		t.Fatal(err)
	}
	id, err := ts.q.Put(ctx, "orders", queue.NewJob{Body: []byte(`{"order":42}`), UniqueKey: "order-42"})
	if err != nil {
		t.Fatal(err)
	}
	ts.q.Put(ctx, "orders", queue.NewJob{Body: []byte(`{"order":43}`), UniqueKey: "order-43"})
	j, err := ts.q.Reserve(ctx, queue.ReserveOptions{Tubes: []string{"orders"}})
	if err != nil || j.ID != id {
		t.Fatalf("reserve: %v %v", j.ID, err)
	}
	if err := ts.q.ReleaseWith(ctx, id, queue.ReleaseOptions{Reason: "carrier timeout"}); err != nil {
		t.Fatal(err)
	}
	if err := ts.q.Finish(ctx, id, []byte(`{"shipped":true,"tracking":"1Z999"}`)); err != nil {
		t.Fatal(err)
	}
	bctx := browser(t)
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("reading %s: %v", sel, err)
		}
		return s
	}

	// The tubes view, searched by the key.
	err = chromedp.Do(bctx, chromedp.Navigate(ts.url+"/#view=jobs&q=order-42"),
		chromedp.WaitVisible(chromedp.CSS(`.key-match`)))
	if err != nil {
		t.Fatalf("searching the key on the tubes view: %v", err)
	}
	if s := text(".key-match"); !strings.Contains(s, fmt.Sprintf("job #%d in tube orders, finished, with a result of", id)) {
		t.Errorf("the tubes view's key match says %q", s)
	}
	screenshots(t, bctx, "key-search")

	// The tube's page, searched by the key; then the job's page.
	err = chromedp.Do(bctx, chromedp.Navigate(ts.url+"/#tube=orders&state=ready&q=order-42"),
		chromedp.WaitVisible(chromedp.CSS(`#browse .key-match a`)))
	if err != nil {
		t.Fatalf("searching the key on the tube's page: %v", err)
	}
	err = chromedp.Do(bctx, chromedp.Click(chromedp.CSS(`#browse .key-match a`)),
		chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`#job[data-job="%d"]`, id))))
	if err != nil {
		t.Fatalf("opening the found job: %v", err)
	}
	if s := text("#job .badge"); s != "finished" {
		t.Errorf("the job's badge says %q, want finished", s)
	}
	if s := text("#job pre.result"); !strings.Contains(s, `"tracking": "1Z999"`) {
		t.Errorf("the job's result shows %q, want the JSON indented", s)
	}
	page := text("#job")
	for _, want := range []string{"finished at", "kept until", "carrier timeout"} {
		if !strings.Contains(page, want) {
			t.Errorf("the finished job's page lacks %q:\n%s", want, page)
		}
	}
	if n, err := chromedp.Run(bctx, chromedp.Evaluate[int](`document.querySelectorAll('#job button[data-action="delete"]').length`)); err != nil || n != 0 {
		t.Errorf("a finished job's page offers %d delete buttons (%v), want none", n, err)
	}
	screenshots(t, bctx, "finished-job")

	// A key nobody holds, on the tube's page and on the tubes view. The
	// tubes view's panels stay in the page, hidden, while a tube is shown:
	// only the view shown counts.
	err = chromedp.Do(bctx, chromedp.Navigate(ts.url+"/#tube=orders&state=ready&q=order-99"),
		chromedp.WaitVisible(chromedp.CSS(`#browse .search-note`)))
	if err != nil {
		t.Fatalf("searching a key nobody holds: %v", err)
	}
	if n, err := chromedp.Run(bctx, chromedp.Evaluate[int](`document.querySelectorAll("#browse .key-match").length`)); err != nil || n != 0 {
		t.Errorf("a key nobody holds shows %d matches on the tube's page (%v)", n, err)
	}
	err = chromedp.Do(bctx, chromedp.Navigate(ts.url+"/#view=jobs&q=order-99"))
	if err == nil {
		_, err = chromedp.Run(bctx, chromedp.Poll[bool](`(document.querySelector("#panel-jobs .search-note") || {textContent: ""}).textContent.includes("order-99")`))
	}
	if err != nil {
		t.Fatalf("searching a key nobody holds on the tubes view: %v", err)
	}
	if n, err := chromedp.Run(bctx, chromedp.Evaluate[int](`[...document.querySelectorAll(".key-match")].filter(e => e.offsetParent !== null).length`)); err != nil || n != 0 {
		t.Errorf("a key nobody holds shows %d matches on the tubes view (%v)", n, err)
	}
}
