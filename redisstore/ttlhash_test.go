package redisstore_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/hourglass-io/hourglass/internal/storetest"
	"github.com/hourglass-io/hourglass/memstore"
	"github.com/hourglass-io/hourglass/redisstore"
	"github.com/hourglass-io/hourglass/ttlhash"
)

func TestTTLHashConformance(t *testing.T) {
	for _, top := range topologies {
		t.Run(top.name, func(t *testing.T) {
			t.Parallel()
			storetest.TTLHash(t, func(t *testing.T, clock *storetest.Clock) ttlhash.Store {
				s := newStore(t, top.client(t), &redisstore.Options{Clock: clock.Now})
				h, err := s.HashesWith(&redisstore.HashesOptions{MaxEvents: storetest.TTLHashMaxEvents})
				if err != nil {
					t.Fatal(err)
				}
				return h
			})
		})
	}
}

func TestHashesOptions(t *testing.T) {
	s := newStore(t, standaloneClient(t), nil)
	for _, o := range []redisstore.HashesOptions{{Shards: 3}, {Shards: 512}, {Shards: -1}, {MaxEvents: -1}} {
		if _, err := s.HashesWith(&o); err == nil {
			t.Errorf("HashesWith(%+v): no error", o)
		}
	}
	if h := s.Hashes(); h.Shards() != redisstore.DefaultHashShards {
		t.Errorf("Shards() = %d", h.Shards())
	}
	_ = context.Background()
}

// TestTTLHashDifferential drives the embedded engine and Redis with the
// same random operations and compares every answer.
func TestTTLHashDifferential(t *testing.T) {
	c := standaloneClient(t)
	for seed := uint64(1); seed <= 4; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			storetest.TTLHashDifferential(t, seed, 1500,
				func(t *testing.T, clock *storetest.Clock) ttlhash.Store {
					s := memstore.New(&memstore.Options{Clock: clock.Now})
					t.Cleanup(func() { s.Close() })
					return s.Hashes()
				},
				func(t *testing.T, clock *storetest.Clock) ttlhash.Store {
					return newStore(t, c, &redisstore.Options{Clock: clock.Now}).Hashes()
				})
		})
	}
}
