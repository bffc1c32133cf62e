package storetest

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/ttlhash"
)

// BenchTTLHashSetTTL sets one 200-byte field with a TTL per call, on 1,000
// hashes of up to 100 fields, from GOMAXPROCS×8 goroutines: the same load
// on every back end.
func BenchTTLHashSetTTL(b *testing.B, s ttlhash.Store) {
	hs, err := ttlhash.New(s, nil)
	if err != nil {
		b.Fatal(err)
	}
	value := make([]byte, 200)
	var n atomic.Int64
	b.SetParallelism(8)
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		for pb.Next() {
			i := n.Add(1)
			if _, err := hs.Hash("h"+strconv.FormatInt(i%1000, 10)).SetTTL(ctx, "f"+strconv.FormatInt(i%100000, 10), value, time.Hour); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchTTLHashGet reads one field of 10,000 (200-byte values, 100 hashes)
// per call, from GOMAXPROCS×8 goroutines. The fields are set first, by 32
// goroutines, outside the timing.
func BenchTTLHashGet(b *testing.B, s ttlhash.Store) {
	hs, err := ttlhash.New(s, nil)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	value := make([]byte, 200)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < 10000; i = int(next.Add(1) - 1) {
				if _, err := hs.Hash("h"+strconv.Itoa(i%100)).SetTTL(ctx, "f"+strconv.Itoa(i), value, time.Hour); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	var n atomic.Int64
	b.ResetTimer()
	b.SetParallelism(8)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := int(n.Add(1) % 10000)
			if _, ok, err := hs.Hash("h"+strconv.Itoa(i%100)).Get(ctx, "f"+strconv.Itoa(i)); err != nil || !ok {
				b.Error(err, ok)
				return
			}
		}
	})
}
