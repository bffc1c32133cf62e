package storetest

import (
	"context"
	"errors"
	"time"

	"github.com/hourglass-io/hourglass/schedule"
)

// checkInvariants checks, when a case is over, what must hold of every
// schedule in the store whatever the case did, through the schedule.Store
// contract: List and Get agree; a schedule's next tick, when it has one,
// is after the tick of its last fire of the spec (a trigger's fire is at
// the time it was made, and leaves the next tick as it was); its last
// fires are newest first and no more than it has fired.
func (e *scEnv) checkInvariants() {
	t := e.t
	t.Helper()
	if e.closed {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	after := ""
	for {
		sts, err := e.ss.List(ctx, after, 100)
		if err != nil {
			t.Errorf("invariants: List after %q: %v", after, err)
			return
		}
		for _, st := range sts {
			e.checkSchedule(ctx, st)
		}
		if len(sts) < 100 {
			return
		}
		after = sts[len(sts)-1].Name
	}
}

func (e *scEnv) checkSchedule(ctx context.Context, st schedule.State) {
	t := e.t
	t.Helper()
	got, err := e.ss.Get(ctx, st.Name)
	switch {
	case errors.Is(err, schedule.ErrNotFound):
		t.Errorf("invariants: %q is listed, and Get finds no such schedule", st.Name)
	case err != nil:
		t.Errorf("invariants: Get(%q): %v", st.Name, err)
	case got.Version != st.Version || !got.Next.Equal(st.Next) || got.Fires != st.Fires:
		t.Errorf("invariants: %q lists as version %d, next %v, %d fires; Get says version %d, next %v, %d fires",
			st.Name, st.Version, st.Next, st.Fires, got.Version, got.Next, got.Fires)
	}
	if uint64(len(st.Last)) > st.Fires {
		t.Errorf("invariants: %q has %d last fires and %d fires in all", st.Name, len(st.Last), st.Fires)
	}
	for i := 1; i < len(st.Last); i++ {
		if st.Last[i].Tick.After(st.Last[i-1].Tick) && !st.Last[i].Manual && !st.Last[i-1].Manual {
			t.Errorf("invariants: %q's last fires are not newest first: %v before %v", st.Name, st.Last[i-1].Tick, st.Last[i].Tick)
		}
	}
	for _, f := range st.Last {
		if f.Manual {
			continue
		}
		if !st.Next.IsZero() && !st.Next.After(f.Tick) {
			t.Errorf("invariants: %q's next tick %v is not after its last fired tick %v", st.Name, st.Next, f.Tick)
		}
		break // the newest fire of the spec
	}
}
