package redisstore_test

import (
	"context"
	"testing"

	"github.com/hourglass-io/hourglass/internal/storetest"
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
