package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/memstore"
	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/ratelimit"
	"github.com/hourglass-io/hourglass/server/httpapi"
	"github.com/hourglass-io/hourglass/ttlhash"
)

// operation is one method of one path of the OpenAPI document, with the
// names of its query parameters.
type operation struct {
	method, path string
	query        []string
}

// operations lists every operation of the OpenAPI document, in a fixed
// order.
func operations(t testing.TB) []operation {
	t.Helper()
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(httpapi.OpenAPI(), &doc); err != nil {
		t.Fatal(err)
	}
	type param struct {
		Name string `json:"name"`
		In   string `json:"in"`
	}
	var ops []operation
	for path, item := range doc.Paths {
		for method, raw := range item {
			if method == "parameters" {
				continue
			}
			var op struct {
				Parameters []param `json:"parameters"`
			}
			json.Unmarshal(raw, &op)
			o := operation{method: strings.ToUpper(method), path: path}
			for _, p := range op.Parameters {
				if p.In == "query" {
					o.query = append(o.query, p.Name)
				}
			}
			ops = append(ops, o)
		}
	}
	sort.Slice(ops, func(i, j int) bool {
		return ops[i].path+" "+ops[i].method < ops[j].path+" "+ops[j].method
	})
	if len(ops) < 10 {
		t.Fatalf("%d operations in the OpenAPI document", len(ops))
	}
	return ops
}

// jobCounts is what a request refused as bad input must leave as it was:
// the jobs the store holds (whatever their state, which time moves), the
// jobs ever put and the buried ones (which time does not move).
type jobCounts struct{ jobs, total, buried int64 }

func countJobs(t testing.TB, q *queue.Queue) jobCounts {
	t.Helper()
	st, err := q.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return jobCounts{st.Ready + st.Reserved + st.Delayed + st.Buried, st.TotalJobs, st.Buried}
}

// opIndex returns the index of an operation in ops.
func opIndex(t testing.TB, ops []operation, method, path string) int {
	t.Helper()
	for i, o := range ops {
		if o.method == method && o.path == path {
			return i
		}
	}
	t.Fatalf("no operation %s %s in the OpenAPI document", method, path)
	return 0
}

// scheduleVersions lists the schedules of ms with their versions: what a
// request refused as bad input must leave as it was.
func scheduleVersions(t testing.TB, ms *memstore.Store) string {
	t.Helper()
	sts, err := ms.Schedules().List(context.Background(), "", 1000)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, st := range sts {
		fmt.Fprintf(&b, "%s@%d ", st.Name, st.Version)
	}
	return b.String()
}

// FuzzAPI sends requests built from the OpenAPI document — each operation,
// its path parameters, query parameters and body taken from the fuzzer —
// to a server over the embedded engine, with every primitive served. No
// request makes the server panic or answer 5xx (the store never fails
// here), and one answered 4xx leaves the jobs as they were.
func FuzzAPI(f *testing.F) {
	ops := operations(f)
	ms, err := memstore.New(nil)
	if err != nil {
		f.Fatal(err)
	}
	q, err := queue.New(ms, &queue.Options{MaxJobSize: 4096})
	if err != nil {
		f.Fatal(err)
	}
	hashes, err := ttlhash.New(ms.Hashes(), nil)
	if err != nil {
		f.Fatal(err)
	}
	limiter, err := ratelimit.New(ms.RateLimits(), nil)
	if err != nil {
		f.Fatal(err)
	}
	srv := &httpapi.Server{Queue: q, Hashes: hashes, Locks: lockClient(f, ms.Locks()), Schedules: scheduleClient(f, ms.Schedules()), Limiter: limiter,
		MaxWait: time.Millisecond, Logger: slog.New(slog.DiscardHandler)}
	h := srv.Handler()
	f.Cleanup(func() { q.Close(); ms.Close() })

	seeds := []struct {
		op           int
		pathArg, arg string
		body         string
	}{
		{0, "default", "1", `{}`},
		{1, "t", "10", `{"body":"hi"}`},
		{2, "1", "ready", `{"tubes":["t"],"timeout_ms":1}`},
		{3, "x%2Fy", "-1", `{"ttl_ms":1000}`},
		{4, "g", "99999999999999999999", `{"fields":["a"],"ttl_ms":0}`},
		{5, "", "", "\xff\xfe"},
		{6, "a b", "true", `{"limits":[{"rate":"1/s"}]}`},
		{opIndex(f, ops, "PUT", "/v1/schedules/{name}"), "nightly", "3", `{"spec":"@every 1h","job":{"tube":"t","body":"x"}}`},
		{opIndex(f, ops, "PUT", "/v1/schedules/{name}"), "nightly", "2", `{"spec":"30 2 * * *","zone":"Europe/Berlin","job":{"tube":"t"},"misfire":{"policy":"catch_up","n":2}}`},
		{opIndex(f, ops, "GET", "/v1/schedules/{name}/next"), "nightly", "1000", ``},
		{opIndex(f, ops, "POST", "/v1/schedules/{name}/resume"), "nightly", "", ``},
		{opIndex(f, ops, "POST", "/v1/limits/allow"), "", "", `{"key":"k","name":""}`},
		{opIndex(f, ops, "POST", "/v1/limits/wait"), "", "", `{"key":"k","name":"","limits":[{"events":1,"per":"1s"}],"max_wait_ms":5}`},
		{opIndex(f, ops, "POST", "/v1/limits/wait"), "", "", `{"key":"k","limits":[{"events":1,"per":"1h"}],"max_wait_ms":100000}`},
	}
	for _, s := range seeds {
		for i := range 3 {
			f.Add(uint16(s.op+7*i), s.pathArg, s.arg, []byte(s.body), i%2 == 0)
		}
		f.Add(uint16(s.op)|0x8000|uint16(len(s.body)%5)<<12, s.pathArg, s.arg, []byte(s.body), true)
	}
	f.Fuzz(func(t *testing.T, opIndex uint16, pathArg, arg string, body []byte, asJSON bool) {
		op := ops[int(opIndex)%len(ops)]
		path := op.path
		for {
			i := strings.IndexByte(path, '{')
			j := strings.IndexByte(path, '}')
			if i < 0 || j < i {
				break
			}
			path = path[:i] + url.PathEscape(pathArg) + path[j+1:]
		}
		vals := url.Values{}
		for _, name := range op.query {
			vals.Set(name, arg)
		}
		target := path
		if len(vals) > 0 {
			target += "?" + vals.Encode()
		}
		method := op.method
		if opIndex&0x8000 != 0 {
			// A method the path may not serve: 405 with Allow, or the
			// operation of that method.
			method = []string{"PATCH", "PUT", "POST", "DELETE", "GET"}[int(opIndex>>12)&7%5]
		}
		r, err := http.NewRequest(method, "http://localhost"+target, bytes.NewReader(body))
		if err != nil {
			return // not a request a client could send
		}
		if asJSON {
			r.Header.Set("Content-Type", "application/json")
		} else {
			r.Header.Set("Content-Type", "application/octet-stream")
		}
		before, schedBefore := countJobs(t, q), scheduleVersions(t, ms)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code == http.StatusMethodNotAllowed && w.Header().Get("Allow") == "" {
			t.Fatalf("%s %s: 405 without Allow", method, target)
		}
		if w.Code >= 500 {
			t.Fatalf("%s %s %q: %d %s", op.method, target, body, w.Code, w.Body)
		}
		if w.Code >= 400 {
			if after := countJobs(t, q); after != before {
				t.Fatalf("%s %s %q: %d %s, and the jobs went from %+v to %+v", op.method, target, body, w.Code, w.Body, before, after)
			}
			if after := scheduleVersions(t, ms); after != schedBefore {
				t.Fatalf("%s %s %q: %d %s, and the schedules went from %s to %s", op.method, target, body, w.Code, w.Body, schedBefore, after)
			}
		}
	})
}
