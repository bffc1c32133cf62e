package envoyrl_test

import (
	"github.com/hourglass-io/hourglass/internal/testkit/backendtest"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/internal/testkit/redistest"
	"github.com/hourglass-io/hourglass/ratelimit"
	"github.com/hourglass-io/hourglass/redisstore"
	"github.com/hourglass-io/hourglass/server/envoyrl"
	"github.com/redis/go-redis/v9"
)

// TestFailurePolicy: with its redis-server stopped, a fail-closed service
// answers OVER_LIMIT and a fail-open one answers OK; both count the failure.
func TestFailurePolicy(t *testing.T) {
	srv := redistest.Standalone(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond, DialerRetries: 1, DialerRetryTimeout: time.Millisecond})
	defer c.Close()
	s, err := redisstore.New(t.Context(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cfg := load(t, "testdata/basic.yaml")
	closed := serve(t, s.RateLimits(), cfg, nil)
	open := serve(t, s.RateLimits(), cfg, func(srv *envoyrl.Server) {
		srv.Limiter = backendtest.Limiter(t, s.RateLimits(), &ratelimit.Options{Failure: ratelimit.FailOpen})
	})
	expect(t, "before the outage", closed.ask(t, "edge", 0, desc("remote_address", "a")), "OK OK")
	srv.Stop()
	expect(t, "fail closed", closed.ask(t, "edge", 0, desc("remote_address", "a")), "OVER_LIMIT OVER_LIMIT")
	expect(t, "fail open", open.ask(t, "edge", 0, desc("remote_address", "a")), "OK OK")
	for _, f := range []struct {
		fx     *fixture
		policy string
	}{{closed, "closed"}, {open, "open"}} {
		mfs, _ := f.fx.reg.Gather()
		var got float64
		for _, mf := range mfs {
			if mf.GetName() == envoyrl.MetricStoreErrors {
				for _, m := range mf.GetMetric() {
					got += m.GetCounter().GetValue()
				}
			}
		}
		if got != 1 {
			t.Errorf("%s: store errors counted %v, want 1", f.policy, got)
		}
	}
}
