package memstore

import (
	"runtime"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/internal/testkit/storetest"
	"github.com/hourglass-io/hourglass/queue"
)

// BenchmarkKeyWindows: 10,000 keys, each put, finished and put again
// inside and outside its window (10 s on an injected clock) by 8 callers.
//
//	go test -run '^$' -bench KeyWindows -benchtime 1x ./memstore/
func BenchmarkKeyWindows(b *testing.B) {
	clock := storetest.NewClock(time.Now().Truncate(time.Millisecond))
	s, err := New(&Options{Clock: clock.Now})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	stores := []queue.Store{s, s, s, s, s, s, s, s}
	for range b.N {
		storetest.BenchKeyWindows(b, stores, clock.Advance, 10000)
	}
}

// BenchmarkRetention: 100,000 jobs finished with a result in a tube that
// keeps them 60 s (the live heap after a collection as the memory), the
// engine's timer dropping them with nothing else running.
//
//	go test -run '^$' -bench Retention -benchtime 1x ./memstore/
func BenchmarkRetention(b *testing.B) {
	s, err := New(nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	heap := func() int64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return int64(m.HeapAlloc)
	}
	for range b.N {
		storetest.BenchRetention(b, s, heap, 100000, 8, 60*time.Second)
	}
}
