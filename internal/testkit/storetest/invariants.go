package storetest

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hourglass-io/hourglass/queue"
)

// stateCounts are the per-state job counts that StatsTube and Stats report.
type stateCounts struct {
	Urgent, Ready, Reserved, Delayed, Buried int64
}

func (c stateCounts) zero() bool { return c == stateCounts{} }

// checkInvariants compares what the store says about the jobs the case
// created, job by job, with what it says per tube and in total, and runs the
// store's own Checker. It reads the store directly (not through the
// recorder) and at one instant of the manual clock.
func (e *env) checkInvariants() {
	t := e.t
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	if d, ok := e.raw.(KeptDropper); ok {
		if _, err := d.DropKept(ctx); err != nil {
			t.Errorf("invariants: DropKept: %v", err)
		}
	}
	ids, recorded := e.rec.known()
	held := e.rec.held()
	perTube := map[string]*stateCounts{}
	var total stateCounts
	jobs := map[queue.ID]queue.JobStats{}
	keeps := map[string]bool{} // tubes that keep finished jobs (queue.KeepStore)
	ks, _ := e.raw.(queue.KeepStore)
	for _, id := range ids {
		js, err := e.raw.StatsJob(ctx, id)
		if errors.Is(err, queue.ErrNotFound) {
			if ks != nil {
				// A job gone from the states may be kept: Lookup sees it,
				// and its tube lives while it keeps it.
				kj, err := ks.Lookup(ctx, id)
				switch {
				case err == nil && kj.State == queue.Finished:
					keeps[kj.Tube] = true
				case err == nil:
					t.Errorf("invariants: StatsJob(%d) says not found, Lookup finds it %v", id, kj.State)
				case !errors.Is(err, queue.ErrNotFound):
					t.Errorf("invariants: Lookup(%d): %v", id, err)
				}
			}
			continue
		}
		if err != nil {
			t.Errorf("invariants: StatsJob(%d): %v", id, err)
			continue
		}
		if js.ID != id {
			t.Errorf("invariants: StatsJob(%d) describes job %d", id, js.ID)
		}
		c := perTube[js.Tube]
		if c == nil {
			c = &stateCounts{}
			perTube[js.Tube] = c
		}
		switch js.State {
		case queue.Ready:
			c.Ready++
			total.Ready++
			if js.Priority < queue.UrgentPriority {
				c.Urgent++
				total.Urgent++
			}
		case queue.Reserved:
			c.Reserved++
			total.Reserved++
		case queue.Delayed:
			c.Delayed++
			total.Delayed++
		case queue.Buried:
			c.Buried++
			total.Buried++
		default:
			t.Errorf("invariants: job %d is in state %v", id, js.State)
		}
		if js.State != queue.Reserved && js.State != queue.Delayed && js.TimeLeft != 0 {
			t.Errorf("invariants: job %d is %v with TimeLeft %v, want 0", id, js.State, js.TimeLeft)
		}
		jobs[id] = js
	}

	// Each owner's reservations are reserved jobs, with the time left that
	// StatsJob gives (one store clock, stopped between the calls).
	for _, q := range []*queue.Queue{e.q, e.q2} {
		rs, err := e.raw.Reservations(ctx, q.Owner())
		if err != nil {
			t.Errorf("invariants: Reservations(%q): %v", q.Owner(), err)
		}
		for _, r := range rs {
			js, ok := jobs[r.ID]
			if !ok {
				js, err = e.raw.StatsJob(ctx, r.ID)
			}
			if err != nil || js.State != queue.Reserved || r.Left != js.TimeLeft || r.Left <= 0 {
				t.Errorf("invariants: Reservations(%q) lists %+v; StatsJob says %v %v left, %v", q.Owner(), r, js.State, js.TimeLeft, err)
			}
		}
	}

	listed, err := e.raw.Tubes(ctx)
	if err != nil {
		t.Errorf("invariants: Tubes: %v", err)
	}
	inList := map[string]bool{}
	for _, name := range listed {
		if inList[name] {
			t.Errorf("invariants: Tubes lists %q twice: %q", name, listed)
		}
		inList[name] = true
	}
	names := slices.Clone(recorded)
	for _, name := range listed {
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	for name := range perTube {
		if !slices.Contains(names, name) {
			t.Errorf("invariants: a job of tube %q, which the case never used", name)
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		var want stateCounts
		if c := perTube[name]; c != nil {
			want = *c
		}
		ts, err := e.raw.StatsTube(ctx, name)
		if errors.Is(err, queue.ErrNotFound) {
			if !want.zero() {
				t.Errorf("invariants: StatsTube(%q) says not found, but the tube holds jobs %+v", name, want)
			}
			if held[name] > 0 {
				t.Errorf("invariants: StatsTube(%q) says not found, but the tube holds %d references", name, held[name])
			}
			if inList[name] {
				t.Errorf("invariants: Tubes lists %q, StatsTube says not found", name)
			}
			continue
		}
		if err != nil {
			t.Errorf("invariants: StatsTube(%q): %v", name, err)
			continue
		}
		if ts.Name != name {
			t.Errorf("invariants: StatsTube(%q).Name = %q", name, ts.Name)
		}
		// A tube with groups is known through them when nothing of its own
		// is left: StatsTube answers with its groups' counts, and Tubes
		// lists the groups' tubes, not it.
		own := ts.Groups == 0 || !want.zero() || ts.Pause != 0 || held[name] != 0 || keeps[name]
		if !inList[name] && own {
			t.Errorf("invariants: StatsTube(%q) knows the tube, Tubes does not list it: %q", name, listed)
		}
		if want.zero() && ts.Pause == 0 && held[name] == 0 && ts.Groups == 0 && !keeps[name] {
			t.Errorf("invariants: StatsTube(%q) knows a tube with no job, no reference and no pause: %+v", name, ts)
		}
		got := stateCounts{Urgent: ts.Urgent, Ready: ts.Ready, Reserved: ts.Reserved, Delayed: ts.Delayed, Buried: ts.Buried}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("invariants: StatsTube(%q) counts differ from the states of its jobs (-jobs +tube):\n%s", name, diff)
		}
	}

	st, err := e.raw.Stats(ctx)
	if err != nil {
		t.Errorf("invariants: Stats: %v", err)
	} else {
		got := stateCounts{Urgent: st.Urgent, Ready: st.Ready, Reserved: st.Reserved, Delayed: st.Delayed, Buried: st.Buried}
		if diff := cmp.Diff(total, got); diff != "" {
			t.Errorf("invariants: Stats counts differ from the states of the jobs (-jobs +stats):\n%s", diff)
		}
		if st.Tubes != int64(len(listed)) {
			t.Errorf("invariants: Stats.Tubes = %d, Tubes lists %d: %q", st.Tubes, len(listed), listed)
		}
		if st.TotalJobs < int64(len(ids)) {
			t.Errorf("invariants: Stats.TotalJobs = %d, but the case put %d jobs", st.TotalJobs, len(ids))
		}
	}

	if c, ok := e.raw.(Checker); ok {
		if err := c.CheckInvariants(ctx); err != nil {
			t.Errorf("invariants: CheckInvariants: %v", err)
		}
	}
}
