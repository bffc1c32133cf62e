package httpapi_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/server/httpapi"
)

// rawDo sends a request built by the test as it is (no checks against the
// OpenAPI document) and returns its reply.
func rawDo(t *testing.T, method, url, body string, header map[string]string) reply {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	hr, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		if k == "Host" {
			hr.Host = v
			continue
		}
		hr.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return reply{status: resp.StatusCode, header: resp.Header, body: b}
}

// TestCrossSiteWrites: a state-changing request a browser could send from
// another site without a preflight is refused and changes nothing.
func TestCrossSiteWrites(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open func(testing.TB) queue.Store) {
		ts := startServer(t, open(t), nil)
		ts.c.put(t, "t", map[string]any{"body": "x", "delay_ms": 3600000})
		const job = `{"body":"from elsewhere"}`
		for _, tc := range []struct {
			name, method, path, body string
			header                   map[string]string
			status                   int
			code                     string
		}{
			{"text/plain put", "POST", "/v1/tubes/t/jobs", job, map[string]string{"Content-Type": "text/plain"}, 415, httpapi.CodeUnsupported},
			{"put without a type", "POST", "/v1/tubes/t/jobs", job, nil, 415, httpapi.CodeUnsupported},
			{"form kick", "POST", "/v1/tubes/t/kick", "bound=5", map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, 415, httpapi.CodeUnsupported},
			{"empty form pause", "POST", "/v1/tubes/t/pause", "", map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, 415, httpapi.CodeUnsupported},
			{"multipart lock", "POST", "/v1/locks/l/obtain", "--x--", map[string]string{"Content-Type": "multipart/form-data; boundary=x"}, 415, httpapi.CodeUnsupported},
			{"Sec-Fetch-Site cross-site", "POST", "/v1/tubes/t/jobs", job, map[string]string{"Content-Type": "application/json", "Sec-Fetch-Site": "cross-site"}, 403, httpapi.CodeCrossSite},
			{"foreign Origin", "POST", "/v1/tubes/t/jobs", job, map[string]string{"Content-Type": "application/json", "Origin": "http://evil.example"}, 403, httpapi.CodeCrossSite},
			{"Origin on another port", "DELETE", "/v1/jobs/1", "", map[string]string{"Origin": "http://127.0.0.1:1"}, 403, httpapi.CodeCrossSite},
			{"null Origin", "POST", "/v1/tubes/t/kick", "", map[string]string{"Origin": "null"}, 403, httpapi.CodeCrossSite},
			{"foreign Host", "GET", "/v1/stats", "", map[string]string{"Host": "rebound.example:7480"}, 421, httpapi.CodeMisdirected},
			{"foreign Host on the dashboard", "GET", "/", "", map[string]string{"Host": "rebound.example"}, 421, httpapi.CodeMisdirected},
			{"foreign Host on /metrics", "GET", "/metrics", "", map[string]string{"Host": "rebound.example"}, 421, httpapi.CodeMisdirected},
		} {
			r := rawDo(t, tc.method, ts.url+tc.path, tc.body, tc.header)
			if strings.HasPrefix(tc.path, "/v1/") {
				checkReply(t, tc.method, tc.path, r)
			}
			if r.status != tc.status || r.errCode() != tc.code {
				t.Errorf("%s: %d %s, want %d %s", tc.name, r.status, r.body, tc.status, tc.code)
			}
		}
		var st httpapi.TubeStats
		ts.c.do(req{method: "GET", path: "/v1/tubes/t"}).want(t, http.StatusOK, "").decode(t, &st)
		if st.TotalJobs != 1 || st.Ready != 0 || st.Delayed != 1 || st.Paused {
			t.Fatalf("after the refused requests: %+v, want the one delayed job only, not paused", st)
		}
		// What a page on the same origin, or a program, sends is served.
		for _, tc := range []struct {
			name   string
			header map[string]string
		}{
			{"same Origin", map[string]string{"Content-Type": "application/json", "Origin": ts.url, "Sec-Fetch-Site": "same-origin"}},
			{"localhost Host", map[string]string{"Content-Type": "application/json; charset=utf-8", "Host": "LOCALHOST:" + ts.url[strings.LastIndex(ts.url, ":")+1:]}},
		} {
			if r := rawDo(t, "POST", ts.url+"/v1/tubes/t/jobs", job, tc.header); r.status != http.StatusCreated {
				t.Errorf("%s: %d %s, want 201", tc.name, r.status, r.body)
			}
		}
	})
}

func TestAllowedHosts(t *testing.T) {
	ts := startServer(t, memStore(t), func(s *httpapi.Server) { s.AllowedHosts = []string{"queue.internal", "[fd00::1]"} })
	for host, want := range map[string]int{
		"queue.internal":      200,
		"QUEUE.internal.:80":  200,
		"[fd00::1]:7480":      200,
		"localhost":           421, // a list replaces the defaults
		"127.0.0.1":           421, // and Serve adds no listener when a list is given
		"evil.queue.internal": 421,
	} {
		if r := rawDo(t, "GET", ts.url+"/v1/stats", "", map[string]string{"Host": host}); r.status != want {
			t.Errorf("Host %s: %d %s, want %d", host, r.status, r.body, want)
		}
	}
	if r := rawDo(t, "GET", ts.url+"/healthz", "", map[string]string{"Host": "10.1.2.3:7480"}); r.status != 200 {
		t.Errorf("/healthz by address: %d %s, want 200 (probes name no host)", r.status, r.body)
	}
	all := startServer(t, memStore(t), func(s *httpapi.Server) { s.AllowedHosts = []string{"*"} })
	if r := rawDo(t, "GET", all.url+"/v1/stats", "", map[string]string{"Host": "anything.example"}); r.status != 200 {
		t.Errorf("with *: %d %s", r.status, r.body)
	}
}

func TestSecurityHeaders(t *testing.T) {
	ts := startServer(t, memStore(t), nil)
	for _, path := range []string{"/v1/stats", "/v1/tubes/nope", "/metrics", "/healthz", "/dashboard/panels", "/", "/dashboard/static/app.js", "/v1/openapi.json"} {
		r := rawDo(t, "GET", ts.url+path, "", nil)
		if got := r.header.Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("GET %s: X-Content-Type-Options %q", path, got)
		}
		if path != "/dashboard/static/app.js" && r.header.Get("Cache-Control") != "no-store" {
			t.Errorf("GET %s: Cache-Control %q, want no-store", path, r.header.Get("Cache-Control"))
		}
	}
	csp := rawDo(t, "GET", ts.url+"/", "", nil).header.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "script-src 'self'", "frame-ancestors 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("the dashboard's Content-Security-Policy %q lacks %q", csp, want)
		}
	}
}

// checkReply fails the test unless the document lists the reply's status
// for the operation.
func checkReply(t *testing.T, method, path string, r reply) {
	t.Helper()
	hr, err := http.NewRequest(method, "http://h"+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	route, _, err := spec(t).FindRoute(hr)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	if route.Operation.Responses.Status(r.status) == nil {
		t.Errorf("%s %s: the OpenAPI document lists no %d reply", method, path, r.status)
	}
}
