//go:build unix

package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// --access-log logs each gRPC call (method, code, duration_ms) beside each
// HTTP request, whose duration is in milliseconds too.
func TestAccessLogGRPCAndHTTP(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "rl.yaml")
	if err := os.WriteFile(cfg, []byte("domain: web\ndescriptors:\n  - key: ip\n    rate_limit:\n      unit: minute\n      requests_per_unit: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startServe(t, nil, "--store", "mem://", "--access-log", "--grpc-addr", "127.0.0.1:0", "--ratelimit-config", cfg)
	line := p.log.waitFor(t, `msg="serving Envoy's rate limit service"`, 30*time.Second)
	conn, err := grpc.NewClient(logValue(line, "grpc_addr"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	req := &rlsv3.RateLimitRequest{Domain: "web", Descriptors: []*rlv3.RateLimitDescriptor{{Entries: []*rlv3.RateLimitDescriptor_Entry{{Key: "ip", Value: "a"}}}}}
	if _, err := rlsv3.NewRateLimitServiceClient(conn).ShouldRateLimit(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	call := p.log.waitFor(t, `msg="grpc call"`, 30*time.Second)
	if m := logValue(call, "method"); m != "/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit" {
		t.Errorf("method %q in %q", m, call)
	}
	if c := logValue(call, "code"); c != "OK" {
		t.Errorf("code %q in %q", c, call)
	}
	if _, err := strconv.ParseFloat(logValue(call, "duration_ms"), 64); err != nil {
		t.Errorf("duration_ms in %q: %v", call, err)
	}

	resp, err := http.Get("http://" + p.httpAddr + "/v1/stats")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	hl := p.log.waitFor(t, `msg="http request"`, 30*time.Second)
	if _, err := strconv.ParseFloat(logValue(hl, "duration_ms"), 64); err != nil || logValue(hl, "status") != "200" {
		t.Errorf("the HTTP request's line %q: want status 200 and duration_ms a number (%v)", hl, err)
	}
}
