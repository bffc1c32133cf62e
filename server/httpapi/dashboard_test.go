package httpapi_test

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/server/httpapi"
)

// chromium returns the path of the system's Chromium, failing the test
// with how to install it when there is none.
func chromium(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("chromium not found: install it with `apt-get install -y chromium chromium-driver` (make deps does)")
	return ""
}

// artifactDir is where the tests keep their screenshots: the directory
// $HOURGLASS_ARTIFACTS names, else go test's -artifacts directory when
// given, else testdata/artifacts (ignored by git).
func artifactDir(t *testing.T) string {
	dir := os.Getenv("HOURGLASS_ARTIFACTS")
	if f := flag.Lookup("test.artifacts"); dir == "" && f != nil && f.Value.String() == "true" {
		return t.ArtifactDir()
	}
	if dir == "" {
		dir = filepath.Join("testdata", "artifacts")
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestDashboardInChromium(t *testing.T) {
	bin := chromium(t)
	ts := startScheduleServer(t, memStore(t), nil)
	ctx := context.Background()
	c := ts.c

	// Data: ready jobs, a delayed one, a buried one, a paused tube.
	for i := range 2 {
		c.put(t, "mail", map[string]any{"body": fmt.Sprintf("mail %d", i)})
	}
	c.put(t, "mail", map[string]any{"body": "reminder", "delay_ms": 90000})
	buried := c.put(t, "mail", map[string]any{"body": "poison message"})
	for {
		r := c.reserve(t, []string{"mail"}, 0)
		if r.Job.ID == buried {
			c.do(req{method: "POST", path: fmt.Sprintf("/v1/jobs/%d/bury", buried), header: lease(r.Lease)}).want(t, http.StatusNoContent, "")
			break
		}
		c.do(req{method: "POST", path: fmt.Sprintf("/v1/jobs/%d/release", r.Job.ID), header: lease(r.Lease), json: map[string]any{"priority": 2000}}).want(t, http.StatusNoContent, "")
	}
	c.put(t, "reports", map[string]any{"body": "weekly"})
	c.do(req{method: "POST", path: "/v1/tubes/reports/pause", json: map[string]any{"delay_ms": 600000}}).want(t, http.StatusNoContent, "")
	// A schedule, triggered once.
	c.setSchedule(t, "nightly-digest", map[string]any{"spec": "30 2 * * *", "zone": "Europe/Berlin", "job": map[string]any{"tube": "digest", "body": "d"}})
	c.do(req{method: "POST", path: schedPath("nightly-digest", "trigger")}).want(t, http.StatusOK, "")

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin),
		chromedp.NoSandbox, // the test may run as root
		chromedp.DisableGPU,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1200, 900),
	)
	actx, cancel := chromedp.NewExecAllocator(ctx, opts...)
	defer cancel()
	bctx, cancel := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	defer cancel()
	bctx, cancel = context.WithTimeout(bctx, 90*time.Second)
	defer cancel()

	kick := chromedp.CSS(fmt.Sprintf(`#panel-jobs button[data-action="kick"][data-id="%d"]`, buried))
	mailReady := chromedp.CSS(`tr[data-tube="mail"] td.ready`)
	if err := chromedp.Do(bctx, chromedp.Navigate(ts.url+"/"), chromedp.WaitVisible(kick)); err != nil {
		t.Fatalf("loading the dashboard: %v", err)
	}
	text := func(sel chromedp.CSS) string {
		t.Helper()
		s, err := chromedp.Run(bctx, chromedp.Text(sel))
		if err != nil {
			t.Fatalf("reading %s: %v", sel, err)
		}
		return s
	}
	if s := text(`#panel-jobs table.tubes`); !strings.Contains(s, "mail") || !strings.Contains(s, "reports") {
		t.Errorf("the tubes table shows %q, want mail and reports", s)
	}
	if s := text(`#panel-jobs table.delayed`); !strings.Contains(s, "reminder") {
		t.Errorf("the delayed jobs show %q, want the delayed reminder", s)
	}
	// A pause is said beside the tube's name, and undone by an action;
	// no column reads "paused" in a row that is not.
	if s := text(`tr[data-tube="reports"] td.name .badge.paused`); !strings.Contains(s, "paused, 9m") {
		t.Errorf("the reports tube shows %q, want paused with about 10 minutes left", s)
	}
	if s := text(`tr[data-tube="reports"] td.act`); !strings.Contains(s, "resume") {
		t.Errorf("the reports tube's actions read %q, want resume", s)
	}
	if s := text(`#panel-jobs table.tubes thead`); strings.Contains(s, "paused") {
		t.Errorf("the tubes table's head reads %q: a pause is not a column", s)
	}
	if s := text(`tr[data-tube="mail"]`); strings.Contains(s, "paused") || strings.Contains(s, "minutes") {
		t.Errorf("the mail tube, not paused, reads %q", s)
	}
	if s := text(mailReady); s != "2" {
		t.Errorf("mail shows %q ready jobs, want 2", s)
	}

	// Kick the buried job: its row goes, the ready count rises, and the
	// store has it ready.
	err := chromedp.Do(bctx,
		chromedp.Click(kick),
		chromedp.WaitNotPresent(chromedp.CSS(fmt.Sprintf(`table.buried tr[data-job="%d"]`, buried))),
		chromedp.WaitVisible(mailReady),
	)
	if err != nil {
		t.Fatalf("kicking from the dashboard: %v", err)
	}
	if s := text(mailReady); s != "3" {
		t.Errorf("after the kick mail shows %q ready jobs, want 3", s)
	}
	st, err := ts.q.StatsJob(ctx, queue.ID(buried))
	if err != nil || st.State != queue.Ready || st.Kicks != 1 {
		t.Fatalf("job %d after the kick: %+v, %v; want ready, kicked once", buried, st, err)
	}

	// The schedule, in its view: its spec, zone and last fire; pause it,
	// then trigger it, from the page.
	row := `#panel-schedules tr[data-schedule="nightly-digest"]`
	if err := chromedp.Do(bctx, chromedp.Click(chromedp.CSS(`#nav a[data-view="schedules"]`)), chromedp.WaitVisible(chromedp.CSS(row))); err != nil {
		t.Fatalf("opening the schedules: %v", err)
	}
	if s := text(chromedp.CSS(row)); !strings.Contains(s, "30 2 * * *") || !strings.Contains(s, "Europe/Berlin") || !strings.Contains(s, "triggered") {
		t.Errorf("the schedule's row shows %q, want its spec, zone and the triggered fire", s)
	}
	err = chromedp.Do(bctx,
		chromedp.Click(chromedp.CSS(row+` button[data-action="schedule-pause"]`)),
		chromedp.WaitVisible(chromedp.CSS(row+` button[data-action="schedule-resume"]`)),
	)
	if err != nil {
		t.Fatalf("pausing the schedule from the dashboard: %v", err)
	}
	if s := text(chromedp.CSS(row + " td.next")); !strings.Contains(s, "paused") {
		t.Errorf("the paused schedule's next fire shows %q", s)
	}
	if st := c.getSchedule(t, "nightly-digest"); !st.Paused {
		t.Fatalf("after pause from the dashboard: %+v", st)
	}
	err = chromedp.Do(bctx,
		chromedp.Click(chromedp.CSS(row+` button[data-action="schedule-trigger"]`)),
		chromedp.WaitVisible(chromedp.CSS(row+` td.fires`)),
	)
	if err != nil {
		t.Fatalf("triggering the schedule from the dashboard: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for c.getSchedule(t, "nightly-digest").Fires != 2 {
		if time.Now().After(deadline) {
			t.Fatal("the trigger from the dashboard put no job within 10 s")
		}
	}

	png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100)) // 100: PNG
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	path := filepath.Join(artifactDir(t), "dashboard-after-kick.png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}

// TestDashboardSchedules: the schedules panel lists each schedule with
// its spec, zone, next fire or pause, and last fires with their lateness.
func TestDashboardSchedules(t *testing.T) {
	ts := startScheduleServer(t, memStore(t), nil)
	c := ts.c
	c.setSchedule(t, "b-hourly", map[string]any{"spec": "@hourly", "job": map[string]any{"tube": "h"}})
	c.setSchedule(t, "a-berlin", map[string]any{"spec": "30 2 * * *", "zone": "Europe/Berlin", "job": map[string]any{"tube": "b"}, "misfire": map[string]any{"policy": "catch_up", "n": 2}})
	c.do(req{method: "POST", path: schedPath("a-berlin", "trigger")}).want(t, http.StatusOK, "")
	c.do(req{method: "POST", path: schedPath("b-hourly", "pause")}).want(t, http.StatusOK, "")
	page := string(c.do(req{method: "GET", path: "/dashboard/panels?view=schedules"}).want(t, http.StatusOK, "").body)
	a, b := strings.Index(page, `data-schedule="a-berlin"`), strings.Index(page, `data-schedule="b-hourly"`)
	if a < 0 || b < a {
		t.Fatalf("the panel does not list both schedules in name order:\n%s", page)
	}
	berlin, hourly := page[a:b], page[b:]
	for _, want := range []string{"30 2 * * *", "Europe/Berlin", "catch-up(2)", "ms late, triggered", `data-action="schedule-pause"`, `data-action="schedule-trigger"`} {
		if !strings.Contains(berlin, want) {
			t.Errorf("the a-berlin row lacks %q", want)
		}
	}
	for _, want := range []string{"@hourly", "UTC", "paused", `data-action="schedule-resume"`, "none yet"} {
		if !strings.Contains(hourly, want) {
			t.Errorf("the b-hourly row lacks %q", want)
		}
	}
}

// TestDashboardListsJobs: the panels list several buried and delayed jobs
// of a tube, soonest delayed first, and say how many more there are.
func TestDashboardListsJobs(t *testing.T) {
	ts := startServer(t, memStore(t), nil)
	ctx := context.Background()
	for i := range 3 {
		id, err := ts.q.Put(ctx, "lists", queue.NewJob{Body: []byte(fmt.Sprintf("buried %d", i))})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ts.q.ReserveJob(ctx, id); err != nil {
			t.Fatal(err)
		}
		if err := ts.q.Bury(ctx, id, 0); err != nil {
			t.Fatal(err)
		}
	}
	for i := 12; i >= 1; i-- {
		if _, err := ts.q.Put(ctx, "lists", queue.NewJob{Body: []byte(fmt.Sprintf("due in %d min", i)), Delay: time.Duration(i) * time.Minute}); err != nil {
			t.Fatal(err)
		}
	}
	page := string(ts.c.do(req{method: "GET", path: "/dashboard/panels"}).want(t, http.StatusOK, "").body)
	for i := range 3 {
		if !strings.Contains(page, fmt.Sprintf("buried %d", i)) {
			t.Errorf("the panels do not list buried job %d", i)
		}
	}
	first, second := strings.Index(page, "due in 1 min"), strings.Index(page, "due in 2 min")
	if first < 0 || second < 0 || first > second {
		t.Errorf("the timeline does not list the soonest delayed jobs first (positions %d, %d)", first, second)
	}
	if strings.Contains(page, "due in 11 min") {
		t.Error("the timeline lists more than 10 delayed jobs of one tube")
	}
	if !strings.Contains(page, "and 2 more in the tube") {
		t.Error("the timeline does not say how many delayed jobs it left out")
	}
}

// TestDashboardInfo: the header's data names the build, the store and the
// uptime, and asks for the token like every dashboard call.
func TestDashboardInfo(t *testing.T) {
	ts := startServer(t, memStore(t), func(s *httpapi.Server) { s.StoreKind = "memory"; s.AuthToken = "secret" })
	var info httpapi.DashboardInfo
	ts.c.do(req{method: "GET", path: "/dashboard/info"}).want(t, http.StatusOK, "").decode(t, &info)
	if info.Store != "memory" || info.Version == "" || info.GoVersion == "" || info.UptimeMS < 0 || info.StartedMS <= 0 {
		t.Errorf("info %+v, want the store memory, a version and an uptime", info)
	}
	newClient(t, ts.url, "").do(req{method: "GET", path: "/dashboard/info"}).want(t, http.StatusUnauthorized, httpapi.CodeUnauthorized)
}
