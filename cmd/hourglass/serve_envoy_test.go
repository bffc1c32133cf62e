package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/internal/testkit/testcert"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
)

// serve --grpc-addr answers Envoy's rate limit service from the
// configuration file, and refuses a non-loopback address without a token.
func TestServeEnvoyRateLimit(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "rl.yaml")
	if err := os.WriteFile(cfg, []byte("domain: web\ndescriptors:\n  - key: ip\n    rate_limit:\n      unit: minute\n      requests_per_unit: 1\n"+
		"  - key: big\n    rate_limit: {unit: second, requests_per_unit: 1000000000}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startServe(t, nil, "--store", "mem://", "--grpc-addr", "127.0.0.1:0", "--ratelimit-config", cfg)
	line := p.log.waitFor(t, `msg="serving Envoy's rate limit service"`, 30*time.Second)
	conn, err := grpc.NewClient(logValue(line, "grpc_addr"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := rlsv3.NewRateLimitServiceClient(conn)
	req := &rlsv3.RateLimitRequest{Domain: "web", Descriptors: []*rlv3.RateLimitDescriptor{{Entries: []*rlv3.RateLimitDescriptor_Entry{{Key: "ip", Value: "a"}}}}}
	for _, want := range []rlsv3.RateLimitResponse_Code{rlsv3.RateLimitResponse_OK, rlsv3.RateLimitResponse_OVER_LIMIT} {
		r, err := c.ShouldRateLimit(t.Context(), req)
		if err != nil || r.GetOverallCode() != want {
			t.Fatalf("ShouldRateLimit: %v %v, want %v", r.GetOverallCode(), err, want)
		}
	}
	// A billion a second, as envoyproxy/ratelimit loads it.
	big := &rlsv3.RateLimitRequest{Domain: "web", Descriptors: []*rlv3.RateLimitDescriptor{{Entries: []*rlv3.RateLimitDescriptor_Entry{{Key: "big", Value: "a"}}}}}
	if r, err := c.ShouldRateLimit(t.Context(), big); err != nil || r.GetOverallCode() != rlsv3.RateLimitResponse_OK || r.GetStatuses()[0].GetLimitRemaining() != 999_999_999 {
		t.Fatalf("a billion a second: %v %v, want OK with 999999999 remaining", r, err)
	}
	// The dashboard's rate limit panel lists the descriptor and its hits.
	served := p.log.waitFor(t, `msg="hourglass serving"`, 30*time.Second)
	resp, err := http.Get("http://" + logValue(served, "http_addr") + "/dashboard/panels?view=limits")
	if err != nil {
		t.Fatal(err)
	}
	panel, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(panel), `data-domain="web" data-descriptor="ip"`) || !strings.Contains(string(panel), `<td class="n total" data-label="hits">2</td>`) {
		t.Errorf("the rate limit panel lacks the descriptor ip of web with 2 hits:\n%s", panel)
	}

	e := launchServe(t, nil, "--store", "mem://", "--grpc-addr", "0.0.0.0:0", "--ratelimit-config", cfg)
	if code := e.wait(t, 20*time.Second); code != 1 || !strings.Contains(e.log.String(), "is beyond loopback: refusing") {
		t.Fatalf("serve --grpc-addr 0.0.0.0:0 without a token exited %d:\n%s", code, e.log)
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("domain: web\ndescriptors:\n  - key: ip\n    rate_limit: {unit: fortnight, requests_per_unit: 1}\n"), 0o644)
	b := launchServe(t, nil, "--store", "mem://", "--grpc-addr", "127.0.0.1:0", "--ratelimit-config", bad)
	if code := b.wait(t, 20*time.Second); code != 1 || !strings.Contains(b.log.String(), "bad.yaml:4") {
		t.Fatalf("serve with a bad configuration exited %d:\n%s", code, b.log)
	}
}

// With --tls-client-ca every listener wants a client certificate signed by
// one of the CAs: the HTTP API, the beanstalkd protocol and the gRPC
// service refuse a client without one and serve a client with one, and
// clients so authenticated may be served beyond loopback without a token.
func TestServeMutualTLS(t *testing.T) {
	dir := t.TempDir()
	cert, key, pool := testcert.Write(t, dir)
	cfg := filepath.Join(dir, "rl.yaml")
	if err := os.WriteFile(cfg, []byte("domain: web\ndescriptors:\n  - key: ip\n    rate_limit:\n      unit: minute\n      requests_per_unit: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := launchServe(t, nil, "--store", "mem://", "--tls-cert", cert, "--tls-key", key, "--tls-client-ca", cert,
		"--grpc-addr", "127.0.0.1:0", "--ratelimit-config", cfg)
	grpcLine := p.log.waitFor(t, `msg="serving Envoy's rate limit service"`, 30*time.Second)
	line := p.log.waitFor(t, `msg="hourglass serving"`, 30*time.Second)
	if logValue(line, "client_certs") != "true" {
		t.Fatalf("start line %q: want client_certs=true", line)
	}
	pair, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		t.Fatal(err)
	}
	anonymous := &tls.Config{RootCAs: pool}
	known := &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}}

	get := func(cfg *tls.Config) (int, error) {
		hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
		resp, err := hc.Get("https://" + logValue(line, "http_addr") + "/v1/stats")
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	if _, err := get(anonymous); err == nil {
		t.Error("HTTP without a client certificate was served")
	}
	if code, err := get(known); err != nil || code != http.StatusOK {
		t.Errorf("HTTP with a client certificate: %d %v, want 200", code, err)
	}

	put := func(cfg *tls.Config) (string, error) {
		nc, err := tls.Dial("tcp", logValue(line, "beanstalk_addr"), cfg)
		if err != nil {
			return "", err
		}
		defer nc.Close()
		nc.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(nc, "put 0 0 60 2\r\nhi\r\n")
		return bufio.NewReader(nc).ReadString('\n')
	}
	if reply, err := put(anonymous); err == nil {
		t.Errorf("beanstalkd without a client certificate answered %q", reply)
	}
	if reply, err := put(known); err != nil || !strings.HasPrefix(reply, "INSERTED ") {
		t.Errorf("beanstalkd with a client certificate: %q %v", reply, err)
	}

	ask := func(cfg *tls.Config) error {
		conn, err := grpc.NewClient(logValue(grpcLine, "grpc_addr"), grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
		if err != nil {
			return err
		}
		defer conn.Close()
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		_, err = rlsv3.NewRateLimitServiceClient(conn).ShouldRateLimit(ctx, &rlsv3.RateLimitRequest{Domain: "web",
			Descriptors: []*rlv3.RateLimitDescriptor{{Entries: []*rlv3.RateLimitDescriptor_Entry{{Key: "ip", Value: "a"}}}}})
		return err
	}
	if err := ask(anonymous); err == nil {
		t.Error("gRPC without a client certificate was served")
	}
	if err := ask(known); err != nil {
		t.Errorf("gRPC with a client certificate: %v", err)
	}

	if authenticated("", &tls.Config{}) || !authenticated("", &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert}) || !authenticated("tok", nil) {
		t.Error("authenticated: only a token or required client certificates may open a listener beyond loopback")
	}
	if code := launchServe(t, nil, "--store", "mem://", "--tls-client-ca", cert).wait(t, 20*time.Second); code != 2 {
		t.Errorf("--tls-client-ca without --tls-cert exited %d, want 2 (usage)", code)
	}
}
