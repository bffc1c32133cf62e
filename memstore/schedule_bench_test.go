package memstore_test

import (
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/internal/testkit/storetest"
	"github.com/hourglass-io/hourglass/memstore"
)

// BenchmarkScheduleLateness: 200 ticks of "@every 10ms" on the in-memory
// engine; tick-to-put and tick-to-reserved lateness.
func BenchmarkScheduleLateness(b *testing.B) {
	for range b.N {
		s, err := memstore.New(nil)
		if err != nil {
			b.Fatal(err)
		}
		storetest.BenchScheduleLateness(b, s.Schedules(), s, 200, 10*time.Millisecond)
		s.Close()
	}
}
