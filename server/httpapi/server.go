package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hourglass-io/hourglass/lock"
	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/ratelimit"
	"github.com/hourglass-io/hourglass/schedule"
	"github.com/hourglass-io/hourglass/ttlhash"
)

// ErrServerClosed is returned by Serve after Shutdown.
var ErrServerClosed = http.ErrServerClosed

// Defaults used when the corresponding Server field is zero.
const (
	// DefaultMaxWait bounds a long poll (a reserve's timeout_ms).
	DefaultMaxWait = 30 * time.Second
	// DefaultMaxWaits caps the long polls in progress at once (see
	// Server.MaxWaits).
	DefaultMaxWaits = 4096
	// DefaultMaxReserveTubes caps the tubes one reserve may name (see
	// Server.MaxReserveTubes).
	DefaultMaxReserveTubes = 256
	// DefaultReadHeaderTimeout bounds reading a request's headers.
	DefaultReadHeaderTimeout = 10 * time.Second
	// DefaultReadTimeout bounds reading a whole request, body included.
	DefaultReadTimeout = 60 * time.Second
	// DefaultIdleTimeout closes a keep-alive connection idle this long.
	DefaultIdleTimeout = 2 * time.Minute
	// maxSmallBody bounds the JSON body of every request but a put.
	maxSmallBody = 64 << 10
)

// Server serves the HTTP/JSON API, the dashboard and the metrics over a
// queue. Its zero value, with Queue set, is ready to use. A Server is safe
// for concurrent use; its fields must not change once Handler or Serve has
// been called.
type Server struct {
	// Queue holds the jobs. Required.
	Queue *queue.Queue
	// Hashes, when set, serves the expiring hash fields and their expiry
	// events under /v1/hashes and /v1/hash-groups. Sweeping (emitting the
	// events) is not the Server's: run a ttlhash.Sweeper beside it.
	Hashes *ttlhash.Hashes
	// Logger receives store failures and internal errors. Default
	// slog.Default().
	Logger *slog.Logger
	// AuthToken, when not empty, is the bearer token every /v1 call, every
	// dashboard panel and action and /metrics must carry
	// ("Authorization: Bearer <token>"). It is compared in constant time.
	AuthToken string
	// MaxWait bounds how long a long poll (a reserve) waits; a longer
	// timeout asked for is cut to it. Default DefaultMaxWait.
	MaxWait time.Duration
	// MaxWaits caps the long polls waiting at once: reserves and hash
	// event reads with a timeout_ms above 0, lock obtains with a wait_ms
	// above 0 and rate limit waits. One beyond it is answered 429
	// too_many_waits at once (with Retry-After: 1). Default
	// DefaultMaxWaits.
	MaxWaits int
	// MaxReserveTubes caps the tubes one reserve may name; more are
	// answered 400 too_many_tubes. Default DefaultMaxReserveTubes.
	MaxReserveTubes int
	// Metrics records what the server does and serves GET /metrics.
	// Default: a fresh Metrics of its own (NewMetrics(nil)), set by the
	// first call of Handler or Serve.
	Metrics *Metrics
	// Health, when set, answers GET /healthz: nil means healthy (200),
	// an error means 503. Default: a Stats call to the store.
	Health func(ctx context.Context) error
	// ReadHeaderTimeout, ReadTimeout and IdleTimeout are those of the
	// http.Server that Serve runs. Defaults DefaultReadHeaderTimeout,
	// DefaultReadTimeout and DefaultIdleTimeout.
	ReadHeaderTimeout, ReadTimeout, IdleTimeout time.Duration
	// Limiter decides the rate limits of /v1/limits; nil: no such routes.
	// Typically ratelimit.New(backend.Limits, nil).
	Limiter *ratelimit.Limiter
	// NamedLimits are the limits a request may name instead of giving
	// them (hourglass serve --limit NAME=SPEC; see ParseNamedLimit).
	NamedLimits map[string][]ratelimit.Limit
	// AllowedHosts are the names the Host header of a request may carry
	// (a port in it is ignored); any other is answered 421
	// misdirected_host, against DNS rebinding. "*" allows every host.
	// Nil: DefaultAllowedHosts, plus the host named by the address of each
	// listener given to Serve.
	AllowedHosts []string
	hosts        hostSet

	limitActivity limitActivity // the rate limit panel's counts
	// EnvoyDescriptors, when set, lists the descriptors of Envoy's rate
	// limit service (hourglass serve --grpc-addr) for the rate limit
	// panel: envoyrl.Server.Descriptors, converted.
	EnvoyDescriptors func() []EnvoyDescriptor
	// Locks, when set, serves locks and semaphores under /v1/locks (see
	// locks.go): obtains go through it, and release, refresh and ttl act
	// on a lease by its token (Client.Release, Refresh, TTL). Typically
	// lock.New(backend.Locks, nil).
	Locks *lock.Client
	// StoreKind names the back end for the dashboard's header: "memory",
	// "file" or "redis" (hourglass.Backend.Kind). Empty: not shown.
	StoreKind string
	// Schedules, when set, serves schedules under /v1/schedules (see
	// schedules.go), managed through it. Typically
	// schedule.New(metrics.WatchSchedules(backend.Schedules), nil), so
	// that the triggers count in the metrics. Firing their ticks is not
	// the Server's: run the Client's Run beside it (hourglass serve does).
	Schedules *schedule.Client
	// StoreFacts, when set, tells the dashboard's store view what the
	// store says of itself (hourglass serve: Redis's version, memory and
	// clients; the embedded engine's log size and last snapshot).
	StoreFacts func(ctx context.Context) ([]StoreFact, error)
	// AccessLog, when set, receives one info record per HTTP request
	// once it is answered: method, path, status, bytes, duration, remote.
	AccessLog *slog.Logger
	// Wrap, when set, wraps the server's handler, outermost: how serve
	// traces every request (otelhttp, docs/tracing.md).
	Wrap func(http.Handler) http.Handler

	initOnce sync.Once
	started  time.Time  // when the Server was first used: the dashboard's uptime
	locks    lockServer // the state of the locks' routes
	handler  http.Handler
	stop     context.Context // cancelled by Shutdown: long polls end
	cancel   context.CancelFunc

	hx hashState // hashes.go

	sampler sampler       // series.go
	sampled chan struct{} // closed when sampleLoop has returned

	waits atomic.Int64 // long polls in progress, against MaxWaits

	mu  sync.Mutex
	hs  *http.Server
	err error // why the Server cannot run (no Queue)
}

func (s *Server) init() {
	s.initOnce.Do(func() {
		s.stop, s.cancel = context.WithCancel(context.Background())
		s.started = time.Now()
		if s.Queue == nil {
			s.err = errors.New("httpapi: Server.Queue is nil")
			s.handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				writeError(w, r, apiError{http.StatusInternalServerError, CodeInternal, s.err.Error(), 0})
			})
			return
		}
		if s.Metrics == nil {
			s.Metrics = NewMetrics(nil)
		}
		s.Metrics.watchQueue(s.Queue)
		s.sampled = make(chan struct{})
		go s.sampleLoop()
		hosts := s.AllowedHosts
		if hosts == nil {
			hosts = DefaultAllowedHosts
		}
		for _, h := range hosts {
			s.hosts.add(h)
		}
		s.handler = s.guard(s.routes())
		if s.AccessLog != nil {
			s.handler = accessLog(s.AccessLog, s.handler)
		}
		if s.Wrap != nil {
			s.handler = s.Wrap(s.handler)
		}
		s.hs = &http.Server{
			Handler:           s.handler,
			ReadHeaderTimeout: or(s.ReadHeaderTimeout, DefaultReadHeaderTimeout),
			ReadTimeout:       or(s.ReadTimeout, DefaultReadTimeout),
			IdleTimeout:       or(s.IdleTimeout, DefaultIdleTimeout),
			ErrorLog:          slog.NewLogLogger(s.logger().Handler(), slog.LevelWarn),
			ConnState:         s.Metrics.httpConnState,
		}
	})
}

func or(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

func (s *Server) logger() *slog.Logger {
	if s.Logger == nil {
		return slog.Default()
	}
	return s.Logger
}

func (s *Server) maxWait() time.Duration { return or(s.MaxWait, DefaultMaxWait) }

func orInt(n, def int) int {
	if n <= 0 {
		return def
	}
	return n
}

// enterWait counts a long poll against MaxWaits; the returned function
// ends it. Beyond the cap it answers 429 too_many_waits.
func (s *Server) enterWait() (leave func(), err error) {
	if s.waits.Add(1) > int64(orInt(s.MaxWaits, DefaultMaxWaits)) {
		s.waits.Add(-1)
		return nil, apiError{http.StatusTooManyRequests, CodeTooManyWaits,
			sprintf("%d long polls are waiting already, the most this server allows", orInt(s.MaxWaits, DefaultMaxWaits)), time.Second}
	}
	return func() { s.waits.Add(-1) }, nil
}

// Handler returns the handler of every route: /v1/..., /metrics, /healthz
// and the dashboard at /. Mount it on a mux of your own, or let Serve run it.
// Without Serve, the timeouts of Server are those of the caller's
// http.Server, and Shutdown only ends the long polls.
func (s *Server) Handler() http.Handler {
	s.init()
	return s.handler
}

// Serve accepts HTTP connections on l and serves Handler on them, as
// http.Server.Serve does, with the Server's timeouts. It returns
// ErrServerClosed after Shutdown.
func (s *Server) Serve(l net.Listener) error {
	if err := s.listen(l); err != nil {
		return err
	}
	return s.hs.Serve(l)
}

// listen readies the Server to serve on l: it closes l and fails when the
// Server's configuration does not hold.
func (s *Server) listen(l net.Listener) error {
	s.init()
	if s.err != nil {
		l.Close()
		return s.err
	}
	if s.AllowedHosts == nil {
		s.hosts.addListener(l)
	}
	return nil
}

// ServeTLS is Serve over TLS with the certificate and key in the named
// PEM files, as http.Server.ServeTLS.
func (s *Server) ServeTLS(l net.Listener, certFile, keyFile string) error {
	if err := s.listen(l); err != nil {
		return err
	}
	return s.hs.ServeTLS(l, certFile, keyFile)
}

// Shutdown ends the long polls in flight (a waiting reserve answers 503
// shutting_down), stops accepting and waits for the requests in flight, as
// http.Server.Shutdown does, and for the dashboard's sampler of the store's
// counters to stop, or returns ctx.Err(). Reservations made over HTTP are
// not returned: each lasts its TTR (see the package docs).
func (s *Server) Shutdown(ctx context.Context) error {
	s.init()
	s.cancel()
	if s.hs == nil {
		return nil
	}
	err := s.hs.Shutdown(ctx)
	select {
	case <-s.sampled:
	case <-ctx.Done():
		return ctx.Err()
	}
	return err
}

// Close closes the listeners and connections at once, as http.Server.Close,
// and stops the dashboard's sampler.
func (s *Server) Close() error {
	s.init()
	s.cancel()
	if s.hs == nil {
		return nil
	}
	err := s.hs.Close()
	<-s.sampled
	return err
}
