package storetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/ttlhash"
)

// TTLHashDifferential drives two ttlhash stores with the same random
// operations — sets with and without TTLs, reads, deletes, the HEXPIRE
// family, sweeps, event reads and acks — on two clocks advanced together,
// and fails at the first answer on which they differ. Each store is made by
// its constructor with its own clock; the seed makes a run repeatable.
func TTLHashDifferential(t *testing.T, seed uint64, steps int, newA, newB NewTTLHashStore) {
	t.Helper()
	start := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	ca, cb := NewClock(start), NewClock(start)
	sa, sb := newA(t, ca), newB(t, cb)
	ctx := context.Background()
	for _, s := range []ttlhash.Store{sa, sb} {
		if err := s.CreateGroup(ctx, "g"); err != nil {
			t.Fatal(err)
		}
	}
	rng := rand.New(rand.NewPCG(seed, seed^0x2545f4914f6cdd1d))
	hashes := []string{"h1", "h2", "{h3}"}
	fields := []string{"a", "b", "c", "d", "e"}
	pick := func() []string {
		n := 1 + rng.IntN(3)
		out := make([]string, n)
		for i := range out {
			out[i] = fields[rng.IntN(len(fields))]
		}
		return out
	}
	ttls := []time.Duration{0, time.Millisecond, 50 * time.Millisecond, 300 * time.Millisecond, 2 * time.Second, time.Hour}
	for step := range steps {
		hash := hashes[rng.IntN(len(hashes))]
		var name string
		do := func(s ttlhash.Store) string { return "" }
		switch op := rng.IntN(12); op {
		case 0, 1, 2:
			req := ttlhash.SetRequest{TTL: ttls[rng.IntN(len(ttls))], KeepTTL: rng.IntN(4) == 0}
			if req.KeepTTL {
				req.TTL = 0
			}
			for i, f := range pick() {
				req.Fields = append(req.Fields, ttlhash.Field{Name: f, Value: fmt.Appendf(nil, "v%d.%d", step, i)})
			}
			name = fmt.Sprintf("Set %+v", req)
			do = func(s ttlhash.Store) string { n, err := s.Set(ctx, hash, req); return fmt.Sprint(n, err) }
		case 3:
			fs := pick()
			name = fmt.Sprint("Get ", fs)
			do = func(s ttlhash.Store) string {
				es, err := s.Get(ctx, hash, fs)
				var b strings.Builder
				for _, e := range es {
					if e == nil {
						b.WriteString("nil ")
					} else {
						fmt.Fprintf(&b, "%s=%s@%d ", e.Name, e.Value, e.Deadline.UnixMilli())
					}
				}
				return fmt.Sprint(b.String(), err)
			}
		case 4:
			name = "GetAll+Len"
			do = func(s ttlhash.Store) string {
				es, err := s.GetAll(ctx, hash)
				slices.SortFunc(es, func(a, b ttlhash.Entry) int { return strings.Compare(a.Name, b.Name) })
				var b strings.Builder
				for _, e := range es {
					fmt.Fprintf(&b, "%s=%s@%d ", e.Name, e.Value, e.Deadline.UnixMilli())
				}
				n, err2 := s.Len(ctx, hash)
				return fmt.Sprint(b.String(), err, n, err2)
			}
		case 5:
			fs := pick()
			name = fmt.Sprint("Del ", fs)
			do = func(s ttlhash.Store) string { n, err := s.Del(ctx, hash, fs); return fmt.Sprint(n, err) }
		case 6:
			fs := pick()
			name = fmt.Sprint("TTL ", fs)
			do = func(s ttlhash.Store) string { d, err := s.TTL(ctx, hash, fs); return fmt.Sprint(d, err) }
		case 7, 8:
			req := ttlhash.ExpireRequest{Fields: pick(), Cond: ttlhash.Cond(rng.IntN(5))}
			if rng.IntN(3) == 0 {
				req.At = ca.Now().Add(time.Duration(rng.IntN(4000)-500) * time.Millisecond).Truncate(time.Millisecond)
			} else {
				req.TTL = []time.Duration{0, time.Millisecond, 100 * time.Millisecond, time.Second, time.Hour}[rng.IntN(5)]
			}
			name = fmt.Sprintf("Expire %+v", req)
			do = func(s ttlhash.Store) string { c, err := s.Expire(ctx, hash, req); return fmt.Sprint(c, err) }
		case 9:
			fs := pick()
			name = fmt.Sprint("Persist ", fs)
			do = func(s ttlhash.Store) string { c, err := s.Persist(ctx, hash, fs); return fmt.Sprint(c, err) }
		case 10:
			// How many fields a sweep finds depends on the store: the
			// embedded engine also expires due fields as time passes, by
			// its own timer. What must agree is what reads and events show.
			name = "Sweep"
			do = func(s ttlhash.Store) string { sweepAll(ctx, t, s); return "" }
		case 11:
			name = "Sweep+Read+Ack"
			do = func(s ttlhash.Store) string { sweepAll(ctx, t, s); return readAck(ctx, t, s, ca.Now()) }
		}
		ra, rb := do(sa), do(sb)
		if ra != rb {
			t.Fatalf("step %d (seed %d): %s on %s differ:\n  A: %s\n  B: %s", step, seed, name, hash, ra, rb)
		}
		d := []time.Duration{0, 0, time.Millisecond, 20 * time.Millisecond, 100 * time.Millisecond, 400 * time.Millisecond}[rng.IntN(6)]
		ca.Advance(d)
		cb.Advance(d)
	}
	// At the end, after a last sweep, both hold the same events.
	ca.Advance(2 * time.Hour)
	cb.Advance(2 * time.Hour)
	sweepAll(ctx, t, sa)
	sweepAll(ctx, t, sb)
	if a, b := readAck(ctx, t, sa, ca.Now()), readAck(ctx, t, sb, cb.Now()); a != b {
		t.Fatalf("seed %d: the final sweep and events differ:\n  A: %s\n  B: %s", seed, a, b)
	}
}

// sweepAll sweeps every shard until nothing due is left and returns how
// many fields expired.
func sweepAll(ctx context.Context, t *testing.T, s ttlhash.Store) int {
	t.Helper()
	n := 0
	for sh := range s.Shards() {
		for {
			r, err := s.Sweep(ctx, sh, 100)
			if err != nil {
				t.Fatalf("Sweep: %v", err)
			}
			n += r.Expired
			if !r.More {
				break
			}
		}
	}
	return n
}

// readAck reads every event of group "g", acknowledges them and describes
// them in an order that does not depend on the store's shards. When a field
// expired depends on when the store's sweep ran, so the description leaves
// ExpiredAt out; readAck checks it lies between the deadline and now.
func readAck(ctx context.Context, t *testing.T, s ttlhash.Store, now time.Time) string {
	t.Helper()
	var lines []string
	for {
		evs, err := s.Read(ctx, "g", "c", 100)
		if err != nil {
			t.Fatalf("Read: %v", err)
		}
		if len(evs) == 0 {
			break
		}
		ids := make([]string, len(evs))
		for i, e := range evs {
			ids[i] = e.ID
			if e.ExpiredAt.Before(e.Deadline) || e.ExpiredAt.After(now) {
				t.Errorf("event %s/%s: expired at %v, outside its deadline %v and now %v", e.Hash, e.Field, e.ExpiredAt, e.Deadline, now)
			}
			lines = append(lines, fmt.Sprintf("%s/%s=%s deadline %d", e.Hash, e.Field, e.Value, e.Deadline.UnixMilli()))
		}
		if n, err := s.Ack(ctx, "g", ids); err != nil || n != len(ids) {
			t.Fatalf("Ack of %d events: %d, %v", len(ids), n, err)
		}
	}
	slices.Sort(lines)
	return strings.Join(lines, "; ")
}
