package memstore_test

import (
	"testing"

	"github.com/hourglass-io/hourglass/internal/storetest"
	"github.com/hourglass-io/hourglass/lock"
	"github.com/hourglass-io/hourglass/memstore"
)

func TestLockConformance(t *testing.T) {
	storetest.Lock(t, func(t *testing.T, clock *storetest.Clock) lock.Store {
		s := memstore.New(&memstore.Options{Clock: clock.Now})
		t.Cleanup(func() { s.Close() })
		return s.Locks()
	})
}
