package httpapi_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/hourglass-io/hourglass/internal/testkit/backendtest"
	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/ratelimit"
	"github.com/hourglass-io/hourglass/server/httpapi"
	"github.com/hourglass-io/hourglass/ttlhash"
)

// browser starts headless Chromium for one test; the returned context
// drives it and ends with the test.
func browser(t *testing.T, extra ...chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium(t)),
		chromedp.NoSandbox, // the test may run as root
		chromedp.DisableGPU,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	)
	opts = append(opts, extra...)
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	bctx, cancel := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	t.Cleanup(cancel)
	bctx, cancel = context.WithTimeout(bctx, time.Minute)
	t.Cleanup(cancel)
	return bctx
}

// screenshots saves the page at desktop (1280 px) and phone (390 px)
// widths as name-desktop.png and name-phone.png, and fails the test when
// the page is wider than the phone's screen.
func screenshots(t *testing.T, bctx context.Context, name string) {
	t.Helper()
	dir := artifactDir(t)
	for _, w := range []struct {
		label         string
		width, height int64
	}{{"desktop", 1280, 900}, {"phone", 390, 844}} {
		if err := chromedp.Do(bctx, chromedp.EmulateViewport(w.width, w.height)); err != nil {
			t.Fatalf("viewport %d px: %v", w.width, err)
		}
		wide, err := chromedp.Run(bctx, chromedp.Evaluate[float64](`document.documentElement.scrollWidth`))
		if err != nil {
			t.Fatal(err)
		}
		if int64(wide) > w.width {
			t.Errorf("%s at %d px: the page is %v px wide: it spills off the screen", name, w.width, wide)
		}
		broken, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](brokenWordsJS))
		if err != nil {
			t.Fatal(err)
		}
		if len(broken) > 0 {
			t.Errorf("%s at %d px: words broken across lines: %q", name, w.width, broken)
		}
		clipped, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](clippedTitlesJS))
		if err != nil {
			t.Fatal(err)
		}
		if len(clipped) > 0 {
			t.Errorf("%s at %d px: titles cut: %q", name, w.width, clipped)
		}
		png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot: %v", err)
		}
		path := filepath.Join(dir, name+"-"+w.label+".png")
		if err := os.WriteFile(path, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s", path)
	}
	if err := chromedp.Do(bctx, chromedp.EmulateViewport(1280, 900)); err != nil {
		t.Fatal(err)
	}
}

// brokenWordsJS lists the words of the page's names, labels, headings,
// figures and buttons that the layout broke across two lines (a word: a
// run of letters and digits of 2 to 24, between spaces and the marks a
// line may break at). A body, an error's text and a fact's value may
// wrap anywhere they must.
const brokenWordsJS = `(() => {
  const out = [];
  const els = document.querySelectorAll("td, th, figcaption, dt, dd, h1, h2, h3, .badge, summary, button, #nav a, .crumbs, .lheld");
  for (const el of els) {
    if (el.closest("td.body, .err-text, td.value, pre, .facts.extra") || el.offsetParent === null) continue;
    const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      if (n.parentElement.closest("td.body, .err-text, pre, code") || n.parentElement.offsetParent === null) continue;
      const re = /[\p{L}\p{N}]{2,24}/gu;
      for (let m; (m = re.exec(n.nodeValue)); ) {
        const r = document.createRange();
        r.setStart(n, m.index);
        r.setEnd(n, m.index + m[0].length);
        const tops = new Set(Array.from(r.getClientRects(), x => Math.round(x.top)));
        if (tops.size > 1) out.push(m[0] + " in " + el.tagName.toLowerCase() + "." + el.className);
      }
    }
  }
  return Array.from(new Set(out));
})()`

// clippedTitlesJS lists the chart titles and table heads cut short.
const clippedTitlesJS = `Array.from(document.querySelectorAll(".chart figcaption .title, th"))
  .filter(e => e.offsetParent !== null && (e.scrollWidth > e.clientWidth + 1 || e.scrollHeight > e.clientHeight + 1))
  .map(e => e.textContent)`

// TestDashboardBrowserInChromium: with 1,000 jobs in a tube, an operator
// pages through all of them, opens a buried job and sees why it failed,
// pauses a tube and sees it paused, at desktop and phone widths.
func TestDashboardBrowserInChromium(t *testing.T) {
	ts := startServer(t, memStore(t), func(s *httpapi.Server) { s.StoreKind = "memory" })
	ctx := context.Background()
	var jobs []queue.NewJob
	for i := range 1000 {
		jobs = append(jobs, queue.NewJob{Body: []byte(fmt.Sprintf(`{"invoice":%d,"customer":"c-%03d"}`, i, i%97)), Priority: uint32(i % 5)})
	}
	res, err := ts.q.PutMany(ctx, "invoices", jobs)
	if err != nil {
		t.Fatal(err)
	}
	var want []queue.ID
	for _, r := range res {
		want = append(want, r.ID)
	}
	slices.Sort(want)
	for range 3 {
		ts.c.put(t, "mail", map[string]any{"body": "hello", "delay_ms": 600000})
	}
	bothBuried := buryN(t, ts.q, "mail", 2)
	buried := bothBuried[1]
	bctx := browser(t)

	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("reading %s: %v", sel, err)
		}
		return s
	}
	listedIDs := func() []queue.ID {
		t.Helper()
		ids, err := chromedp.Run(bctx, chromedp.Evaluate[[]queue.ID](`Array.from(document.querySelectorAll("#browse tr[data-job]"), r => Number(r.dataset.job))`))
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}

	// The overview: header, tubes, charts.
	err = chromedp.Do(bctx, chromedp.Navigate(ts.url+"/"),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-tube="invoices"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#charts .chart svg`)))
	if err != nil {
		t.Fatalf("loading the dashboard: %v", err)
	}
	if _, err := chromedp.Run(bctx, chromedp.Poll[bool](`document.getElementById("info-store").textContent !== "…"`)); err != nil {
		t.Fatalf("waiting for the header: %v", err)
	}
	if s := text("#info-store"); s != "memory" {
		t.Errorf("the header shows the store %q, want memory", s)
	}
	if s := text(`tr[data-tube="invoices"] td.ready`); s != "1000" {
		t.Errorf("invoices shows %q ready, want 1000", s)
	}
	screenshots(t, bctx, "overview")

	// Page through all 1,000 jobs: click the tube, then "next".
	err = chromedp.Do(bctx, chromedp.Click(chromedp.CSS(`tr[data-tube="invoices"] td.name a`)),
		chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`#browse tr[data-job="%d"]`, want[0]))))
	if err != nil {
		t.Fatalf("opening the tube: %v", err)
	}
	screenshots(t, bctx, "browser")
	var got []queue.ID
	for page := 0; ; page++ {
		ids := listedIDs()
		if len(ids) == 0 || len(ids) > 50 {
			t.Fatalf("page %d lists %d jobs, want 1 to 50", page, len(ids))
		}
		got = append(got, ids...)
		if len(got) >= len(want) {
			break
		}
		err := chromedp.Do(bctx, chromedp.Click(chromedp.CSS(`#browse a.next`)),
			chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`#browse tr[data-job="%d"]`, want[len(got)]))))
		if err != nil {
			t.Fatalf("page %d: next: %v", page, err)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("paging listed %d jobs, want the 1,000 put, each once, by id", len(got))
	}
	if n, err := chromedp.Run(bctx, chromedp.Evaluate[int](`document.querySelectorAll("#browse a.next").length`)); err != nil || n != 0 {
		t.Errorf("the last page links to a next one (%d, %v)", n, err)
	}

	// Open the buried job from its tube's buried tab.
	err = chromedp.Do(bctx, chromedp.Navigate(ts.url+"/#tube=mail&state=buried"),
		chromedp.Click(chromedp.CSS(fmt.Sprintf(`#browse a[href="#job=%d"]`, buried))),
		chromedp.WaitVisible(chromedp.CSS(`#job[data-state="buried"]`)))
	if err != nil {
		t.Fatalf("opening the buried job: %v", err)
	}
	if s := text("#job .facts"); !strings.Contains(s, "buries\n1") && !strings.Contains(s, "buries 1") {
		t.Errorf("the job page shows %q, want one bury", s)
	}
	if s := text("#job pre.body"); s != "failed 1" {
		t.Errorf("the job page shows the body %q, want %q", s, "failed 1")
	}
	if s := text("#job"); !strings.Contains(s, "smtp: mailbox 1 unavailable") {
		t.Errorf("the job page does not show the failure reason; it reads %q", s)
	}
	screenshots(t, bctx, "job")

	// Pause the tube from its page: the pause menu, then its length.
	err = chromedp.Do(bctx, chromedp.Click(chromedp.CSS(`#job .crumbs a[href^="#tube"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#browse details.menu summary`)),
		chromedp.Click(chromedp.CSS(`#browse details.menu summary`)),
		chromedp.WaitVisible(chromedp.CSS(`#browse button[data-action="pause"][data-ms="300000"]`)))
	if err != nil {
		t.Fatalf("opening the pause menu: %v", err)
	}
	screenshots(t, bctx, "pause-menu")
	err = chromedp.Do(bctx, chromedp.Click(chromedp.CSS(`#browse button[data-action="pause"][data-ms="300000"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#browse .badge.paused`)))
	if err != nil {
		t.Fatalf("pausing the tube: %v", err)
	}
	if s := text("#browse .badge.paused"); !strings.Contains(s, "paused") {
		t.Errorf("the tube shows %q, want paused", s)
	}
	st, err := ts.q.StatsTube(ctx, "mail")
	if err != nil || st.Pause < 4*time.Minute {
		t.Errorf("mail after the pause: %+v, %v; want paused for 5 minutes", st, err)
	}

	// Delete the other buried job from its page: on to the tube's list.
	other := bothBuried[0]
	del := chromedp.CSS(`#job button[data-action="delete"]`)
	err = chromedp.Do(bctx, chromedp.Navigate(fmt.Sprintf("%s/#job=%d", ts.url, other)),
		chromedp.WaitVisible(del), chromedp.Click(del),
		chromedp.WaitVisible(chromedp.CSS(`#job button.confirming`)), chromedp.Click(del),
		chromedp.WaitVisible(chromedp.CSS(`#browse[data-state="buried"]`)))
	if err != nil {
		t.Fatalf("deleting from the job page: %v", err)
	}
	if _, err := ts.q.Peek(ctx, other); !errors.Is(err, queue.ErrNotFound) {
		t.Errorf("job %d after its delete: %v, want not found", other, err)
	}
}

// TestDashboardViewsInChromium: every view, with data in every primitive,
// fits a desktop and a phone; buried and delayed rows say why they
// failed; reserved jobs say who holds them and for how long; chosen jobs
// are kicked and deleted together after a confirmation; a refresh changes
// values in place without moving them; times are in the zone the reader
// chose, remembered across loads.
func TestDashboardViewsInChromium(t *testing.T) {
	store := memStore(t)
	st := storesOf(t, store)
	hashes, err := ttlhash.New(st.hashes, nil)
	if err != nil {
		t.Fatal(err)
	}
	name, sms, err := httpapi.ParseNamedLimit("sms=3/1m")
	if err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, store, func(s *httpapi.Server) {
		s.StoreKind = "memory"
		s.Hashes = hashes
		s.Limiter = backendtest.Limiter(t, st.limits, nil)
		s.NamedLimits = map[string][]ratelimit.Limit{name: sms}
		s.Locks = lockClient(t, st.locks)
		s.Schedules = scheduleClient(t, st.schedules)
		s.StoreFacts = func(context.Context) ([]httpapi.StoreFact, error) {
			return []httpapi.StoreFact{{Name: "engine", Value: "embedded, in memory"}, {Name: "log size", Value: "none: nothing is written"}}, nil
		}
	})
	ctx := context.Background()
	c := ts.c

	// Jobs: ready ones (JSON), buried ones with their errors, a retry
	// delayed with its error, reservations by an HTTP lease and by a
	// named worker, a tube with a long name.
	var ready []queue.ID
	for i := range 12 {
		ready = append(ready, queue.ID(c.put(t, "invoices", map[string]any{"body": fmt.Sprintf(`{"invoice":%d,"customer":"c-%03d","lines":[{"sku":"A-1","qty":2}]}`, i, i)})))
	}
	buried := buryN(t, ts.q, "mail", 3)
	retry := c.put(t, "mail", map[string]any{"body": "retry me", "priority": 5})
	if _, err := ts.q.ReserveJob(ctx, queue.ID(retry)); err != nil {
		t.Fatal(err)
	}
	if err := ts.q.ReleaseWithReason(ctx, queue.ID(retry), 5, 10*time.Minute, "dial tcp 10.0.0.7:25: i/o timeout"); err != nil {
		t.Fatal(err)
	}
	c.put(t, "billing", map[string]any{"body": "charge 1", "ttr_ms": 600000})
	c.put(t, "billing", map[string]any{"body": "charge 2", "ttr_ms": 600000})
	held := c.reserve(t, []string{"billing"}, 0)
	worker := ts.q.WithOwner("billing-worker-7")
	byWorker, err := worker.Reserve(ctx, queue.ReserveOptions{Tubes: []string{"billing"}, Timeout: -1})
	if err != nil {
		t.Fatal(err)
	}
	// Limits on billing, at its cap, with a group template and a group.
	c.do(req{method: "PUT", path: "/v1/tubes/billing/limits", json: map[string]any{"cap": 2, "rate": map[string]any{"events": 100, "per": "1s", "burst": 10}, "group": map[string]any{"cap": 1, "rate": map[string]any{"events": 5, "per": "1m"}}}}).want(t, http.StatusOK, "")
	c.put(t, "billing", map[string]any{"body": "charge 3", "group": "tenant-acme-corporation-europe-west-2"})
	c.do(req{method: "POST", path: "/v1/reserve", json: map[string]any{"tubes": []string{"billing"}, "timeout_ms": 0}}).want(t, http.StatusNoContent, "")
	long := "tenant-acme-corporation-europe-west-2-invoices-and-credit-notes"
	c.put(t, long, map[string]any{"body": strings.Repeat("a-very-long-word-without-spaces-", 8)})
	// The other primitives.
	c.allow(t, map[string]any{"key": "user-42", "name": "sms"})
	c.allow(t, map[string]any{"key": "tenant-acme-corporation-europe-west-2:api", "limits": []any{map[string]any{"events": 100, "per": 1000}, map[string]any{"events": 5000, "per": 3600000}}})
	c.hset(t, "sessions", map[string]any{"fields": []any{text("alice"), text("bob")}, "ttl_ms": 3600000})
	c.obtain(t, "nightly-report-generation", map[string]any{"ttl_ms": 60000})
	c.setSchedule(t, "nightly-digest-for-every-tenant", map[string]any{"spec": "30 2 * * 1-5", "zone": "Europe/Berlin", "job": map[string]any{"tube": "digest", "body": "d"}})
	c.do(req{method: "POST", path: schedPath("nightly-digest-for-every-tenant", "trigger")}).want(t, http.StatusOK, "")

	bctx := browser(t, chromedp.Env("TZ=America/New_York"))
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("reading %s: %v", sel, err)
		}
		return s
	}
	eval := func(js string) bool {
		t.Helper()
		ok, err := chromedp.Run(bctx, chromedp.Evaluate[bool](js))
		if err != nil {
			t.Fatalf("%s: %v", js, err)
		}
		return ok
	}

	// Every view, at both widths (screenshots fails the test when a page
	// is wider than the screen).
	if err := chromedp.Do(bctx, chromedp.Navigate(ts.url+"/"), chromedp.WaitVisible(chromedp.CSS(`tr[data-tube="invoices"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#charts figure[data-chart="processed"] svg`))); err != nil {
		t.Fatalf("loading the dashboard: %v", err)
	}
	for _, v := range []string{"jobs", "limits", "hashes", "locks", "schedules", "store"} {
		err := chromedp.Do(bctx, chromedp.Click(chromedp.CSS(`#nav a[data-view="`+v+`"]`)),
			chromedp.WaitVisible(chromedp.CSS(`#panel-`+v)),
			chromedp.WaitVisible(chromedp.CSS(`#nav a.active[data-view="`+v+`"]`)))
		if err != nil {
			t.Fatalf("opening the %s view: %v", v, err)
		}
		screenshots(t, bctx, "view-"+v)
		switch v {
		case "store":
			if s := text(`#panel-store`); !strings.Contains(s, "embedded, in memory") || !strings.Contains(s, "kept in the store") {
				t.Errorf("the store view reads %q, want the store's facts and where the history is kept", s)
			}
		case "limits":
			if s := text(`#panel-limits tr[data-limit="sms"] td.remaining`); !strings.Contains(s, "2 for user-42") || !strings.Contains(s, "full in") {
				t.Errorf("the sms limit's remaining capacity reads %q, want 2 left, full in about 20s", s)
			}
		}
	}

	// The tubes view: who holds the reserved jobs, why jobs failed.
	if err := chromedp.Do(bctx, chromedp.Click(chromedp.CSS(`#nav a[data-view="jobs"]`)), chromedp.WaitVisible(chromedp.CSS(`#panel-jobs table.reserved`))); err != nil {
		t.Fatal(err)
	}
	if s := text(fmt.Sprintf(`#panel-jobs table.reserved tr[data-job="%d"]`, byWorker.ID)); !strings.Contains(s, "worker") || !strings.Contains(s, "billing-worker-7") || !strings.Contains(s, "9m") {
		t.Errorf("the worker's reservation reads %q, want its holder and about 10 minutes left", s)
	}
	if s := text(fmt.Sprintf(`#panel-jobs table.reserved tr[data-job="%d"]`, held.Job.ID)); !strings.Contains(s, "HTTP lease") || !strings.Contains(s, held.Lease[:8]) || strings.Contains(s, held.Lease) {
		t.Errorf("the HTTP reservation reads %q, want the lease's first characters, not the whole token", s)
	}
	for i, id := range buried {
		if s := text(fmt.Sprintf(`#panel-jobs table.buried tr[data-job="%d"] td.error`, id)); !strings.Contains(s, fmt.Sprintf("smtp: mailbox %d unavailable", i)) {
			t.Errorf("buried job %d's row reads %q, want its error", id, s)
		}
	}
	if s := text(fmt.Sprintf(`#panel-jobs table.delayed tr[data-job="%d"] td.error`, retry)); !strings.Contains(s, "i/o timeout") {
		t.Errorf("the delayed retry's row reads %q, want its error", s)
	}

	// The limits column: billing's rate, its cap reached, its group
	// template, its group and the reserve the cap held back.
	if s := text(`#panel-jobs tr[data-tube="billing"] td.limits`); !strings.Contains(s, "100/s, burst 10") || !strings.Contains(s, "2 of 2 reserved") ||
		!strings.Contains(s, "each group: 5/min, cap 1") || !strings.Contains(s, "1 group") || !strings.Contains(s, "1 reserve held back by these limits") {
		t.Errorf("billing's limits read %q, want its rate, 2 of 2 reserved, the group template, 1 group, 1 hold said in words", s)
	}
	if s := text(`#panel-jobs tr[data-tube="invoices"] td.limits`); s != "none" {
		t.Errorf("invoices' limits read %q, want none", s)
	}

	// A refresh changes nothing that stands still: the row is the same
	// node, at the same place, after two refreshes.
	eval(`(window.__row = document.querySelector('tr[data-tube="invoices"]'), window.__top = window.__row.getBoundingClientRect().top, window.__status = document.getElementById("status").textContent, true)`)
	for range 2 {
		if _, err := chromedp.Run(bctx, chromedp.Poll[bool](`document.getElementById("status").textContent !== window.__status`)); err != nil {
			t.Fatalf("waiting for a refresh: %v", err)
		}
		eval(`(window.__status = document.getElementById("status").textContent, true)`)
	}
	if !eval(`document.querySelector('tr[data-tube="invoices"]') === window.__row && window.__row.getBoundingClientRect().top === window.__top`) {
		t.Error("the invoices row was replaced or moved by a refresh")
	}

	// The tube view: the delayed retry and the reserved jobs with their
	// holders; then choose three ready jobs and delete them.
	err = chromedp.Do(bctx, chromedp.Navigate(ts.url+"/#tube=mail&state=delayed"),
		chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`#browse tr[data-job="%d"] td.error`, retry))))
	if err != nil {
		t.Fatalf("the delayed tab: %v", err)
	}
	if s := text(fmt.Sprintf(`#browse tr[data-job="%d"]`, retry)); !strings.Contains(s, "i/o timeout") {
		t.Errorf("the delayed tab's row reads %q, want the retry's error", s)
	}
	err = chromedp.Do(bctx, chromedp.Navigate(ts.url+"/#tube=billing&state=reserved"),
		chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`#browse tr[data-job="%d"] td.holder`, byWorker.ID))))
	if err != nil {
		t.Fatalf("the reserved tab: %v", err)
	}
	screenshots(t, bctx, "tube-reserved")
	err = chromedp.Do(bctx, chromedp.Navigate(ts.url+"/#tube=invoices&state=ready"),
		chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`#browse tr[data-job="%d"]`, ready[0]))))
	if err != nil {
		t.Fatalf("the invoices tube: %v", err)
	}
	for _, id := range ready[:3] {
		if err := chromedp.Do(bctx, chromedp.Click(chromedp.CSS(fmt.Sprintf(`#browse tr[data-job="%d"] input[data-select]`, id)))); err != nil {
			t.Fatal(err)
		}
	}
	if s := text(`#browse .selected-count`); s != "3" {
		t.Errorf("%s selected, want 3", s)
	}
	screenshots(t, bctx, "tube-selected")
	del := chromedp.CSS(`#browse button[data-action="delete-selected"]`)
	err = chromedp.Do(bctx, chromedp.Click(del), chromedp.WaitVisible(chromedp.CSS(`#browse button.confirming`)))
	if err != nil {
		t.Fatalf("asking to delete: %v", err)
	}
	for _, id := range ready[:3] { // nothing happens before the confirmation
		if _, err := ts.q.Peek(ctx, id); err != nil {
			t.Fatalf("job %d before the confirmation: %v", id, err)
		}
	}
	err = chromedp.Do(bctx, chromedp.Click(del), chromedp.WaitNotPresent(chromedp.CSS(fmt.Sprintf(`#browse tr[data-job="%d"]`, ready[2]))))
	if err != nil {
		t.Fatalf("deleting the chosen jobs: %v", err)
	}
	for _, id := range ready[:3] {
		if _, err := ts.q.Peek(ctx, id); !errors.Is(err, queue.ErrNotFound) {
			t.Errorf("job %d after the delete: %v, want not found", id, err)
		}
	}
	if _, err := ts.q.Peek(ctx, ready[3]); err != nil {
		t.Errorf("job %d, not chosen: %v", ready[3], err)
	}
	// All buried jobs of mail, chosen at once, kicked.
	kick := chromedp.CSS(`#browse button[data-action="kick-selected"]`)
	err = chromedp.Do(bctx, chromedp.Navigate(ts.url+"/#tube=mail&state=buried"),
		chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`#browse tr[data-job="%d"]`, buried[0]))),
		chromedp.Click(chromedp.CSS(`#browse input[data-select-all]`)),
		chromedp.Click(kick), chromedp.WaitVisible(chromedp.CSS(`#browse button.confirming`)), chromedp.Click(kick),
		chromedp.WaitVisible(chromedp.CSS(`#browse p.empty`)))
	if err != nil {
		t.Fatalf("kicking the chosen buried jobs: %v", err)
	}
	for _, id := range buried {
		if js, err := ts.q.StatsJob(ctx, id); err != nil || js.State != queue.Ready {
			t.Errorf("buried job %d after the kick: %v %v, want ready", id, js.State, err)
		}
	}

	// The job page: the body once, pretty; no bytes in the facts; times in
	// the zone chosen, remembered.
	err = chromedp.Do(bctx, chromedp.Navigate(fmt.Sprintf("%s/#job=%d", ts.url, buried[0])),
		chromedp.WaitVisible(chromedp.CSS(`#job [data-field="buried at"] time`)))
	if err != nil {
		t.Fatalf("the job page: %v", err)
	}
	if s := text(`#job`); strings.Contains(s, "[102 97") || strings.Contains(s, "body [") {
		t.Errorf("the job page prints the body as bytes: %q", s)
	}
	utc := text(`#job [data-field="buried at"] time`)
	if !strings.HasSuffix(utc, " UTC") {
		t.Errorf("the buried time reads %q, want UTC by default", utc)
	}
	if err := chromedp.Do(bctx, chromedp.SetValue(chromedp.CSS(`#tz`), "local"),
		chromedp.Evaluate[chromedp.Void](`document.getElementById("tz").dispatchEvent(new Event("change"))`)); err != nil {
		t.Fatal(err)
	}
	local := text(`#job [data-field="buried at"] time`)
	if local == utc || strings.Contains(local, "UTC") {
		t.Errorf("in local time (New York) the buried time reads %q (UTC %q)", local, utc)
	}
	err = chromedp.Do(bctx, chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(`#job [data-field="buried at"] time`)))
	if err != nil {
		t.Fatal(err)
	}
	if s := text(`#job [data-field="buried at"] time`); s != local || !eval(`document.getElementById("tz").value === "local"`) {
		t.Errorf("after a reload the time reads %q, want %q: the zone chosen is remembered", s, local)
	}
	screenshots(t, bctx, "job-local-time")
	err = chromedp.Do(bctx, chromedp.Navigate(fmt.Sprintf("%s/#job=%d", ts.url, ready[3])), chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`#job[data-job="%d"] pre.body`, ready[3]))))
	if err != nil {
		t.Fatal(err)
	}
	if s := text(`#job pre.body`); !strings.Contains(s, "\n  \"customer\": \"c-003\"") {
		t.Errorf("the JSON body reads %q, want it indented", s)
	}
	if s := text(`#job .facts`); strings.Contains(s, "[123 34") {
		t.Errorf("the facts print the body as bytes: %q", s)
	}
	screenshots(t, bctx, "job-json")
}
