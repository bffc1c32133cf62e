package httpapi_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/server/httpapi"
)

func TestAuthToken(t *testing.T) {
	const token = "s3cret-token"
	ts := startServer(t, memStore(t), func(s *httpapi.Server) { s.AuthToken = token })
	anon := newClient(t, ts.url, "")
	wrong := newClient(t, ts.url, "s3cret-tokem")
	for _, path := range []string{"/v1/stats", "/v1/tubes", "/v1/jobs/1", "/dashboard/panels", "/metrics"} {
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
	certFile, keyFile, pool := selfSigned(t, dir)
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

// selfSigned writes a certificate for 127.0.0.1 and its key into dir.
func selfSigned(t testing.TB, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "hourglass test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA:         true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}
