package redisstore

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/hourglass-io/hourglass/internal/tally"
	"github.com/hourglass-io/hourglass/internal/testkit/redistest"
	"github.com/hourglass-io/hourglass/internal/testkit/storetest"
	"github.com/redis/go-redis/v9"
)

// The worked example of CONTRIBUTING.md ("Adding a primitive"), step 4:
// the Redis store of internal/tally. A real primitive writes the same in
// redisstore/<name>.go, with its family as a line of families and its
// error table beside it (families.go); a test file cannot edit that
// literal, so the example's family is appended to it here, before its
// operations are registered (package initialisation runs before any
// test, and the library is assembled at the first Store).

// tallyErrs is the family's error table: the runner's failures as the
// tally's sentinels (TestErrTablesMapEverySentinel reads
// internal/tally/errors.go and checks it).
var tallyErrs = errTable{closed: tally.ErrClosed}

// tallyFamily is the family of the ex_*.lua files: its helper file, its
// error table, the runner's lane its calls go out in, and its range of the
// notifier's subscriptions (none: a tally has no listeners).
// TestRegistries fails when any of them is left out.
var tallyFamily = registerFamily(&family{
	name: "tallies (the worked example)", prefix: "ex_",
	helpers: helpers{file: "ex_lib"}, pkg: "internal/tally", errs: tallyErrs,
	lane: laneMain, subs: noSubs,
})

func registerFamily(f *family) *family {
	families = append(families, f)
	return f
}

// tallyScripts are the family's operations, one Lua file each. Naming
// tallyFamily makes Go register the family first.
var tallyScripts = func(*family) struct{ add, get *op } {
	return struct{ add, get *op }{add: operation("ex_add"), get: operation("ex_get")}
}(tallyFamily)

// Tallies is the tally.Store on Redis: the tally n lives in the string
// "<prefix>ex:{n}", on the hash tag of its name, one key a call, so every
// call touches one cluster slot.
type Tallies struct{ s *Store }

var _ tally.Store = (*Tallies)(nil)

func (t *Tallies) run(ctx context.Context, o *op, name string, args ...any) (int64, error) {
	// The runner gives a failure the family's errors (tally.ErrClosed for
	// a closed store).
	// ARGV[1] is the time, as for every operation (the store's injected
	// clock, or "" for Redis's TIME).
	argv := append([]any{t.s.now()}, args...)
	v, err := t.s.r.run(ctx, call{op: o, keys: []string{t.s.k.prefix + "ex:{" + name + "}"}, args: argv})
	if err != nil {
		return 0, err
	}
	r := replyOf(o)
	n := r.int(v)
	return n, r.done()
}

func (t *Tallies) Add(ctx context.Context, name string, n int64) (int64, error) {
	if err := tally.Check(name, n); err != nil {
		return 0, err
	}
	return t.run(ctx, tallyScripts.add, name, n)
}

func (t *Tallies) Get(ctx context.Context, name string) (int64, error) {
	if err := tally.Check(name, 1); err != nil {
		return 0, err
	}
	return t.run(ctx, tallyScripts.get, name)
}

// The conformance suite on standalone Redis and on the Cluster.
func TestTallyConformance(t *testing.T) {
	for _, c := range []struct {
		name   string
		client func(testing.TB) redis.UniversalClient
	}{
		{"standalone", func(t testing.TB) redis.UniversalClient { return redistest.StandaloneClient(t) }},
		{"cluster", func(t testing.TB) redis.UniversalClient { return redistest.ClusterClient(t) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			client := c.client(t)
			storetest.Tally(t, func(t *testing.T) (tally.Store, func()) {
				s, err := New(t.Context(), client, &Options{Prefix: redistest.Prefix(t)})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close() })
				return &Tallies{s}, func() { s.Close() }
			})
		})
	}
}

// Every registry a primitive joins on Redis is named by its family, and
// the test-only primitive's family, added above, names each: the helper
// file, the error table with its closed error, the runner's lane and the
// notifier's range (or that it has none); no two families take the same
// prefix or overlapping ranges, and every operation belongs to a
// registered family. Leaving any of them out of tallyFamily fails here.
func TestRegistries(t *testing.T) {
	if !slices.Contains(families, tallyFamily) {
		t.Fatal("the tally's family is not in families")
	}
	if tallyScripts.add.family != tallyFamily {
		t.Fatal("ex_add is not in the tally's family")
	}
	r := newRunner(nil, new(atomic.Bool))
	prefixes := map[string]string{}
	type taken struct {
		name   string
		lo, hi int
	}
	var ranges []taken
	for _, f := range families {
		if other, dup := prefixes[f.prefix]; dup {
			t.Errorf("%s: prefix %q is %s's too", f.name, f.prefix, other)
		}
		prefixes[f.prefix] = f.name
		if f.helpers.file == "" {
			t.Errorf("%s: no helper file", f.name)
		}
		if f.errs.closed == nil {
			t.Errorf("%s: no error table (no error for a closed store)", f.name)
		}
		switch f.lane {
		case laneMain, laneHashes, laneLimits:
			if r.laneOf(&op{family: f}) == nil {
				t.Errorf("%s: lane %d has no queue in the runner", f.name, f.lane)
			}
		default:
			t.Errorf("%s: no lane of the runner (lane %d)", f.name, f.lane)
		}
		switch {
		case f.subs.none && f.subs.n != 0:
			t.Errorf("%s: notifier range both none and %d long", f.name, f.subs.n)
		case f.subs.none:
		case f.subs.n <= 0:
			t.Errorf("%s: no notifier range (noSubs when it has no listeners)", f.name)
		default:
			nr := taken{f.name, f.subs.lo, f.subs.lo + f.subs.n}
			for _, o := range ranges {
				if nr.lo < o.hi && o.lo < nr.hi {
					t.Errorf("%s: notifier range [%d,%d) overlaps %s's [%d,%d)", f.name, nr.lo, nr.hi, o.name, o.lo, o.hi)
				}
			}
			ranges = append(ranges, nr)
		}
	}
	for name, o := range ops {
		if !slices.Contains(families, o.family) {
			t.Errorf("operation %s: its family %q is not registered", name, o.family.name)
		}
	}
}
