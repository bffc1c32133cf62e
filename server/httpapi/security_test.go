package httpapi_test

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/internal/testkit/testcert"
	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/server/httpapi"
)

func TestAuthToken(t *testing.T) {
	const token = "s3cret-token"
	ts := startServer(t, memStore(t), func(s *httpapi.Server) { s.AuthToken = token })
	anon := newClient(t, ts.url, "")
	wrong := newClient(t, ts.url, "s3cret-tokem")
	for _, path := range []string{"/v1/stats", "/v1/tubes", "/v1/jobs/1", "/dashboard/panels", "/dashboard/info", "/metrics"} {
		for _, c := range []*client{anon, wrong} {
			r := c.do(req{method: "GET", path: path})
			if r.status != http.StatusUnauthorized || r.errCode() != httpapi.CodeUnauthorized || r.header.Get("WWW-Authenticate") == "" {
				t.Errorf("GET %s with token %q: %d %s, want 401 unauthorized with WWW-Authenticate", path, c.token, r.status, r.body)
			}
		}
	}
	// Writes are refused and change nothing.
	anon.do(req{method: "POST", path: "/v1/tubes/t/jobs", json: map[string]any{"body": "x"}}).want(t, http.StatusUnauthorized, httpapi.CodeUnauthorized)
	var st struct {
		TotalJobs int `json:"total_jobs"`
	}
	ts.c.do(req{method: "GET", path: "/v1/stats"}).want(t, http.StatusOK, "").decode(t, &st)
	if st.TotalJobs != 0 {
		t.Fatalf("a put without the token stored a job")
	}
	ts.c.put(t, "t", map[string]any{"body": "x"})
	if r := ts.c.do(req{method: "GET", path: "/metrics"}); r.status != http.StatusOK {
		t.Fatalf("/metrics with the token: %d", r.status)
	}
	// Open: health, the document, the dashboard's page (its panels are not).
	for _, path := range []string{"/healthz", "/v1/openapi.json", "/"} {
		if r := anon.do(req{method: "GET", path: path}); r.status != http.StatusOK {
			t.Errorf("GET %s without the token: %d, want 200", path, r.status)
		}
	}
}

func TestOpenAPIServed(t *testing.T) {
	ts := startServer(t, memStore(t), nil)
	r := ts.c.do(req{method: "GET", path: "/v1/openapi.json"})
	if r.status != http.StatusOK || string(r.body) != string(httpapi.OpenAPI()) {
		t.Fatalf("GET /v1/openapi.json: %d, %d bytes; want 200 and the document", r.status, len(r.body))
	}
	spec(t) // loads and validates it
}

// TestSlowClients: a client that sends half a header, or stays idle, is
// disconnected, not kept.
func TestSlowClients(t *testing.T) {
	ts := startServer(t, memStore(t), func(s *httpapi.Server) {
		s.ReadHeaderTimeout = 200 * time.Millisecond
		s.IdleTimeout = 200 * time.Millisecond
	})
	addr := ts.url[len("http://"):]
	for _, tc := range []struct{ name, send string }{
		{"half a header", "GET /v1/stats HTTP/1.1\r\nHost: x\r\n"},
		{"idle after a request", "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nc, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			if _, err := io.WriteString(nc, tc.send); err != nil {
				t.Fatal(err)
			}
			// The server closes the connection: reading ends with EOF
			// long before this deadline.
			nc.SetReadDeadline(time.Now().Add(20 * time.Second))
			_, err = io.Copy(io.Discard, nc)
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatal("the server kept the connection open")
			}
		})
	}
}

func TestServeTLS(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, pool := testcert.Write(t, dir)
	q, err := queue.New(memStore(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	srv := &httpapi.Server{Queue: q}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.ServeTLS(l, certFile, keyFile) }()
	defer func() {
		srv.Close()
		<-served
	}()
	c := newClient(t, "https://"+l.Addr().String(), "")
	c.hc.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
	c.put(t, "tls", map[string]any{"body": "over TLS"})
	r := c.reserve(t, []string{"tls"}, 0)
	if r.Job.Body == nil || *r.Job.Body != "over TLS" {
		t.Fatalf("reserved %+v over TLS", r.Job)
	}
	// Plain HTTP on the TLS port gets no API.
	plain := &http.Client{Timeout: 10 * time.Second}
	if resp, err := plain.Get("http://" + l.Addr().String() + "/v1/stats"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Fatal("plain HTTP was served on the TLS listener")
		}
	}
}
