package httpapi_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/hourglass-io/hourglass/internal/testkit/backendtest"
	"github.com/hourglass-io/hourglass/server/httpapi"
	"github.com/hourglass-io/hourglass/ttlhash"
)

// goWords are what an error reply must not say: Go types and struct
// names, encoding/json's wording, package prefixes, Go durations.
var goWords = regexp.MustCompile(`Go struct|Go value|json: |uint32|int64|\[\]string|(httpapi|queue|lock|ratelimit|schedule|ttlhash): |\d+h\d+m|context deadline`)

// startFullServer serves every primitive over one memory store.
func startFullServer(t *testing.T) *testServer {
	t.Helper()
	store := memStore(t)
	st := storesOf(t, store)
	return startServer(t, store, func(s *httpapi.Server) {
		s.Locks = lockClient(t, st.locks)
		s.Schedules = scheduleClient(t, st.schedules)
		s.Limiter = backendtest.Limiter(t, st.limits, nil)
		h, err := ttlhash.New(st.hashes, nil)
		if err != nil {
			t.Fatal(err)
		}
		s.Hashes = h
	})
}

// Bad input is answered in the request's own terms: the field by its
// JSON name in the message and in "field", the range in the field's unit.
func TestErrorsInUsersWords(t *testing.T) {
	ts := startFullServer(t)
	c := ts.c
	c.put(t, "t", map[string]any{"body": "x"})
	for _, tc := range []struct {
		name     string
		r        req
		field    string
		contains string
	}{
		{"negative priority", req{method: "POST", path: "/v1/tubes/t/jobs", json: map[string]any{"priority": -1}}, "priority", "from 0 to 4294967295, not -1"},
		{"priority too big", req{method: "POST", path: "/v1/tubes/t/jobs", json: map[string]any{"priority": 1 << 32}}, "priority", "from 0 to 4294967295"},
		{"delay too long", req{method: "POST", path: "/v1/tubes/t/jobs", json: map[string]any{"delay_ms": int64(99999999999999)}}, "delay_ms", "want 0 to 4294967295000 (milliseconds)"},
		{"negative delay", req{method: "POST", path: "/v1/tubes/t/jobs", json: map[string]any{"delay_ms": -1}}, "delay_ms", "is -1"},
		{"short TTR", req{method: "POST", path: "/v1/tubes/t/jobs", json: map[string]any{"ttr_ms": 5}}, "ttr_ms", "1000 to 4294967295000 (milliseconds)"},
		{"raw put TTR", req{method: "POST", path: "/v1/tubes/t/jobs?ttr_ms=5", raw: []byte("x"), contentType: "application/octet-stream"}, "ttr_ms", "(milliseconds)"},
		{"body a number", req{method: "POST", path: "/v1/tubes/t/jobs", json: map[string]any{"body": 1}}, "body", "must be a string, not a number"},
		{"unknown field", req{method: "POST", path: "/v1/tubes/t/jobs", json: map[string]any{"pri": 1}}, "pri", "the fields are body, body_base64, priority, delay_ms, ttr_ms, unique_key"},
		{"bad base64", req{method: "POST", path: "/v1/tubes/t/jobs", json: map[string]any{"body_base64": "!"}}, "body_base64", "not base64"},
		{"bad tube", req{method: "POST", path: "/v1/tubes/a%20b/jobs", json: map[string]any{}}, "tube", `"a b"`},
		{"tubes not an array", req{method: "POST", path: "/v1/reserve", json: map[string]any{"tubes": "t"}}, "tubes", "a string in an array, not a string"},
		{"negative timeout", req{method: "POST", path: "/v1/reserve", json: map[string]any{"timeout_ms": -1}}, "timeout_ms", "want 0 or more"},
		{"bad id", req{method: "GET", path: "/v1/jobs/x"}, "id", "a whole number from 1"},
		{"release delay", req{method: "POST", path: "/v1/jobs/1/release", json: map[string]any{"delay_ms": int64(1) << 53}, header: map[string]string{httpapi.LeaseHeader: "hgl_0123456789abcdef0123456789abcdef"}}, "delay_ms", "(milliseconds)"},
		{"kick bound", req{method: "POST", path: "/v1/tubes/t/kick", json: map[string]any{"bound": -1}}, "bound", "want 0 or more"},
		{"pause delay", req{method: "POST", path: "/v1/tubes/t/pause", json: map[string]any{"delay_ms": int64(1) << 53}}, "delay_ms", "(milliseconds)"},
		{"lock TTL", req{method: "POST", path: "/v1/locks/l/obtain", json: map[string]any{"ttl_ms": -1}}, "ttl_ms", "want 1 to"},
		{"schedule spec", req{method: "PUT", path: "/v1/schedules/s", json: map[string]any{"spec": "nope", "job": map[string]any{"tube": "t"}}}, "spec", "spec"},
		{"schedule zone", req{method: "PUT", path: "/v1/schedules/s", json: map[string]any{"spec": "@hourly", "zone": "Mars/X", "job": map[string]any{"tube": "t"}}}, "zone", "Mars/X"},
		{"schedule job priority", req{method: "PUT", path: "/v1/schedules/s", json: map[string]any{"spec": "@hourly", "job": map[string]any{"tube": "t", "priority": -1}}}, "job.priority", "from 0 to 4294967295"},
		{"hash TTL too long", req{method: "POST", path: "/v1/hashes/h/fields", json: map[string]any{"fields": []any{map[string]any{"name": "a", "value": "x"}}, "ttl_ms": int64(99999999999999)}}, "ttl_ms", "(milliseconds"},
		{"expire TTL too long", req{method: "POST", path: "/v1/hashes/h/expire", json: map[string]any{"fields": []string{"a"}, "ttl_ms": int64(99999999999999)}}, "ttl_ms", "(milliseconds)"},
		{"nested unknown field", req{method: "PUT", path: "/v1/schedules/s", json: map[string]any{"spec": "@hourly", "job": map[string]any{"tube": "t", "pri": 1}}}, "pri", "is not a field"},
		{"schedule job TTR", req{method: "PUT", path: "/v1/schedules/s", json: map[string]any{"spec": "@hourly", "job": map[string]any{"tube": "t", "ttr_ms": 500}}}, "job.ttr_ms", "(milliseconds)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.r.offSpec = true
			r := c.do(tc.r)
			if r.status != http.StatusBadRequest {
				t.Fatalf("status %d (%s), want 400", r.status, r.body)
			}
			if tc.name == "nested unknown field" && strings.Contains(string(r.body), "the fields are") {
				t.Errorf("%s lists the top level's fields for a nested one", r.body)
			}
			var e struct {
				Error struct{ Code, Message, Field string } `json:"error"`
			}
			if err := json.Unmarshal(r.body, &e); err != nil {
				t.Fatal(err)
			}
			if e.Error.Field != tc.field {
				t.Errorf("field %q, want %q (%s)", e.Error.Field, tc.field, r.body)
			}
			if !strings.Contains(e.Error.Message, tc.field) || !strings.Contains(e.Error.Message, tc.contains) {
				t.Errorf("message %q does not name %s and say %q", e.Error.Message, tc.field, tc.contains)
			}
			if m := goWords.FindString(e.Error.Message); m != "" {
				t.Errorf("message %q speaks Go (%q)", e.Error.Message, m)
			}
		})
	}

	// A limit's fields by their JSON names, under the limit's index.
	r := c.do(req{method: "POST", path: "/v1/limits/allow", json: map[string]any{"key": "k", "limits": []any{map[string]any{"events": 0, "per": "1m"}}}, offSpec: true})
	if !strings.Contains(string(r.body), `"message":"limits[0].events is 0, want at least 1","field":"limits[0].events"`) {
		t.Errorf("a limit of 0 events: %s", r.body)
	}

	// Outcomes too: no package prefix, no context error.
	c.do(req{method: "POST", path: "/v1/locks/held/obtain", json: map[string]any{"ttl_ms": 60000}}).want(t, http.StatusOK, "")
	for _, r := range []req{
		{method: "GET", path: "/v1/jobs/999"},
		{method: "POST", path: "/v1/locks/held/obtain", json: map[string]any{"ttl_ms": 60000}},
		{method: "POST", path: "/v1/locks/held/obtain", json: map[string]any{"ttl_ms": 60000, "wait_ms": 1}},
	} {
		got := c.do(r)
		if got.status < 400 || goWords.Match(got.body) {
			t.Errorf("%s %s: %d %s, want an error reply without Go in it", r.method, r.path, got.status, got.body)
		}
	}
}

// docOperation is an operation of the OpenAPI document.
type docOperation struct {
	method, path string // path with its parameters filled in
	template     string
	body         bool // it takes a request body
}

// docOperations lists the document's operations, their path parameters
// filled with values the routes accept.
func docOperations(t *testing.T) []docOperation {
	t.Helper()
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(httpapi.OpenAPI(), &doc); err != nil {
		t.Fatal(err)
	}
	args := strings.NewReplacer("{tube}", "t", "{id}", "1", "{name}", "n", "{hash}", "h", "{group}", "g", "{state}", "ready")
	var ops []docOperation
	for path, item := range doc.Paths {
		for method, raw := range item {
			var op struct {
				RequestBody json.RawMessage `json:"requestBody"`
			}
			if method == "parameters" || json.Unmarshal(raw, &op) != nil {
				continue
			}
			ops = append(ops, docOperation{strings.ToUpper(method), args.Replace(path), path, len(op.RequestBody) > 0})
		}
	}
	if len(ops) < 30 {
		t.Fatalf("only %d operations in the document", len(ops))
	}
	return ops
}

// Every operation's document lists the statuses the server's guards answer
// any request with, as they answer them: 401 without the token, 421 for a
// foreign Host, and for a request that changes state 403 from another site
// and 415 for a body of another type; and every operation that takes a body
// answers 413 to one beyond its limit, listed too. checkReply and the
// client's checks hold each reply's status to the document.
func TestEveryStatusDocumented(t *testing.T) {
	ts := startFullServer(t)
	headers := map[string]string{httpapi.LeaseHeader: "hgl_0123456789abcdef0123456789abcdef", httpapi.LockTokenHeader: "t"}
	body := func(n int) []byte {
		return append(append([]byte(`{"body":"`), bytes.Repeat([]byte("x"), n)...), `"}`...)
	}
	small, large := body(2<<20), body(17<<20) // beyond the limits of the small bodies and of a hash's set
	for _, op := range docOperations(t) {
		if op.body {
			big := small
			if strings.HasPrefix(op.path, "/v1/hashes/") || strings.HasPrefix(op.path, "/v1/schedules/") || strings.HasPrefix(op.path, "/v1/tubes/") {
				big = large
			}
			r := ts.c.do(req{method: op.method, path: op.path, raw: big, contentType: "application/json", header: headers, offSpec: true})
			if r.status != http.StatusRequestEntityTooLarge {
				t.Errorf("%s %s with a body of %d bytes: %d %.200s, want 413", op.method, op.template, len(big), r.status, r.body)
			}
		}
		guarded := []struct {
			name   string
			header map[string]string
			status int
		}{{"a foreign Host", map[string]string{"Host": "rebound.example"}, http.StatusMisdirectedRequest}}
		if op.method != "GET" {
			guarded = append(guarded,
				struct {
					name   string
					header map[string]string
					status int
				}{"from another site", map[string]string{"Content-Type": "application/json", "Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
				struct {
					name   string
					header map[string]string
					status int
				}{"a text/plain body", map[string]string{"Content-Type": "text/plain"}, http.StatusUnsupportedMediaType})
		}
		for _, g := range guarded {
			r := rawDo(t, op.method, ts.url+op.path, "{}", g.header)
			if r.status != g.status {
				t.Errorf("%s %s %s: %d %s, want %d", op.method, op.template, g.name, r.status, r.body, g.status)
			}
			checkReply(t, op.method, op.path, r)
		}
	}

	// With a token, a call without it is 401.
	store := memStore(t)
	tok := startServer(t, store, func(s *httpapi.Server) {
		s.AuthToken = "secret"
		st := storesOf(t, store)
		s.Locks = lockClient(t, st.locks)
		s.Schedules = scheduleClient(t, st.schedules)
		s.Limiter = backendtest.Limiter(t, st.limits, nil)
		h, err := ttlhash.New(st.hashes, nil)
		if err != nil {
			t.Fatal(err)
		}
		s.Hashes = h
	})
	for _, op := range docOperations(t) {
		r := rawDo(t, op.method, tok.url+op.path, "{}", map[string]string{"Content-Type": "application/json"})
		if op.template == "/v1/openapi.json" {
			continue // served to all
		}
		if r.status != http.StatusUnauthorized {
			t.Errorf("%s %s without the token: %d %s, want 401", op.method, op.template, r.status, r.body)
		}
		checkReply(t, op.method, op.path, r)
	}
}
