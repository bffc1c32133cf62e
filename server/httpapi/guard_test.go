package httpapi_test

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/hourglass-io/hourglass/server/httpapi"
)

// rawDo sends a request as a browser or a careless client would, with
// exactly the given headers (Host among them), and returns the status, the
// error code and the reply's headers.
func rawDo(t *testing.T, base, method, path, host string, header map[string]string, body string) (int, string, http.Header) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	r, err := http.NewRequest(method, base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		r.Host = host
	}
	for k, v := range header {
		r.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	code := ""
	if i := bytes.Index(b, []byte(`"code":"`)); i >= 0 {
		rest := b[i+8:]
		code = string(rest[:bytes.IndexByte(rest, '"')])
	}
	return resp.StatusCode, code, resp.Header
}

// A page of another site cannot change state: not by naming itself in
// Origin or Sec-Fetch-Site, not with a body a form or fetch can send
// without asking (text/plain, a form, no Content-Type), not by rebinding
// its own name to the server's address. Nothing it sends is stored.
func TestCrossSiteRefused(t *testing.T) {
	ts := startServer(t, memStore(t), nil)
	json := map[string]string{"Content-Type": "application/json"}
	with := func(h map[string]string) map[string]string {
		out := map[string]string{"Content-Type": "application/json"}
		for k, v := range h {
			out[k] = v
		}
		return out
	}
	cases := []struct {
		name   string
		host   string
		header map[string]string
		body   string
		status int
		code   string
	}{
		{"other origin", "", with(map[string]string{"Origin": "http://evil.example"}), `{"body":"x"}`, http.StatusForbidden, httpapi.CodeCrossSite},
		{"null origin", "", with(map[string]string{"Origin": "null"}), `{"body":"x"}`, http.StatusForbidden, httpapi.CodeCrossSite},
		{"cross-site fetch", "", with(map[string]string{"Sec-Fetch-Site": "cross-site"}), `{"body":"x"}`, http.StatusForbidden, httpapi.CodeCrossSite},
		{"same-site fetch", "", with(map[string]string{"Sec-Fetch-Site": "same-site"}), `{"body":"x"}`, http.StatusForbidden, httpapi.CodeCrossSite},
		{"text/plain", "", map[string]string{"Content-Type": "text/plain"}, `{"body":"x"}`, http.StatusUnsupportedMediaType, httpapi.CodeUnsupported},
		{"form", "", map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, `body=x`, http.StatusUnsupportedMediaType, httpapi.CodeUnsupported},
		{"no Content-Type", "", nil, `{"body":"x"}`, http.StatusUnsupportedMediaType, httpapi.CodeUnsupported},
		{"rebound host", "evil.example:7480", json, `{"body":"x"}`, http.StatusForbidden, httpapi.CodeForbiddenHost},
	}
	for _, tc := range cases {
		status, code, _ := rawDo(t, ts.url, "POST", "/v1/tubes/t/jobs", tc.host, tc.header, tc.body)
		if status != tc.status || code != tc.code {
			t.Errorf("%s: %d %s, want %d %s", tc.name, status, code, tc.status, tc.code)
		}
	}
	// A rebound page cannot read either.
	if status, code, _ := rawDo(t, ts.url, "GET", "/v1/stats", "evil.example", nil, ""); status != http.StatusForbidden || code != httpapi.CodeForbiddenHost {
		t.Errorf("GET /v1/stats as evil.example: %d %s, want 403 %s", status, code, httpapi.CodeForbiddenHost)
	}
	if status, _, _ := rawDo(t, ts.url, "GET", "/", "evil.example", nil, ""); status != http.StatusForbidden {
		t.Errorf("the dashboard as evil.example: %d, want 403", status)
	}
	var st struct {
		TotalJobs int `json:"total_jobs"`
	}
	ts.c.do(req{method: "GET", path: "/v1/stats"}).want(t, http.StatusOK, "").decode(t, &st)
	if st.TotalJobs != 0 {
		t.Fatalf("%d jobs stored by refused requests", st.TotalJobs)
	}
	// The same page's own requests, and the loopback names, pass.
	port := ts.url[strings.LastIndexByte(ts.url, ':'):]
	for _, host := range []string{"localhost" + port, "127.0.0.1" + port, "LOCALHOST"} {
		h := with(map[string]string{"Origin": "http://" + host, "Sec-Fetch-Site": "same-origin"})
		if status, code, _ := rawDo(t, ts.url, "POST", "/v1/tubes/t/jobs", host, h, `{"body":"x"}`); status != http.StatusCreated {
			t.Errorf("a same-origin put as %s: %d %s, want 201", host, status, code)
		}
	}
}

// AllowedHosts names the hosts a server answers to; "*" is any.
func TestAllowedHosts(t *testing.T) {
	ts := startServer(t, memStore(t), func(s *httpapi.Server) { s.AllowedHosts = []string{"queue.internal"} })
	if status, _, _ := rawDo(t, ts.url, "GET", "/v1/stats", "queue.internal:7480", nil, ""); status != http.StatusOK {
		t.Errorf("GET as queue.internal: %d, want 200", status)
	}
	if status, code, _ := rawDo(t, ts.url, "GET", "/v1/stats", "localhost", nil, ""); status != http.StatusForbidden || code != httpapi.CodeForbiddenHost {
		t.Errorf("GET as localhost, not in the list: %d %s, want 403", status, code)
	}
	any := startServer(t, memStore(t), func(s *httpapi.Server) { s.AllowedHosts = []string{"*"} })
	if status, _, _ := rawDo(t, any.url, "GET", "/v1/stats", "whatever.example", nil, ""); status != http.StatusOK {
		t.Errorf("GET as whatever.example with *: %d, want 200", status)
	}
}

// Every reply says nosniff; the API's and the metrics' are not cached.
func TestSecurityHeaders(t *testing.T) {
	ts := startServer(t, memStore(t), nil)
	for _, path := range []string{"/v1/stats", "/metrics", "/v1/jobs/999", "/", "/healthz"} {
		_, _, h := rawDo(t, ts.url, "GET", path, "", nil, "")
		if h.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: X-Content-Type-Options %q, want nosniff", path, h.Get("X-Content-Type-Options"))
		}
		if h.Get("Cache-Control") != "no-store" {
			t.Errorf("GET %s: Cache-Control %q, want no-store", path, h.Get("Cache-Control"))
		}
	}
	_, _, h := rawDo(t, ts.url, "GET", "/", "", nil, "")
	if csp := h.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") {
		t.Errorf("the dashboard's Content-Security-Policy: %q", csp)
	}
}

// A token is compared as given: spaces of another kind around it are not
// trimmed away.
func TestTokenNotTrimmed(t *testing.T) {
	ts := startServer(t, memStore(t), func(s *httpapi.Server) { s.AuthToken = "tok" })
	for _, v := range []string{"Bearer \u00a0tok", "Bearer tok\u2003", "Bearer \u3000tok\u3000"} {
		if status, code, _ := rawDo(t, ts.url, "GET", "/v1/stats", "", map[string]string{"Authorization": v}, ""); status != http.StatusUnauthorized {
			t.Errorf("Authorization %q: %d %s, want 401", v, status, code)
		}
	}
	if status, _, _ := rawDo(t, ts.url, "GET", "/v1/stats", "", map[string]string{"Authorization": "Bearer tok"}, ""); status != http.StatusOK {
		t.Errorf("the token itself: %d, want 200", status)
	}
}

// Input the server could only half read is refused, not silently changed:
// a JSON body that is not UTF-8 (Go's decoder would store U+FFFD), a path
// or query that is not UTF-8, a query beyond the 10,000 parameters Go
// keeps, a pause or a kick without its required field. Nothing changes.
func TestExactInput(t *testing.T) {
	ts := startServer(t, memStore(t), nil)
	json := map[string]string{"Content-Type": "application/json"}
	cases := []struct {
		name, method, path, body string
	}{
		{"body not UTF-8", "POST", "/v1/tubes/t/jobs", "{\"body\":\"a\xffb\"}"},
		{"path not UTF-8", "POST", "/v1/tubes/t%FF/jobs", `{"body":"x"}`},
		{"query not UTF-8", "POST", "/v1/tubes/t/jobs?unique_key=%FF", `{"body":"x"}`},
		{"pause without delay_ms", "POST", "/v1/tubes/t/pause", `{}`},
		{"kick without bound", "POST", "/v1/tubes/t/kick", `{}`},
	}
	for _, tc := range cases {
		if status, code, _ := rawDo(t, ts.url, tc.method, tc.path, "", json, tc.body); status != http.StatusBadRequest {
			t.Errorf("%s: %d %s, want 400", tc.name, status, code)
		}
	}
	many := strings.Repeat("a=1&", 10001)
	if status, code, _ := rawDo(t, ts.url, "GET", "/v1/stats?"+many, "", nil, ""); status != http.StatusBadRequest {
		t.Errorf("a query of 10,001 parameters: %d %s, want 400", status, code)
	}
	var st struct {
		TotalJobs int `json:"total_jobs"`
	}
	ts.c.do(req{method: "GET", path: "/v1/stats"}).want(t, http.StatusOK, "").decode(t, &st)
	if st.TotalJobs != 0 {
		t.Fatalf("%d jobs stored by refused requests", st.TotalJobs)
	}
	// A pause of 0 is still how a pause ends.
	if status, code, _ := rawDo(t, ts.url, "POST", "/v1/tubes/t/pause", "", json, `{"delay_ms":0}`); status != http.StatusNoContent && status != http.StatusNotFound {
		t.Errorf("pause of 0: %d %s", status, code)
	}
}
