package redisstore_test

import (
	"testing"

	"github.com/hourglass-io/hourglass/internal/storetest"
	"github.com/hourglass-io/hourglass/lock"
	"github.com/hourglass-io/hourglass/redisstore"
)

func TestLockConformance(t *testing.T) {
	for _, topo := range topologies {
		t.Run(topo.name, func(t *testing.T) {
			c := topo.client(t)
			storetest.Lock(t, func(t *testing.T, clock *storetest.Clock) lock.Store {
				return newStore(t, c, &redisstore.Options{Clock: clock.Now}).Locks()
			})
		})
	}
}
