package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// serve --grpc-addr answers Envoy's rate limit service from the
// configuration file, and refuses a non-loopback address without a token.
func TestServeEnvoyRateLimit(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "rl.yaml")
	if err := os.WriteFile(cfg, []byte("domain: web\ndescriptors:\n  - key: ip\n    rate_limit:\n      unit: minute\n      requests_per_unit: 1\n"), 0o644); err != nil {
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
