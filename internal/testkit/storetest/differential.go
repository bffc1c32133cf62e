package storetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/hourglass-io/hourglass/queue"
)

// Differential drives two stores with the same seeded random operations
// (of queue.Store and queue.KeepStore: finishes with results, retentions,
// lookups by ID and by key, puts with the windows of a unique key),
// each with its own manual clock moved in step, and fails at the first
// result on which they differ. Job IDs differ between back ends, so each
// store's IDs are mapped to the order the jobs were put in.
//
// Reserves take one tube at a time: across tubes, (priority, ID) order
// depends on how a back end numbers jobs, which the contract leaves open.
func Differential(t *testing.T, seed uint64, steps int, newA, newB NewQueueStore) {
	t.Helper()
	start := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	ca, cb := NewClock(start), NewClock(start)
	a, b := newA(t, ca.Now), newB(t, cb.Now)
	da, db := newDiffSide(a), newDiffSide(b)
	if da.keep == nil || db.keep == nil {
		t.Fatal("Differential: both stores must implement queue.KeepStore")
	}
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	tubes := []string{"t0", "t1", "t2"}
	owners := []string{"o0", "o1", "o2"}
	ctx := context.Background()

	for step := 0; step < steps; step++ {
		tube := tubes[rng.IntN(len(tubes))]
		owner := owners[rng.IntN(len(owners))]
		pick := rng.IntN(1 << 30) // picks a known job by position, the same on both sides
		pri := uint32(rng.IntN(4))
		// Releases and buries with priority 3 keep the job's instead.
		relPri := int64(pri)
		if pri == 3 {
			relPri = queue.KeepPriority
		}
		delay := []time.Duration{0, 0, time.Second, 5 * time.Second}[rng.IntN(4)]
		op := rng.IntN(25)
		reason := []string{"", "", fmt.Sprintf("failed at step %d", step)}[rng.IntN(3)]
		// Each step is one operation, done the same way on each side.
		var name string
		var do func(s *diffSide) any
		switch op {
		case 0, 1, 2:
			name = "Put"
			j := queue.NewJob{Body: fmt.Appendf(nil, "job %d", step), Priority: pri, Delay: delay,
				TTR: []time.Duration{time.Second, 3 * time.Second}[rng.IntN(2)]}
			if rng.IntN(4) == 0 {
				j.UniqueKey = fmt.Sprintf("k%d", rng.IntN(3))
				// The key's windows (KeepStore): a duplicate also of a
				// kept job, or of any job put with the key in a window.
				j.UniqueKept = rng.IntN(3) == 0
				j.UniqueFor = []time.Duration{0, 0, 2 * time.Second, 5 * time.Second}[rng.IntN(4)]
			}
			if rng.IntN(3) == 0 {
				j.TraceContext = []string{traceA, traceB}[rng.IntN(2)]
			}
			do = func(s *diffSide) any { return s.put(ctx, tube, j) }
		case 3, 4, 5:
			name = "Reserve"
			n := 1 + rng.IntN(2)
			do = func(s *diffSide) any { return s.reserve(ctx, owner, tube, n) }
		case 6, 7:
			name = "Delete"
			do = func(s *diffSide) any { return s.errOf(s.s.Delete(ctx, owner, []queue.ID{s.id(pick)})) }
		case 8:
			name = "Release"
			do = func(s *diffSide) any { return class(s.s.Release(ctx, owner, s.id(pick), relPri, delay, reason)) }
		case 9:
			name = "Bury"
			do = func(s *diffSide) any { return class(s.s.Bury(ctx, owner, s.id(pick), relPri, reason)) }
		case 10:
			name = "Touch"
			do = func(s *diffSide) any { return outcome(s.s.Touch(ctx, owner, s.id(pick))) }
		case 11:
			name = "Kick"
			n := rng.IntN(3)
			do = func(s *diffSide) any { return outcome(s.s.Kick(ctx, tube, n+1)) }
		case 12:
			name = "KickJob"
			do = func(s *diffSide) any { return class(s.s.KickJob(ctx, s.id(pick))) }
		case 13:
			name = "ReserveJob"
			do = func(s *diffSide) any { return s.job(s.s.ReserveJob(ctx, owner, s.id(pick))) }
		case 14:
			name = "StatsJob"
			do = func(s *diffSide) any { return s.stats(s.s.StatsJob(ctx, s.id(pick))) }
		case 15:
			name = "PeekStateN"
			st := []queue.State{queue.Ready, queue.Delayed, queue.Reserved, queue.Buried}[rng.IntN(4)]
			do = func(s *diffSide) any { return s.jobs(s.s.PeekStateN(ctx, tube, st, 2)) }
		case 16:
			name = "StatsTube"
			do = func(s *diffSide) any { return outcome(s.s.StatsTube(ctx, tube)) }
		case 17:
			name = "PauseTube"
			d := []time.Duration{0, 2 * time.Second}[rng.IntN(2)]
			do = func(s *diffSide) any { return class(s.s.PauseTube(ctx, tube, d)) }
		case 18:
			name = "Stats+Tubes"
			do = func(s *diffSide) any {
				st, err := s.s.Stats(ctx)
				tubes, _ := s.s.Tubes(ctx)
				slices.Sort(tubes) // tubes created at one instant may be listed in any order
				return []any{st, class(err), tubes}
			}
		case 19:
			name = "Unreserve"
			do = func(s *diffSide) any { return outcome(s.s.Unreserve(ctx, owner, s.all())) }
		case 20:
			name = "Hold"
			holder := []string{"s0/a", "s1/b", owner}[rng.IntN(3)]
			n := []int{1, 2, -1, -2}[rng.IntN(4)]
			do = func(s *diffSide) any { return class(s.s.Hold(ctx, holder, tube, n)) }
		case 21:
			name = "Finish"
			result := []byte(nil)
			if rng.IntN(3) > 0 {
				result = fmt.Appendf(nil, "result %d", step)
			}
			do = func(s *diffSide) any { return class(s.keep.Finish(ctx, owner, s.id(pick), result)) }
		case 22:
			name = "SetRetention"
			d := []time.Duration{0, 3 * time.Second, 10 * time.Second}[rng.IntN(3)]
			do = func(s *diffSide) any {
				set := class(s.keep.SetRetention(ctx, tube, d))
				if set != "ok" {
					return set
				}
				return []any{set, outcome(s.keep.Retention(ctx, tube))}
			}
		case 23:
			name = "Lookup"
			do = func(s *diffSide) any { return s.stats(s.keep.Lookup(ctx, s.id(pick))) }
		case 24:
			name = "LookupKey"
			key := fmt.Sprintf("k%d", rng.IntN(3))
			do = func(s *diffSide) any { return s.stats(s.keep.LookupKey(ctx, tube, key)) }
		}
		if diff := gocmp.Diff(do(da), do(db)); diff != "" {
			t.Fatalf("seed %d, step %d: %s (tube %s, owner %s) differs (-A +B):\n%s", seed, step, name, tube, owner, diff)
		}
		if rng.IntN(3) == 0 {
			d := time.Duration(rng.IntN(2000)) * time.Millisecond
			ca.Advance(d)
			cb.Advance(d)
			// What a drop of kept jobs changes beside them (a tube's life)
			// shows at once on both sides.
			dropKept(t, ctx, a)
			dropKept(t, ctx, b)
		}
	}
}

// diffSide is one store (and its queue.KeepStore, when it is one), with
// its job IDs in the order they were put.
type diffSide struct {
	s     queue.Store
	keep  queue.KeepStore
	ids   []queue.ID
	index map[queue.ID]int
}

func newDiffSide(s queue.Store) *diffSide {
	keep, _ := s.(queue.KeepStore)
	return &diffSide{s: s, keep: keep, index: map[queue.ID]int{}}
}

// id returns a known job's ID by position, or an ID no job has.
func (d *diffSide) id(pick int) queue.ID {
	if len(d.ids) == 0 || pick%8 == 0 {
		return queue.MaxID - 1
	}
	return d.ids[pick%len(d.ids)]
}

func (d *diffSide) all() []queue.ID { return slices.Clone(d.ids) }

// n maps an ID to its position, the same on both sides.
func (d *diffSide) n(id queue.ID) int {
	if i, ok := d.index[id]; ok {
		return i
	}
	return -1
}

func (d *diffSide) put(ctx context.Context, tube string, j queue.NewJob) []any {
	r, err := d.s.Put(ctx, tube, []queue.NewJob{j})
	if err != nil {
		return []any{class(err)}
	}
	if !r[0].Duplicate {
		d.index[r[0].ID] = len(d.ids)
		d.ids = append(d.ids, r[0].ID)
	}
	return []any{d.n(r[0].ID), r[0].Duplicate, r[0].State, string(r[0].Result)}
}

// dropKept drops at once the kept jobs whose time has come, on a store
// that drops them in the background (KeptDropper).
func dropKept(t *testing.T, ctx context.Context, s queue.Store) {
	t.Helper()
	if d, ok := s.(KeptDropper); ok {
		if _, err := d.DropKept(ctx); err != nil {
			t.Fatalf("DropKept: %v", err)
		}
	}
}

func (d *diffSide) reserve(ctx context.Context, owner, tube string, n int) []any {
	r, err := d.s.Reserve(ctx, queue.ReserveRequest{Owner: owner, Tubes: []string{tube}, Max: n})
	// With jobs, Next is a hint that comes with Drained, which a store
	// may leave false: only a reserve that took nothing must agree on it.
	if len(r.Jobs) > 0 {
		r.Next, r.NextTube = -1, ""
	}
	out := []any{class(err), r.Next, r.NextTube}
	for _, j := range r.Jobs {
		out = append(out, d.job(j, nil))
	}
	return out
}

func (d *diffSide) errOf(errs []error, err error) []any {
	out := []any{class(err)}
	for _, e := range errs {
		out = append(out, class(e))
	}
	return out
}

// job, jobs and stats give what a read returned as both sides compare
// it, jobs by their position: the outcome of its error, or what it read.
func (d *diffSide) job(j queue.Job, err error) any {
	if err != nil {
		return class(err)
	}
	return []any{d.n(j.ID), j.Tube, j.Priority, j.TTR, j.Reserves, string(j.Body), j.Left}
}

func (d *diffSide) jobs(js []queue.Job, err error) any {
	if err != nil {
		return class(err)
	}
	out := []any{}
	for _, j := range js {
		out = append(out, d.job(j, nil))
	}
	return out
}

func (d *diffSide) stats(s queue.JobStats, err error) any {
	if err != nil {
		return class(err)
	}
	n := d.n(s.ID)
	s.ID = 0
	return []any{n, s}
}

// outcome is a value and the outcome of the error that came with it.
func outcome[T any](v T, err error) []any { return []any{v, class(err)} }

// class reduces an error to the outcome sentinel it carries.
func class(err error) string {
	if err == nil {
		return "ok"
	}
	for _, s := range []error{queue.ErrNotFound, queue.ErrNotReserved, queue.ErrReserved, queue.ErrNotKickable, queue.ErrFull, queue.ErrClosed, queue.ErrInvalid} {
		if errors.Is(err, s) {
			return s.Error()
		}
	}
	return "other: " + err.Error()
}
