package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/hourglass-io/hourglass/server/httpapi"
)

// An empty name is not an absent one: allow and wait refuse it, naming
// the field, and charge nothing.
func TestLimitEmptyName(t *testing.T) {
	ts := startLimitServer(t, memStore(t), []string{"one=1/1h"}, nil)
	c := ts.c
	for _, path := range []string{"/v1/limits/allow", "/v1/limits/wait"} {
		for _, body := range []map[string]any{
			{"key": "k", "name": ""},
			{"key": "k", "name": "", "limits": []map[string]any{{"events": 1, "per": 1000}}},
			{"key": "k", "name": 5},
		} {
			r := c.do(req{method: "POST", path: path, json: body, offSpec: true}).want(t, http.StatusBadRequest, httpapi.CodeBadRequest)
			if !strings.Contains(string(r.body), "name") {
				t.Errorf("%s %v: %s, want the field named", path, body, r.body)
			}
		}
	}
	if lr, r := c.allow(t, map[string]any{"key": "k", "name": "one"}); r.status != http.StatusOK || !lr.Allowed {
		t.Fatalf("the refused calls charged the limit: %d %+v", r.status, lr)
	}
}

// A method a path does not serve is 405 with an Allow header, whatever
// else is wrong with the request.
func TestMethodNotAllowed(t *testing.T) {
	ts := startServer(t, memStore(t), func(s *httpapi.Server) {
		s.Schedules = scheduleClient(t, storesOf(t, memStore(t)).schedules)
	})
	for _, c := range []struct {
		method, path, contentType, allow string
	}{
		{"PATCH", "/v1/schedules/1", "", "GET, HEAD, PUT, DELETE"},
		{"POST", "/v1/schedules/1", "application/json", "GET, HEAD, PUT, DELETE"},
		{"PUT", "/v1/jobs/1", "text/plain", "GET, HEAD, DELETE"},
		{"DELETE", "/v1/openapi.json", "text/plain", "GET, HEAD"},
	} {
		r := ts.c.do(req{method: c.method, path: c.path, raw: []byte("x"), contentType: c.contentType, offSpec: true})
		r.want(t, http.StatusMethodNotAllowed, httpapi.CodeNotAllowed)
		if a := r.header.Get("Allow"); a != c.allow {
			t.Errorf("%s %s: Allow %q, want %q", c.method, c.path, a, c.allow)
		}
	}
}
