package envoyrl

import (
	"strconv"
	"testing"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/hourglass-io/hourglass/internal/testkit/backendtest"
)

// BenchmarkShouldRateLimit is the service's own cost of a decision,
// without gRPC: one descriptor of 1,000 values, on the embedded engine.
func BenchmarkShouldRateLimit(b *testing.B) {
	cfg, err := LoadConfig("testdata/basic.yaml")
	if err != nil {
		b.Fatal(err)
	}
	srv := &Server{Limiter: backendtest.Limiter(b, backendtest.Memory(b).RateLimits(), nil), Config: cfg}
	srv.metrics = NewMetrics(nil)
	reqs := make([]*rlsv3.RateLimitRequest, 1000)
	for i := range reqs {
		reqs[i] = &rlsv3.RateLimitRequest{Domain: "edge", Descriptors: []*rlv3.RateLimitDescriptor{{
			Entries: []*rlv3.RateLimitDescriptor_Entry{{Key: "remote_address", Value: strconv.Itoa(i)}}}}}
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := srv.ShouldRateLimit(b.Context(), reqs[i%len(reqs)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
