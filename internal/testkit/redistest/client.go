package redistest

import (
	"testing"

	"github.com/redis/go-redis/v9"
)

// StandaloneClient returns a client of the shared standalone server, with
// go-redis's retries off (as hourglass uses it), closed when the test ends.
func StandaloneClient(t testing.TB) *redis.Client {
	t.Helper()
	srv, err := SharedStandalone()
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	return c
}

// ClusterClient returns a client of the shared 3-master cluster, with
// go-redis's retries off, closed when the test ends.
func ClusterClient(t testing.TB) *redis.ClusterClient {
	t.Helper()
	cl, err := SharedCluster()
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs(), MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	return c
}
