// Package backendtest opens the back ends for the tests of the packages
// above them (servers, commands): the embedded engine in memory, and
// redisstore on the shared standalone redis-server and the shared 3-master
// cluster of internal/redistest, each under the test's own key prefix.
// Each store is closed when its test ends. A package using it calls
// redistest.StopShared in its TestMain.
package backendtest

import (
	"testing"

	"github.com/hourglass-io/hourglass/internal/redistest"
	"github.com/hourglass-io/hourglass/memstore"
	"github.com/hourglass-io/hourglass/ratelimit"
	"github.com/hourglass-io/hourglass/redisstore"
	"github.com/redis/go-redis/v9"
)

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
	return open(t, redistest.StandaloneClient(t))
}

// Cluster returns a store on the shared 3-master cluster.
func Cluster(t testing.TB) *redisstore.Store {
	t.Helper()
	return open(t, redistest.ClusterClient(t))
}

func open(t testing.TB, c redis.UniversalClient) *redisstore.Store {
	t.Helper()
	s, err := redisstore.New(t.Context(), c, &redisstore.Options{Prefix: redistest.Prefix(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
