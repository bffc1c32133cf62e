package redisstore_test

import (
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/internal/storetest"
)

// BenchmarkScheduleLateness: 200 ticks of "@every 10ms" on a standalone
// redis-server; tick-to-put and tick-to-reserved lateness.
func BenchmarkScheduleLateness(b *testing.B) {
	c := standaloneClient(b)
	for range b.N {
		s := newStore(b, c, nil)
		storetest.BenchScheduleLateness(b, s.Schedules(), s, 200, 10*time.Millisecond)
	}
}
