package envoyrl_test

import (
	"context"
	"fmt"
	"log"
	"net"
	"os"
	"path/filepath"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/hourglass-io/hourglass/memstore"
	"github.com/hourglass-io/hourglass/ratelimit"
	"github.com/hourglass-io/hourglass/server/envoyrl"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// Serve Envoy's rate limit service on the embedded engine with a
// configuration in envoyproxy/ratelimit's format, and ask it as Envoy does.
func Example() {
	dir, _ := os.MkdirTemp("", "envoyrl-example")
	defer os.RemoveAll(dir)
	cfgFile := filepath.Join(dir, "edge.yaml")
	os.WriteFile(cfgFile, []byte(`
domain: edge
descriptors:
  - key: remote_address
    rate_limit:
      unit: minute
      requests_per_unit: 2
`), 0o644)
	cfg, err := envoyrl.LoadConfig(cfgFile)
	if err != nil {
		fmt.Println(err)
		return
	}
	store, err := memstore.New(nil)
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	limiter, err := ratelimit.New(store.RateLimits(), nil)
	if err != nil {
		log.Fatal(err)
	}
	srv := &envoyrl.Server{Limiter: limiter, Config: cfg}
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	go srv.Serve(l)
	defer srv.Shutdown(context.Background())

	conn, _ := grpc.NewClient(l.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	defer conn.Close()
	client := rlsv3.NewRateLimitServiceClient(conn)
	req := &rlsv3.RateLimitRequest{Domain: "edge", Descriptors: []*rlv3.RateLimitDescriptor{
		{Entries: []*rlv3.RateLimitDescriptor_Entry{{Key: "remote_address", Value: "192.0.2.1"}}},
	}}
	for range 3 {
		resp, err := client.ShouldRateLimit(context.Background(), req)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(resp.GetOverallCode(), resp.GetStatuses()[0].GetLimitRemaining())
	}
	// Output:
	// OK 1
	// OK 0
	// OVER_LIMIT 0
}
