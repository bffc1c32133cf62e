package httpapi_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/hourglass-io/hourglass/queue"
)

// TestDashboardReaderInChromium: what a reader meets beyond the views:
// the version once; a job that is not there is a page saying so; the
// search opens a job by id and filters by text; a delayed job is run now
// from its page, whose errors' table says when, which attempt and why.
func TestDashboardReaderInChromium(t *testing.T) {
	ts := startServer(t, memStore(t), nil)
	ctx := context.Background()
	q := ts.q
	for i := range 5 {
		ts.c.put(t, "invoices", map[string]any{"body": fmt.Sprintf(`{"customer":"c-%d"}`, i)})
	}
	retry, err := q.Put(ctx, "mail", queue.NewJob{Body: []byte("retry me")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.ReserveJob(ctx, retry); err != nil {
		t.Fatal(err)
	}
	if err := q.ReleaseWithReason(ctx, retry, 0, 0, "dial tcp 10.0.0.7:25: connection refused"); err != nil {
		t.Fatal(err)
	}
	if _, err := q.ReserveJob(ctx, retry); err != nil {
		t.Fatal(err)
	}
	if err := q.ReleaseWithReason(ctx, retry, 0, time.Hour, "dial tcp 10.0.0.7:25: i/o timeout"); err != nil {
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
	if err := chromedp.Do(bctx, chromedp.Navigate(ts.url+"/"), chromedp.WaitVisible(chromedp.CSS(`tr[data-tube="invoices"]`))); err != nil {
		t.Fatal(err)
	}
	// The version once, from the first paint.
	if v := text("#info-version"); v == "" || v == "…" || strings.Count(v, "·") > 0 && strings.Split(v, " · ")[0] == strings.Split(v, " · ")[1] {
		t.Errorf("the header's version reads %q", v)
	}

	// A job not there.
	err = chromedp.Do(bctx, chromedp.Navigate(ts.url+"/#job=999999"), chromedp.WaitVisible(chromedp.CSS(`#missing`)))
	if err != nil {
		t.Fatalf("the page of a job not there: %v", err)
	}
	if s := text("#missing"); !strings.Contains(s, "No job #999999") || !strings.Contains(s, "deleted") || !strings.Contains(s, "Back to the tubes") {
		t.Errorf("the page of a job not there reads %q", s)
	}
	screenshots(t, bctx, "not-found")

	// Search: text filters the tubes view; an id opens the job.
	search := func(q string) {
		t.Helper()
		err := chromedp.Do(bctx, chromedp.SetValue(chromedp.CSS("#search-q"), q), chromedp.Click(chromedp.CSS(`#search button[type="submit"]`)))
		if err != nil {
			t.Fatalf("searching %q: %v", q, err)
		}
	}
	if err := chromedp.Do(bctx, chromedp.Navigate(ts.url+"/"), chromedp.WaitVisible(chromedp.CSS(`tr[data-tube="invoices"]`))); err != nil {
		t.Fatal(err)
	}
	search("retry")
	if err := chromedp.Do(bctx, chromedp.WaitNotPresent(chromedp.CSS(`tr[data-tube="invoices"]`)), chromedp.WaitVisible(chromedp.CSS(".search-note"))); err != nil {
		t.Fatalf("the search's result: %v", err)
	}
	if s := text("#panel-jobs"); !strings.Contains(s, fmt.Sprintf("#%d", retry)) || strings.Contains(s, "c-1") {
		t.Errorf("searching retry shows %q, want the delayed retry only", s)
	}
	screenshots(t, bctx, "search")
	search(fmt.Sprint(retry))
	if err := chromedp.Do(bctx, chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`#job[data-job="%d"]`, retry)))); err != nil {
		t.Fatalf("searching an id: %v", err)
	}
	// The job's errors, then run it now.
	// Each attempt's error, newest first, with its attempt.
	if s := text("#job table.errors"); !strings.Contains(s, "i/o timeout") || !strings.Contains(s, "connection refused") ||
		strings.Index(s, "i/o timeout") > strings.Index(s, "connection refused") || !strings.Contains(s, "UTC") {
		t.Errorf("the job's errors read %q", s)
	}
	attempts, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('#job table.errors td[data-label="attempt"]')].map(td => td.textContent.trim())`))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(attempts, []string{"2", "1"}) {
		t.Errorf("the errors' attempts read %q, want 2 then 1", attempts)
	}
	screenshots(t, bctx, "job-errors")
	run := chromedp.CSS(`#job button[data-action="kick"]`)
	if s := text(`#job button[data-action="kick"]`); s != "run now" {
		t.Errorf("the delayed job's button reads %q, want run now", s)
	}
	if err := chromedp.Do(bctx, chromedp.Click(run), chromedp.WaitVisible(chromedp.CSS(`#job[data-state="ready"]`))); err != nil {
		t.Fatalf("run now: %v", err)
	}
	if st, err := q.StatsJob(ctx, retry); err != nil || st.State != queue.Ready {
		t.Errorf("after run now: %v %v, want ready", st.State, err)
	}
}
