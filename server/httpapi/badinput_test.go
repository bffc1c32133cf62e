package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/server/httpapi"
)

// TestMalformedCursorsAndEventIDs: a cursor or an event ID no store could
// have made is a 400 on every back end, never a store failure: the store is
// not called, its error text is not sent, and the store-error metric stays
// at zero.
func TestMalformedCursorsAndEventIDs(t *testing.T) {
	forEachHashBackend(t, func(t *testing.T, b backend) {
		ts := startHashServer(t, b, nil, nil)
		ts.c.hset(t, "h", map[string]any{"fields": []map[string]any{{"name": "a", "value": "1"}}})
		ts.c.do(req{method: "POST", path: "/v1/hash-groups/g", json: map[string]any{}}).want(t, http.StatusNoContent, "")
		for _, cursor := range []string{"%FF", "abc", "-1", "+1", "18446744073709551616", "%201", "1.5", "0x10"} {
			r := ts.c.do(req{method: "GET", path: "/v1/hashes/h/scan?cursor=" + cursor, offSpec: true})
			r.want(t, http.StatusBadRequest, httpapi.CodeBadRequest)
			if !strings.Contains(string(r.body), "cursor") {
				t.Errorf("cursor %s: %s does not name the cursor", cursor, r.body)
			}
		}
		for _, id := range []string{"x", "0:abc", "1:2-3-4", "", "1:", ":5", "1:-", "-1", "1:2-", "99999999999999999999", strings.Repeat("1", 65)} {
			r := ts.c.do(req{method: "POST", path: "/v1/hash-groups/g/ack", json: map[string]any{"ids": []string{id}}, offSpec: true})
			r.want(t, http.StatusBadRequest, httpapi.CodeBadRequest)
		}
		if n := counter(t, ts.srv.Metrics, "hourglass_store_errors_total", nil); n != 0 {
			t.Fatalf("%v store errors counted for bad input", n)
		}
		// A cursor the scan returned still works.
		ts.c.do(req{method: "GET", path: "/v1/hashes/h/scan?cursor=0"}).want(t, http.StatusOK, "")
	})
}

// TestRequiredFields: a pause or kick without its one field is refused and
// changes nothing (an empty pause body used to unpause).
func TestRequiredFields(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open func(testing.TB) queue.Store) {
		ts := startServer(t, open(t), nil)
		ts.c.put(t, "t", map[string]any{"body": "x"})
		ts.c.do(req{method: "POST", path: "/v1/tubes/t/pause", json: map[string]any{"delay_ms": 60000}}).want(t, http.StatusNoContent, "")
		for _, tc := range []struct{ path, body string }{
			{"/v1/tubes/t/pause", ""}, {"/v1/tubes/t/pause", "{}"}, {"/v1/tubes/t/kick", "{}"}, {"/v1/tubes/t/kick", ""},
		} {
			ts.c.do(req{method: "POST", path: tc.path, raw: []byte(tc.body), contentType: "application/json", offSpec: true}).want(t, http.StatusBadRequest, httpapi.CodeBadRequest)
		}
		var st httpapi.TubeStats
		ts.c.do(req{method: "GET", path: "/v1/tubes/t"}).want(t, http.StatusOK, "").decode(t, &st)
		if !st.Paused {
			t.Fatalf("the tube is no longer paused: %+v", st)
		}
	})
}

// TestTooManyQueryParams: a query beyond what Go's parser keeps is refused,
// not cut short (a delete would then name fewer fields than sent).
func TestTooManyQueryParams(t *testing.T) {
	ts := startServer(t, memStore(t), nil)
	q := strings.Repeat("field=a&", httpapi.MaxQueryParams) + "field=b"
	ts.c.do(req{method: "GET", path: "/v1/stats?" + q, offSpec: true}).want(t, http.StatusBadRequest, httpapi.CodeBadRequest)
	ts.c.do(req{method: "GET", path: "/v1/stats?" + strings.Repeat("x=1&", httpapi.MaxQueryParams-1) + "x=1", offSpec: true}).want(t, http.StatusOK, "")
}

// TestTokenUnicodeSpaces: a token with Unicode spaces around it is wrong.
func TestTokenUnicodeSpaces(t *testing.T) {
	ts := startServer(t, memStore(t), func(s *httpapi.Server) { s.AuthToken = "s3cret" })
	for _, tok := range []string{"\u00a0s3cret", "s3cret\u2003", "\u3000s3cret\u3000", "s3cret\u0085"} {
		newClient(t, ts.url, tok).do(req{method: "GET", path: "/v1/stats"}).want(t, http.StatusUnauthorized, httpapi.CodeUnauthorized)
	}
	newClient(t, ts.url, "s3cret").do(req{method: "GET", path: "/v1/stats"}).want(t, http.StatusOK, "")
}

// TestInvalidUTF8: text the API takes as UTF-8 is refused when it is not,
// instead of being changed (each bad byte became U+FFFD, so two field names
// collapsed into one and a job's body changed).
func TestInvalidUTF8(t *testing.T) {
	forEachHashBackend(t, func(t *testing.T, b backend) {
		ts := startHashServer(t, b, nil, nil)
		for _, tc := range []struct{ path, body string }{
			{"/v1/tubes/t/jobs", "{\"body\":\"a\xffb\"}"},
			{"/v1/hashes/h/fields", "{\"fields\":[{\"name\":\"f\xfe\",\"value\":\"1\"}]}"},
			{"/v1/hashes/h/fields", "{\"fields\":[{\"name\":\"f\",\"value\":\"\xc3\"}]}"},
			// Escapes of half a surrogate pair: encoding/json makes each U+FFFD.
			{"/v1/tubes/t/jobs", `{"body":"a\uD800b"}`},
			{"/v1/tubes/t/jobs", `{"body":"\uDC00"}`},
			{"/v1/tubes/t/jobs", `{"body":"\ud83d\u0041"}`},
			{"/v1/hashes/h/fields", `{"fields":[{"name":"f\uDBFF","value":"1"}]}`},
		} {
			ts.c.do(req{method: "POST", path: tc.path, raw: []byte(tc.body), contentType: "application/json", offSpec: true}).want(t, http.StatusBadRequest, httpapi.CodeBadRequest)
		}
		// A whole pair, and an escaped backslash before "uD800", are text.
		for _, body := range []string{`{"body":"\ud83d\ude00"}`, `{"body":"\\uD800"}`, `{"body":"\\\ud83d\ude00\\"}`} {
			ts.c.do(req{method: "POST", path: "/v1/tubes/fine/jobs", raw: []byte(body), contentType: "application/json"}).want(t, http.StatusCreated, "")
		}
		ts.c.do(req{method: "GET", path: "/v1/hashes/h/fields?field=%FF", offSpec: true}).want(t, http.StatusBadRequest, httpapi.CodeBadRequest)
		ts.c.do(req{method: "DELETE", path: "/v1/hashes/h/fields?field=a%FE", offSpec: true}).want(t, http.StatusBadRequest, httpapi.CodeBadRequest)
		var st httpapi.TubeStats
		if r := ts.c.do(req{method: "GET", path: "/v1/tubes/t", offSpec: true}); r.status == http.StatusOK {
			r.decode(t, &st)
			if st.TotalJobs != 0 {
				t.Fatalf("a job was stored: %+v", st)
			}
		}
		var l struct{ Len int }
		ts.c.do(req{method: "GET", path: "/v1/hashes/h"}).want(t, http.StatusOK, "").decode(t, &l)
		if l.Len != 0 {
			t.Fatalf("%d fields stored", l.Len)
		}
	})
}
