package memstore_test

import (
	"testing"

	"github.com/hourglass-io/hourglass/internal/storetest"
	"github.com/hourglass-io/hourglass/memstore"
	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/schedule"
)

func TestScheduleConformance(t *testing.T) {
	storetest.Schedule(t, func(t *testing.T, clock *storetest.Clock) (schedule.Store, queue.Store) {
		s := memstore.New(&memstore.Options{Clock: clock.Now})
		t.Cleanup(func() { s.Close() })
		return s.Schedules(), s
	})
}
