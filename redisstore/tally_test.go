package redisstore

import (
	"context"
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

// tallyFamily is the family of the ex_*.lua files, with its helper file.
var tallyFamily = registerFamily(&family{
	name: "tallies (the worked example)", prefix: "ex_",
	helpers: helpers{file: "ex_lib"}, pkg: "internal/tally", errs: tallyErrs,
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
// "<prefix>ex:n", one key a call, so every call touches one cluster slot.
type Tallies struct{ s *Store }

var _ tally.Store = (*Tallies)(nil)

func (t *Tallies) run(ctx context.Context, o *op, name string, args ...any) (int64, error) {
	v, err := t.s.r.run(ctx, call{op: o, keys: []string{t.s.k.prefix + "ex:" + name}, args: args})
	if err = tallyErrs.mapErr(err); err != nil {
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
