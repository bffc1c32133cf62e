package redisstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/internal/testkit/backendtest"
	"github.com/hourglass-io/hourglass/internal/testkit/redistest"
	"github.com/hourglass-io/hourglass/internal/testkit/storetest"
	"github.com/hourglass-io/hourglass/memstore"
	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/redisstore"
	"github.com/redis/go-redis/v9"
)

func TestMain(m *testing.M) {
	storetest.RunDebounceChild(redisPutter)       // a putter process of BenchmarkDebounceProcesses
	storetest.RunWindowsChild(redisWindowsClient) // a caller process of BenchmarkKeyWindowsProcesses
	redistest.Main(m)
}

// topology is a Redis to run a test on.
type topology struct {
	name   string
	client func(t testing.TB) redis.UniversalClient
}

var topologies = []topology{
	{"standalone", standaloneClient},
	{"cluster", clusterClient},
}

func standaloneClient(t testing.TB) redis.UniversalClient { return redistest.StandaloneClient(t) }

func clusterClient(t testing.TB) redis.UniversalClient { return redistest.ClusterClient(t) }

// ownServer starts a redis-server for this test alone and returns a client
// of it and a Queue on it.
func ownServer(t testing.TB, opts *redis.Options) (*redistest.Server, *redis.Client, *queue.Queue) {
	t.Helper()
	srv := redistest.Standalone(t)
	o := redis.Options{MaxRetries: -1}
	if opts != nil {
		o = *opts
	}
	o.Addr = srv.Addr
	c := redis.NewClient(&o)
	t.Cleanup(func() { c.Close() })
	s, err := redisstore.New(context.Background(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	q, err := queue.New(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Close() })
	return srv, c, q
}

// newStore returns a store under a prefix of its own on c.
func newStore(t testing.TB, c redis.UniversalClient, opts *redisstore.Options) *redisstore.Store {
	t.Helper()
	var o redisstore.Options
	if opts != nil {
		o = *opts
	}
	o.Prefix = "" // the test's own
	return backendtest.Open(t, c, &o)
}

func TestSmoke(t *testing.T) {
	for _, topo := range topologies {
		t.Run(topo.name, func(t *testing.T) {
			ctx := context.Background()
			s := newStore(t, topo.client(t), nil)
			q, err := queue.New(s, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer q.Close()
			id, err := q.Put(ctx, "emails", queue.NewJob{Body: []byte("hello"), Priority: 5})
			if err != nil {
				t.Fatal(err)
			}
			j, err := q.Reserve(ctx, queue.ReserveOptions{Tubes: []string{"emails"}, Timeout: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			if j.ID != id || string(j.Body) != "hello" {
				t.Fatalf("got %+v, want id %d", j, id)
			}
			if err := q.Delete(ctx, id); err != nil {
				t.Fatal(err)
			}
			if _, err := q.Peek(ctx, id); err == nil {
				t.Fatal("peek after delete found the job")
			}
			fmt.Println(id)
		})
	}
}

func TestConformance(t *testing.T) {
	for _, topo := range topologies {
		t.Run(topo.name, func(t *testing.T) {
			c := topo.client(t)
			storetest.Queue(t, func(t *testing.T, now func() time.Time) queue.Store {
				return newStore(t, c, &redisstore.Options{Clock: now})
			})
		})
	}
}

// TestDifferential drives the embedded engine and Redis with the same random
// operations and compares every result.
func TestDifferential(t *testing.T) {
	c := standaloneClient(t)
	for seed := uint64(1); seed <= 8; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			storetest.Differential(t, seed, 1500,
				func(t *testing.T, now func() time.Time) queue.Store {
					s, err := memstore.New(&memstore.Options{Clock: now})
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { s.Close() })
					return s
				},
				func(t *testing.T, now func() time.Time) queue.Store {
					return newStore(t, c, &redisstore.Options{Clock: now})
				})
		})
	}
}

// TestClosedConformance: once the Store is closed, every primitive's store
// refuses with its package's closed error, on standalone Redis and the
// Cluster.
func TestClosedConformance(t *testing.T) {
	for _, topo := range topologies {
		t.Run(topo.name, func(t *testing.T) {
			s := newStore(t, topo.client(t), nil)
			storetest.Closed(t, storetest.ClosedStores{
				Limits: s.RateLimits(), Hashes: s.Hashes(), Locks: s.Locks(), Schedules: s.Schedules(), Close: s.Close,
			})
		})
	}
}
