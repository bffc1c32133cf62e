package storetest

import (
	"context"
	"slices"
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

// ConsumeTTLHashLag consumes the events of group "g" (which must exist)
// with 3 consumers until n have come or limit has passed, and reports the
// expiry lag (ExpiredAt − Deadline, the sweep's lateness on the store's
// clock) and the delivery lag (handling time − Deadline) at p50, p90, p99
// and max, and the expiries per second from the first deadline to the last
// expiry. seen, when not nil, is told each event and when it was handled.
func ConsumeTTLHashLag(b *testing.B, hs *ttlhash.Hashes, n int, limit time.Duration, seen func(e ttlhash.Event, at time.Time)) {
	var mu sync.Mutex
	// Sized up front: a slice of a million growing by doubling would
	// allocate and copy tens of MB in the middle of the run, and the
	// collector's work on it holds this process's Sweepers up.
	expiry, delivery := make([]time.Duration, 0, n), make([]time.Duration, 0, n)
	var first, last time.Time
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	var wg sync.WaitGroup
	for k := range 3 {
		wg.Go(func() {
			hs.Consume(ctx, "g", "c"+strconv.Itoa(k), func(_ context.Context, e ttlhash.Event) error {
				now := time.Now()
				mu.Lock()
				defer mu.Unlock()
				if seen != nil {
					seen(e, now)
				}
				expiry = append(expiry, e.ExpiredAt.Sub(e.Deadline))
				delivery = append(delivery, now.Sub(e.Deadline))
				if first.IsZero() || e.Deadline.Before(first) {
					first = e.Deadline
				}
				if e.ExpiredAt.After(last) {
					last = e.ExpiredAt
				}
				if len(expiry) == n {
					cancel()
				}
				return nil
			})
		})
	}
	wg.Wait()
	if len(expiry) != n {
		b.Fatalf("%d of %d events before the time limit of %v", len(expiry), n, limit)
	}
	b.ReportMetric(quantileMS(expiry, 0.5), "expiry-p50-ms")
	b.ReportMetric(quantileMS(expiry, 0.9), "expiry-p90-ms")
	b.ReportMetric(quantileMS(expiry, 0.99), "expiry-p99-ms")
	b.ReportMetric(quantileMS(expiry, 1), "expiry-max-ms")
	b.ReportMetric(quantileMS(delivery, 0.5), "delivery-p50-ms")
	b.ReportMetric(quantileMS(delivery, 0.99), "delivery-p99-ms")
	b.ReportMetric(quantileMS(delivery, 1), "delivery-max-ms")
	b.ReportMetric(float64(n)/last.Sub(first).Seconds(), "expired/s")
}

// quantileMS sorts d and returns its p-quantile (0 to 1, 1 the largest) in
// milliseconds.
func quantileMS(d []time.Duration, p float64) float64 {
	slices.Sort(d)
	return float64(d[min(len(d)-1, int(p*float64(len(d))))]) / float64(time.Millisecond)
}
