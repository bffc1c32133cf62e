package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/queue"
)

// The dashboard as a reader meets it, over HTTP: what each view says, in
// the words a reader reads (the browser tests look at the same pages).

func panel(t *testing.T, c *client, view string) string {
	t.Helper()
	return string(c.do(req{method: "GET", path: "/dashboard/panels?view=" + view}).want(t, http.StatusOK, "").body)
}

// TestDashboardTubeRowsSayWhatIs: a tube not paused reads no pause; the
// pause is an action, a menu of lengths; a paused tube says so beside its
// name with the time left, and offers resume; limits that held reserves
// back say so in words.
func TestDashboardTubeRowsSayWhatIs(t *testing.T) {
	ts := startServer(t, memStore(t), nil)
	c := ts.c
	c.put(t, "mail", map[string]any{"body": "hello"})
	c.put(t, "reports", map[string]any{"body": "weekly"})
	c.do(req{method: "POST", path: "/v1/tubes/reports/pause", json: map[string]any{"delay_ms": 600000}}).want(t, http.StatusNoContent, "")
	c.do(req{method: "PUT", path: "/v1/tubes/mail/limits", json: map[string]any{"cap": 1}}).want(t, http.StatusOK, "")
	c.reserve(t, []string{"mail"}, 0)
	c.put(t, "mail", map[string]any{"body": "held"})
	for range 3 { // held back by the cap
		c.do(req{method: "POST", path: "/v1/reserve", json: map[string]any{"tubes": []string{"mail"}, "timeout_ms": 0}}).want(t, http.StatusNoContent, "")
	}
	p := panel(t, c, "jobs")
	head := p[strings.Index(p, "<thead>"):strings.Index(p, "</thead>")]
	if strings.Contains(head, "paused") {
		t.Errorf("the tubes' head names a paused column: %s", head)
	}
	mail := row(t, p, `data-tube="mail"`)
	if strings.Contains(mail, "badge paused") || strings.Contains(mail, "minutes left") {
		t.Errorf("mail, not paused, reads as paused: %s", mail)
	}
	for _, want := range []string{`<summary>pause…</summary>`, `data-ms="300000">for 5 minutes</button>`, `>for 1 hour</button>`, `>for 1 day</button>`, `>until resumed</button>`,
		"3 reserves held back by these limits"} {
		if !strings.Contains(mail, want) {
			t.Errorf("mail's row lacks %q: %s", want, mail)
		}
	}
	if strings.Contains(mail, "<select") || strings.Contains(mail, "title=") {
		t.Errorf("mail's row still has a select or a tooltip: %s", mail)
	}
	reports := row(t, p, `data-tube="reports"`)
	if !regexp.MustCompile(`<td class="name"[^>]*>.*<span class="badge paused">paused, 9m5\ds left</span></td>`).MatchString(reports) ||
		!strings.Contains(reports, `data-action="resume"`) || strings.Contains(reports, "<summary>pause") {
		t.Errorf("reports, paused, reads: %s", reports)
	}
}

// row returns the <tr> of page holding attr.
func row(t *testing.T, page, attr string) string {
	t.Helper()
	i := strings.Index(page, "<tr "+attr)
	if i < 0 {
		t.Fatalf("no row %s in %s", attr, page)
	}
	return page[i : i+strings.Index(page[i:], "</tr>")]
}

// TestDashboardStoreViewIsATable: the store's facts and the job totals
// are tables like the other views', with a label per cell for phones.
func TestDashboardStoreViewIsATable(t *testing.T) {
	ts := startServer(t, memStore(t), nil)
	ts.c.put(t, "mail", map[string]any{"body": "hello"})
	p := panel(t, ts.c, "store")
	for _, want := range []string{`<table class="totals cards">`, `<td class="n" data-label="ready">1</td>`, `<td class="n" data-label="put in all">1</td>`} {
		if !strings.Contains(p, want) {
			t.Errorf("the store view lacks %s:\n%s", want, p)
		}
	}
	if strings.Contains(p, "<dl") {
		t.Errorf("the store view still lays out a grid of facts:\n%s", p)
	}
}

// TestDashboardNotFound: a job, a tube or a view that is not there is a
// page that says so (404, HTML), not an empty one.
func TestDashboardNotFound(t *testing.T) {
	ts := startServer(t, memStore(t), nil)
	for _, c := range []struct{ path, want string }{
		{"/dashboard/job?id=999999", "<h2>No job #999999</h2>"},
		{"/dashboard/browse?tube=nosuch", "<h2>No tube nosuch</h2>"},
		{"/dashboard/panels?view=nosuch", "<h2>No view nosuch</h2>"},
	} {
		r := ts.c.do(req{method: "GET", path: c.path}).want(t, http.StatusNotFound, "")
		if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") || !strings.Contains(string(r.body), c.want) || !strings.Contains(string(r.body), `<a href="#">Back to the tubes</a>`) {
			t.Errorf("GET %s: %s %s, want a page saying %s", c.path, ct, r.body, c.want)
		}
	}
}

// TestDashboardJobErrors: a job's page lists the errors of its attempts
// that the store keeps, with time, attempt and reason, on every back end;
// a delayed job offers "run now", which makes it ready.
func TestDashboardJobErrors(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open func(testing.TB) queue.Store) {
		ts := startServer(t, open(t), nil)
		ctx := context.Background()
		q := ts.q
		id, err := q.Put(ctx, "mail", queue.NewJob{Body: []byte("x")})
		if err != nil {
			t.Fatal(err)
		}
		page := func() string {
			return string(ts.c.do(req{method: "GET", path: fmt.Sprintf("/dashboard/job?id=%d", id)}).want(t, http.StatusOK, "").body)
		}
		if p := page(); !strings.Contains(p, `errors <span class="note">none</span>`) {
			t.Errorf("a job never failed shows errors: %s", p)
		}
		for i := range 2 {
			if _, err := q.ReserveJob(ctx, id); err != nil {
				t.Fatal(err)
			}
			if err := q.ReleaseWithReason(ctx, id, 0, time.Hour, fmt.Sprintf("attempt %d: smtp 451\nretry later", i+1)); err != nil {
				t.Fatal(err)
			}
		}
		p := page()
		rows := regexp.MustCompile(`<td class="n" data-label="attempt">(\d)</td><td class="reason" data-label="reason"><span class="err-text">attempt (\d): smtp 451\nretry later</span>`).FindAllStringSubmatch(p, -1)
		if len(rows) != 2 || rows[0][1] != "2" || rows[0][2] != "2" || rows[1][1] != "1" || rows[1][2] != "1" ||
			!strings.Contains(p, `errors <span class="note">2 kept</span>`) ||
			!strings.Contains(p, `<td class="at" data-label="time"><time datetime="`) || !strings.Contains(p, "the last 10 attempts") || !strings.Contains(p, "4096 bytes together") {
			t.Errorf("the delayed job's errors read (rows %q): %s", rows, p)
		}
		if strings.Contains(p, `data-field="last error"`) {
			t.Errorf("the last error is shown twice: %s", p)
		}
		if !strings.Contains(p, `data-action="kick" data-id="`+fmt.Sprint(id)+`" title="make it ready now (kick-job)">run now</button>`) {
			t.Errorf("the delayed job's page offers no run now: %s", p)
		}
		if !strings.Contains(panel(t, ts.c, "jobs"), `title="make it ready now (kick-job)">run now</button>`) {
			t.Error("the delayed jobs' list offers no run now")
		}
		// Run now is a kick: the job is ready at once.
		ts.c.do(req{method: "POST", path: fmt.Sprintf("/v1/jobs/%d/kick", id)}).want(t, http.StatusNoContent, "")
		if st, err := q.StatsJob(ctx, id); err != nil || st.State != queue.Ready {
			t.Fatalf("after run now: %v %v, want ready", st.State, err)
		}
		// Reserved again since: each error keeps its attempt.
		if _, err := q.ReserveJob(ctx, id); err != nil {
			t.Fatal(err)
		}
		if p := page(); strings.Contains(p, `an earlier one`) || strings.Count(p, `<td class="n" data-label="attempt">`) != 2 {
			t.Errorf("after a later reserve the errors read: %s", p)
		}
	})
}

// TestDashboardSearch: text filters the tubes by name and the jobs
// listed by id, tube or body, in the tubes view and in a tube's window.
func TestDashboardSearch(t *testing.T) {
	ts := startServer(t, memStore(t), nil)
	c := ts.c
	ctx := context.Background()
	var inv []queue.ID
	for i := range 60 {
		id, err := ts.q.Put(ctx, "invoices", queue.NewJob{Body: []byte(fmt.Sprintf(`{"customer":"c-%d"}`, i%3))})
		if err != nil {
			t.Fatal(err)
		}
		inv = append(inv, id)
	}
	mail := buryN(t, ts.q, "mail", 2)
	c.put(t, "reports", map[string]any{"body": "weekly", "delay_ms": 600000})

	p := string(c.do(req{method: "GET", path: "/dashboard/panels?view=jobs&q=Mail"}).want(t, http.StatusOK, "").body)
	if !strings.Contains(p, `data-tube="mail"`) || strings.Contains(p, `data-tube="invoices"`) || strings.Contains(p, `data-tube="reports"`) ||
		!strings.Contains(p, fmt.Sprintf(`data-job="%d"`, mail[0])) || strings.Contains(p, "weekly") || !strings.Contains(p, "<code>Mail</code>") {
		t.Errorf("the tubes view searched for Mail: %s", p)
	}
	p = string(c.do(req{method: "GET", path: "/dashboard/panels?view=jobs&q=weekly"}).want(t, http.StatusOK, "").body)
	if !strings.Contains(p, "<code>weekly</code>") || strings.Contains(p, `data-tube="mail"`) || strings.Contains(p, fmt.Sprintf(`data-job="%d"`, mail[0])) {
		t.Errorf("the tubes view searched for weekly: %s", p)
	}
	// In a tube: 20 of the 60 are c-1's; id 'mail[1]' matches by id.
	p = string(c.do(req{method: "GET", path: `/dashboard/browse?tube=invoices&q="c-1"`}).want(t, http.StatusOK, "").body)
	if got := listed(t, p); len(got) != 20 || !strings.Contains(p, "20 of the 60 listed jobs match") {
		t.Errorf("invoices searched for \"c-1\": %d listed: %s", len(got), p)
	}
	p = string(c.do(req{method: "GET", path: fmt.Sprintf("/dashboard/browse?tube=invoices&q=%%23%d", inv[7])}).want(t, http.StatusOK, "").body)
	if got := listed(t, p); len(got) != 1 || got[0] != inv[7] {
		t.Errorf("invoices searched for #%d: %v", inv[7], got)
	}
	p = string(c.do(req{method: "GET", path: "/dashboard/browse?tube=invoices&q=nothing-like-it"}).want(t, http.StatusOK, "").body)
	if !strings.Contains(p, "No ready jobs match") {
		t.Errorf("a search matching nothing: %s", p)
	}
	c.do(req{method: "GET", path: "/dashboard/browse?tube=invoices&q=" + strings.Repeat("x", 201)}).want(t, http.StatusBadRequest, "")
}
