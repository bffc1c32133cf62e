package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

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
