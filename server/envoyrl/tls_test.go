package envoyrl_test

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"testing"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/hourglass-io/hourglass/internal/testkit/backendtest"
	"github.com/hourglass-io/hourglass/internal/testkit/testcert"
	"github.com/hourglass-io/hourglass/server/envoyrl"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
)

// Over TLS with a token, as serve runs it beyond loopback.
func TestTLS(t *testing.T) {
	certFile, keyFile, pool := testcert.Write(t, t.TempDir())
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	srv := &envoyrl.Server{Limiter: backendtest.Limiter(t, backendtest.Memory(t).RateLimits(), nil), Config: load(t, "testdata/basic.yaml"),
		AuthToken: "tok", TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, ReloadInterval: -1}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }()
	conn, err := grpc.NewClient(l.Addr().String(), grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: pool})))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx := metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer tok")
	r, err := rlsv3.NewRateLimitServiceClient(conn).ShouldRateLimit(ctx, &rlsv3.RateLimitRequest{Domain: "edge",
		Descriptors: []*rlv3.RateLimitDescriptor{desc("remote_address", "a")}})
	if err != nil || r.GetOverallCode() != rlsv3.RateLimitResponse_OK {
		t.Fatalf("over TLS: %v %v", r, err)
	}
	// Close ends it at once; Serve returns ErrServerClosed, and so does a
	// later Serve.
	srv.Close()
	if err := <-done; !errors.Is(err, envoyrl.ErrServerClosed) {
		t.Fatalf("Serve after Close: %v", err)
	}
	l2, _ := net.Listen("tcp", "127.0.0.1:0")
	if err := srv.Serve(l2); !errors.Is(err, envoyrl.ErrServerClosed) {
		t.Fatalf("Serve on a closed server: %v", err)
	}
	ctx2, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx2); err != nil {
		t.Fatalf("Shutdown after Close: %v", err)
	}
}
