package envoyrl

import (
	"context"
	"crypto/subtle"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/hourglass-io/hourglass/ratelimit"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"
)

// ErrServerClosed is returned by Serve after Shutdown or Close.
var ErrServerClosed = errors.New("envoyrl: server closed")

// streamWorkers is the number of goroutines kept to serve calls (see
// init). 32 calls in flight on Redis found 8 too few: the stack growth of
// the goroutines started for the others cost a sixth of the process's CPU
// a call (docs/envoy.md, Figures).
const streamWorkers = 64

// window is the gRPC flow-control window of each stream and connection
// (see init): a fixed 1 MB instead of one estimated from pings.
const window = 1 << 20

// DefaultReloadInterval is the default of Server.ReloadInterval.
const DefaultReloadInterval = 2 * time.Second

// Server serves envoy.service.ratelimit.v3.RateLimitService, gRPC health
// checking and reflection. Set its fields before Serve and do not change
// them after. Its shape follows http.Server.
type Server struct {
	// Limiter decides; its failure policy is the service's: FailClosed
	// answers OVER_LIMIT when the store fails, FailOpen answers OK. Both
	// count MetricStoreErrors. Required.
	Limiter *ratelimit.Limiter
	// Config is the configuration. Required.
	Config *Config
	// Metrics, when set, receive the per-descriptor counters.
	Metrics *Metrics
	// Logger logs reloads and store failures; nil: slog.Default.
	Logger *slog.Logger
	// ServerOptions are added to the gRPC server's own, such as
	// grpc.ChainUnaryInterceptor for an access log.
	ServerOptions []grpc.ServerOption
	// AuthToken, when set, must come with every call but health checks as
	// "authorization: Bearer TOKEN" metadata.
	AuthToken string
	// TLSConfig, when set, serves over TLS.
	TLSConfig *tls.Config
	// ResponseHeaders adds x-ratelimit-limit, -remaining and -reset (of the
	// descriptor with the least remaining) to each response's
	// response_headers_to_add.
	ResponseHeaders bool
	// ReloadInterval is how often Serve checks the configuration files for
	// a change (default DefaultReloadInterval; negative: never).
	ReloadInterval time.Duration
	// OnReload, when set, is called after each reload that put a changed
	// configuration in force (err nil) or refused one (err wrapping
	// ErrConfig, or the file system's error).
	OnReload func(err error)

	rlsv3.UnimplementedRateLimitServiceServer

	mu      sync.Mutex
	grpc    *grpc.Server
	health  *health.Server
	closed  bool
	stop    chan struct{}
	watcher sync.WaitGroup
	metrics *Metrics
}

func (s *Server) logger() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.Default()
}

// init builds the gRPC server once.
func (s *Server) init() (*grpc.Server, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrServerClosed
	}
	if s.grpc != nil {
		return s.grpc, nil
	}
	if s.Limiter == nil || s.Config == nil {
		return nil, errors.New("envoyrl: Server.Limiter and Server.Config are required")
	}
	s.metrics = s.Metrics
	if s.metrics == nil {
		s.metrics = NewMetrics(nil)
	}
	// Streams are served by long-lived workers, whose stacks have grown
	// once, rather than a new goroutine each (whose stack grows on every
	// call: a tenth of the CPU of a decision); a stream finding every
	// worker busy still gets a goroutine of its own. A worker is busy for
	// the whole call, the store's round trip included, so there are as
	// many as the calls a busy server has in flight, not as cores.
	//
	// Flow-control windows are fixed: with the default dynamic window the
	// transport pings every connection once a round trip to estimate its
	// bandwidth, which for a connection with a call or two in flight (the
	// rate limit filter's) is a ping, its acknowledgement and a window
	// update a call, each its own write; the window starts at 64 KB and
	// only grows, and these messages are a few dozen bytes.
	opts := []grpc.ServerOption{
		grpc.NumStreamWorkers(streamWorkers),
		grpc.InitialWindowSize(window),
		grpc.InitialConnWindowSize(window),
	}
	if s.TLSConfig != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(s.TLSConfig)))
	}
	if s.AuthToken != "" {
		opts = append(opts, grpc.UnaryInterceptor(s.authUnary), grpc.StreamInterceptor(s.authStream))
	}
	g := grpc.NewServer(append(opts, s.ServerOptions...)...)
	rlsv3.RegisterRateLimitServiceServer(g, s)
	s.health = health.NewServer()
	s.health.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	s.health.SetServingStatus(rlsv3.RateLimitService_ServiceDesc.ServiceName, healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(g, s.health)
	reflection.Register(g)
	s.grpc = g
	s.stop = make(chan struct{})
	if iv := s.reloadInterval(); iv > 0 {
		s.watcher.Go(func() { s.watch(iv) })
	}
	return g, nil
}

func (s *Server) reloadInterval() time.Duration {
	if s.ReloadInterval == 0 {
		return DefaultReloadInterval
	}
	return s.ReloadInterval
}

// watch reloads the configuration every interval until the server stops.
func (s *Server) watch(iv time.Duration) {
	t := time.NewTicker(iv)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			s.Reload()
		}
	}
}

// Reload reloads the configuration now, logs the result and counts it.
// A bad configuration leaves the one in force.
func (s *Server) Reload() error {
	changed, err := s.Config.Reload()
	switch {
	case err != nil:
		s.logger().Error("rate limit configuration refused; the previous one stays in force", "path", s.Config.Path(), "err", err)
		s.metrics.reloaded(err)
		if s.OnReload != nil {
			s.OnReload(err)
		}
	case changed:
		s.logger().Info("rate limit configuration reloaded", "path", s.Config.Path(), "domains", len(s.Config.Domains()))
		s.metrics.reloaded(nil)
		if s.OnReload != nil {
			s.OnReload(nil)
		}
	}
	return err
}

// Serve serves on l until Shutdown or Close, and returns ErrServerClosed
// then.
func (s *Server) Serve(l net.Listener) error {
	g, err := s.init()
	if err != nil {
		l.Close()
		return err
	}
	err = g.Serve(l)
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed || err == nil || errors.Is(err, grpc.ErrServerStopped) {
		return ErrServerClosed
	}
	return err
}

// Shutdown stops accepting calls, marks the health service NOT_SERVING and
// waits for the calls in flight; when ctx ends first it closes them and
// returns ctx's error.
func (s *Server) Shutdown(ctx context.Context) error {
	g := s.shut()
	if g == nil {
		return nil
	}
	done := make(chan struct{})
	go func() { g.GracefulStop(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		g.Stop()
		<-done
		return ctx.Err()
	}
}

// Close stops the server at once, ending the calls in flight.
func (s *Server) Close() error {
	if g := s.shut(); g != nil {
		g.Stop()
	}
	return nil
}

func (s *Server) shut() *grpc.Server {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	g := s.grpc
	if g != nil {
		s.health.Shutdown()
		close(s.stop)
	}
	s.mu.Unlock()
	s.watcher.Wait()
	return g
}

func (s *Server) authorized(ctx context.Context, method string) error {
	if strings.HasPrefix(method, "/grpc.health.v1.Health/") {
		return nil
	}
	md, _ := metadata.FromIncomingContext(ctx)
	for _, v := range md.Get("authorization") {
		tok, ok := strings.CutPrefix(v, "Bearer ")
		if ok && subtle.ConstantTimeCompare([]byte(tok), []byte(s.AuthToken)) == 1 {
			return nil
		}
	}
	return status.Error(codes.Unauthenticated, "missing or wrong bearer token")
}

func (s *Server) authUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	if err := s.authorized(ctx, info.FullMethod); err != nil {
		return nil, err
	}
	return h(ctx, req)
}

func (s *Server) authStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	if err := s.authorized(ss.Context(), info.FullMethod); err != nil {
		return err
	}
	return h(srv, ss)
}
