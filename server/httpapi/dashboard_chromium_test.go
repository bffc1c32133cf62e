package httpapi_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/server/httpapi"
)

// browser starts headless Chromium for one test; the returned context
// drives it and ends with the test.
func browser(t *testing.T) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium(t)),
		chromedp.NoSandbox, // the test may run as root
		chromedp.DisableGPU,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	)
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	bctx, cancel := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	t.Cleanup(cancel)
	bctx, cancel = context.WithTimeout(bctx, 3*time.Minute)
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

	// Pause the tube from its page: a second click confirms.
	err = chromedp.Do(bctx, chromedp.Click(chromedp.CSS(`#job .crumbs a[href^="#tube"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#browse button[data-action="pause"]`)),
		chromedp.Click(chromedp.CSS(`#browse button[data-action="pause"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#browse button.confirming`)),
		chromedp.Click(chromedp.CSS(`#browse button[data-action="pause"]`)),
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
