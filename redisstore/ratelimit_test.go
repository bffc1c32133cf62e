package redisstore_test

import (
	"testing"

	"github.com/hourglass-io/hourglass/internal/storetest"
	"github.com/hourglass-io/hourglass/ratelimit"
	"github.com/hourglass-io/hourglass/redisstore"
)

func TestRateLimitConformance(t *testing.T) {
	for _, topo := range topologies {
		t.Run(topo.name, func(t *testing.T) {
			c := topo.client(t)
			storetest.RateLimit(t, func(t *testing.T, clock *storetest.Clock) ratelimit.Store {
				return newStore(t, c, &redisstore.Options{Clock: clock.Now}).Limits()
			})
		})
	}
}
