package memstore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/internal/testkit/storetest"
	"github.com/hourglass-io/hourglass/ttlhash"
)

// BenchmarkTTLHashSetTTL sets one 200-byte field with a TTL per call in an
// in-memory Store (storetest.BenchTTLHashSetTTL).
func BenchmarkTTLHashSetTTL(b *testing.B) {
	s := must(New(nil))
	defer s.Close()
	storetest.BenchTTLHashSetTTL(b, s.Hashes())
}

// BenchmarkTTLHashGet reads one field of 10,000 per call
// (storetest.BenchTTLHashGet).
func BenchmarkTTLHashGet(b *testing.B) {
	s := must(New(nil))
	defer s.Close()
	storetest.BenchTTLHashGet(b, s.Hashes())
}

// BenchmarkTTLHashBytes reports the Go heap per field with a TTL: 100,000
// fields, 8-byte names, 200-byte values, over 1,000 hashes. Run with
// -benchtime=1x.
func BenchmarkTTLHashBytes(b *testing.B) {
	ctx := context.Background()
	value := make([]byte, 200)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	s := must(New(nil))
	defer s.Close()
	h := s.Hashes()
	for i := range 100_000 {
		if _, err := h.Set(ctx, fmt.Sprintf("h%04d", i%1000), ttlhash.SetRequest{
			Fields: []ttlhash.Field{{Name: fmt.Sprintf("f%07d", i), Value: value}}, TTL: time.Hour,
		}); err != nil {
			b.Fatal(err)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/100_000, "B/field")
	runtime.KeepAlive(s)
}

// BenchmarkTTLHashLag: 50,000 fields due uniformly over 5 s (10,000 per
// second) in an in-memory Store; one group of 3 consumers. Reports the
// expiry lag (removal minus deadline) and the delivery lag (handled minus
// deadline). Run with -benchtime=1x.
func BenchmarkTTLHashLag(b *testing.B) {
	const fields = 50_000
	s := must(New(nil))
	defer s.Close()
	hs, _ := ttlhash.New(s.Hashes(), nil)
	ctx := context.Background()
	hs.CreateGroup(ctx, "g")
	start := time.Now().Add(time.Second)
	for i := range fields {
		dl := start.Add(time.Duration(rand.IntN(5000)) * time.Millisecond)
		if _, err := s.Hashes().Set(ctx, "h"+strconv.Itoa(i%1000), ttlhash.SetRequest{
			Fields: []ttlhash.Field{{Name: strconv.Itoa(i), Value: []byte("v")}}, TTL: time.Until(dl).Truncate(time.Millisecond),
		}); err != nil {
			b.Fatal(err)
		}
	}
	storetest.ConsumeTTLHashLag(b, hs, fields, 30*time.Second, nil)
}
