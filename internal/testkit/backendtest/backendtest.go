// Package backendtest opens the back ends for the tests of the packages
// above them (servers, commands): the embedded engine in memory, and
// redisstore on the shared standalone redis-server and the shared 3-master
// cluster of internal/testkit/redistest, each under the test's own key prefix.
// Each store is closed when its test ends. A package using it has
// redistest.Main as its TestMain (or calls redistest.StopShared in its
// own).
package backendtest

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/hourglass-io/hourglass/internal/testkit/redistest"
	"github.com/hourglass-io/hourglass/memstore"
	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/ratelimit"
	"github.com/hourglass-io/hourglass/redisstore"
	"github.com/redis/go-redis/v9"
)

// Backend is a back end a test runs on, by name: Open returns a fresh
// store of it (a *memstore.Store or a *redisstore.Store).
type Backend struct {
	Name string
	Open func(t testing.TB) queue.Store
}

// The back ends.
var (
	MemoryBackend  = Backend{"mem", func(t testing.TB) queue.Store { return Memory(t) }}
	RedisBackend   = Backend{"redis", func(t testing.TB) queue.Store { return Redis(t) }}
	ClusterBackend = Backend{"cluster", func(t testing.TB) queue.Store { return Cluster(t) }}
)

// Logger returns a logger writing to t's log at level, so that a failing
// test shows what the code under test said.
func Logger(t testing.TB, level slog.Level) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: level}))
}

type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// Memory returns an in-memory embedded engine.
func Memory(t testing.TB) *memstore.Store {
	t.Helper()
	return MemoryWith(t, nil)
}

// MemoryWith returns an in-memory embedded engine with opts.
func MemoryWith(t testing.TB, opts *memstore.Options) *memstore.Store {
	t.Helper()
	s, err := memstore.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// Limiter returns a rate limiter over s with opts.
func Limiter(t testing.TB, s ratelimit.Store, opts *ratelimit.Options) *ratelimit.Limiter {
	t.Helper()
	l, err := ratelimit.New(s, opts)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// Redis returns a store on the shared standalone redis-server.
func Redis(t testing.TB) *redisstore.Store {
	t.Helper()
	return Open(t, redistest.StandaloneClient(t), nil)
}

// Cluster returns a store on the shared 3-master cluster.
func Cluster(t testing.TB) *redisstore.Store {
	t.Helper()
	return Open(t, redistest.ClusterClient(t), nil)
}

// Open returns a store on c with opts (nil: the defaults), under the
// test's own key prefix when opts give none: stores opened with the same
// Prefix share their data.
func Open(t testing.TB, c redis.UniversalClient, opts *redisstore.Options) *redisstore.Store {
	t.Helper()
	var o redisstore.Options
	if opts != nil {
		o = *opts
	}
	if o.Prefix == "" {
		o.Prefix = redistest.Prefix(t)
	}
	s, err := redisstore.New(t.Context(), c, &o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
