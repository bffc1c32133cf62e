package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/server/httpapi"
)

var jobRow = regexp.MustCompile(`<tr data-job="(\d+)"`)

// listed returns the ids of the jobs a browser page lists.
func listed(t *testing.T, page string) []queue.ID {
	t.Helper()
	var ids []queue.ID
	for _, m := range jobRow.FindAllStringSubmatch(page, -1) {
		n, _ := strconv.ParseUint(m[1], 10, 64)
		ids = append(ids, queue.ID(n))
	}
	return ids
}

// buryN puts n jobs in tube and buries them.
func buryN(t *testing.T, q *queue.Queue, tube string, n int) []queue.ID {
	t.Helper()
	ctx := context.Background()
	var ids []queue.ID
	for i := range n {
		id, err := q.Put(ctx, tube, queue.NewJob{Body: []byte(fmt.Sprintf("failed %d", i))})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := q.ReserveJob(ctx, id); err != nil {
			t.Fatal(err)
		}
		if err := q.BuryWithReason(ctx, id, 0, fmt.Sprintf("smtp: mailbox %d unavailable", i)); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

// TestDashboardBrowse: the browser pages through a tube's ready jobs by
// job id, 50 a page, and a page stays the same when jobs are put between
// two loads.
func TestDashboardBrowse(t *testing.T) {
	ts := startServer(t, memStore(t), nil)
	ctx := context.Background()
	var want []queue.ID
	for i := range 120 {
		id, err := ts.q.Put(ctx, "b", queue.NewJob{Body: []byte(fmt.Sprintf("job %d", i)), Priority: uint32(i % 3)})
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, id)
	}
	browse := func(query string) string {
		t.Helper()
		return string(ts.c.do(req{method: "GET", path: "/dashboard/browse?" + query}).want(t, http.StatusOK, "").body)
	}
	var got []queue.ID
	query := "tube=b&state=ready"
	var pages []string
	for range 10 {
		page := browse(query)
		pages = append(pages, page)
		ids := listed(t, page)
		if len(ids) > 50 {
			t.Fatalf("a page lists %d jobs, want at most 50", len(ids))
		}
		got = append(got, ids...)
		// Jobs put meanwhile have larger ids: they come on later pages.
		if _, err := ts.q.Put(ctx, "b", queue.NewJob{Body: []byte("late")}); err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(`after=(\d+)" class="next"`).FindStringSubmatch(page)
		if m == nil {
			break
		}
		query = "tube=b&state=ready&after=" + m[1]
	}
	if len(got) < 120 || !slices.Equal(got[:120], want) || !slices.IsSorted(got) {
		t.Fatalf("paging listed %d jobs %v…, want the 120 put, by id, then those put meanwhile", len(got), got[:min(len(got), 5)])
	}
	// Previous from the second page is the first page.
	m := regexp.MustCompile(`before=(\d+)" class="prev"`).FindStringSubmatch(pages[1])
	if m == nil {
		t.Fatal("the second page has no link to the previous one")
	}
	if ids := listed(t, browse("tube=b&state=ready&before="+m[1])); !slices.Equal(ids, want[:50]) {
		t.Errorf("previous page lists %v…, want the first 50", ids[:min(len(ids), 3)])
	}
	if !strings.Contains(pages[0], "jobs 1–50 of 120") {
		t.Error("the first page does not say which jobs of how many it lists")
	}

	// Reserved jobs are listed too.
	if _, err := ts.q.ReserveJob(ctx, want[0]); err != nil {
		t.Fatal(err)
	}
	if page := browse("tube=b&state=reserved"); !strings.Contains(page, fmt.Sprintf(`data-job="%d"`, want[0])) || !strings.Contains(page, "jobs 1–1 of 1") {
		t.Errorf("the reserved tab does not list the reserved job %d: %s", want[0], page)
	}

	for _, c := range []struct {
		query  string
		status int
		code   string
	}{
		{"tube=b&state=sleeping", 400, httpapi.CodeBadRequest},
		{"tube=b&after=x", 400, httpapi.CodeBadRequest},
		{"tube=b&after=1&before=9", 400, httpapi.CodeBadRequest},
		{"tube=-bad", 400, httpapi.CodeBadTube},
		{"tube=", 400, httpapi.CodeBadTube},
	} {
		ts.c.do(req{method: "GET", path: "/dashboard/browse?" + c.query}).want(t, c.status, c.code)
	}
	// A tube not there: a page that says so.
	if p := string(ts.c.do(req{method: "GET", path: "/dashboard/browse?tube=nosuch"}).want(t, 404, "").body); !strings.Contains(p, "<h2>No tube nosuch</h2>") {
		t.Errorf("the page of a tube not there reads %s", p)
	}
}

// TestDashboardJobPage: the job page shows a text body escaped, a JSON one
// indented, a binary one as hex, and the job's statistics.
func TestDashboardJobPage(t *testing.T) {
	ts := startServer(t, memStore(t), nil)
	ctx := context.Background()
	page := func(id queue.ID) string {
		t.Helper()
		return string(ts.c.do(req{method: "GET", path: "/dashboard/job?id=" + id.String()}).want(t, http.StatusOK, "").body)
	}
	text, _ := ts.q.Put(ctx, "p", queue.NewJob{Body: []byte("<script>alert(1)</script>"), Priority: 7})
	if p := page(text); strings.Contains(p, "<script>") || !strings.Contains(p, "&lt;script&gt;") || !strings.Contains(p, "25 B") {
		t.Errorf("the text body is not shown escaped with its size: %s", p)
	}
	js, _ := ts.q.Put(ctx, "p", queue.NewJob{Body: []byte(`{"a":[1,2]}`)})
	if p := page(js); !strings.Contains(p, "{\n  &#34;a&#34;: [") {
		t.Errorf("the JSON body is not indented: %s", p)
	}
	bin, _ := ts.q.Put(ctx, "p", queue.NewJob{Body: []byte{0xff, 0x00, 0x41}})
	if p := page(bin); !strings.Contains(p, "ff 00 41") || !strings.Contains(p, "binary") || !strings.Contains(p, "/wBB") {
		t.Errorf("the binary body is not shown as hex and base64: %s", p)
	}
	buried := buryN(t, ts.q, "p", 1)[0]
	p := page(buried)
	for _, want := range []string{`data-state="buried"`, `<dd class="reserves">1</dd>`, `data-action="kick"`, `data-action="delete"`} {
		if !strings.Contains(p, want) {
			t.Errorf("the buried job's page lacks %s", want)
		}
	}
	ts.c.do(req{method: "GET", path: "/dashboard/job?id=0"}).want(t, 400, httpapi.CodeBadRequest)
	ts.c.do(req{method: "GET", path: "/dashboard/job?id=x"}).want(t, 400, httpapi.CodeBadRequest)
	if p := string(ts.c.do(req{method: "GET", path: "/dashboard/job?id=999999"}).want(t, 404, "").body); !strings.Contains(p, "<h2>No job #999999</h2>") || !strings.Contains(p, "deleted") {
		t.Errorf("the page of a job not there reads %s", p)
	}
}

// TestDashboardDeleteBuried: the bulk delete removes a tube's buried jobs
// in bounded requests and nothing else; bad input, a cross-site request
// and one without the token change nothing.
func TestDashboardDeleteBuried(t *testing.T) {
	ts := startServer(t, memStore(t), func(s *httpapi.Server) { s.AuthToken = "secret" })
	ctx := context.Background()
	buryN(t, ts.q, "d", 250)
	ready, _ := ts.q.Put(ctx, "d", queue.NewJob{Body: []byte("keep me")})
	path := "/dashboard/tubes/d/delete-buried"
	buried := func() int64 {
		st, err := ts.q.StatsTube(ctx, "d")
		if err != nil {
			t.Fatal(err)
		}
		return st.Buried
	}
	for _, c := range []struct {
		name   string
		c      *client
		r      req
		status int
	}{
		{"max 0", ts.c, req{method: "POST", path: path, json: map[string]int{"max": 0}}, 400},
		{"max too large", ts.c, req{method: "POST", path: path, json: map[string]int{"max": 1001}}, 400},
		{"unknown field", ts.c, req{method: "POST", path: path, json: map[string]int{"all": 1}}, 400},
		{"bad tube", ts.c, req{method: "POST", path: "/dashboard/tubes/-x/delete-buried", json: map[string]int{"max": 1}}, 400},
		{"no token", newClient(t, ts.url, ""), req{method: "POST", path: path, json: map[string]int{"max": 1}}, 401},
		{"cross-site", ts.c, req{method: "POST", path: path, json: map[string]int{"max": 1}, header: map[string]string{"Sec-Fetch-Site": "cross-site"}}, 403},
		{"not JSON", ts.c, req{method: "POST", path: path, raw: []byte("max=1"), contentType: "application/x-www-form-urlencoded"}, 415},
		{"GET", ts.c, req{method: "GET", path: path}, 405},
	} {
		c.c.do(c.r).want(t, c.status, "")
		if n := buried(); n != 250 {
			t.Fatalf("%s: %d buried left, want 250", c.name, n)
		}
	}
	var r httpapi.DeleteBuriedReply
	ts.c.do(req{method: "POST", path: path, json: map[string]int{"max": 100}}).want(t, 200, "").decode(t, &r)
	if r.Deleted != 100 || r.Buried != 150 {
		t.Errorf("max 100: %+v, want 100 deleted, 150 left", r)
	}
	ts.c.do(req{method: "POST", path: path, json: map[string]int{"max": 1000}}).want(t, 200, "").decode(t, &r)
	if r.Deleted != 150 || r.Buried != 0 {
		t.Errorf("max 1000: %+v, want 150 deleted, 0 left", r)
	}
	if _, err := ts.q.Peek(ctx, ready); err != nil {
		t.Errorf("the ready job is gone: %v", err)
	}
}
