package storetest

import (
	"errors"
	"slices"
	"time"

	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/schedule"
)

// The overlap policies and PauseOnFailure: each case fires a schedule
// `@every 1m` tick by tick and moves its previous job through the states
// a worker can leave it in (ready, delayed, reserved, released, buried,
// timed out, deleted), checking what each tick put or counted.

const ovOwner = "storetest-worker"

// tickOnce advances the clock to the schedule's next tick and fires it.
func (e *scEnv) tickOnce(name string) schedule.State {
	e.t.Helper()
	e.advanceTo(e.get(name).Next)
	e.fireDue()
	return e.get(name)
}

// inState returns the IDs of the jobs of tube in state s, by peeking.
func (e *scEnv) inState(tube string, s queue.State) []queue.ID {
	e.t.Helper()
	js, err := e.qs.PeekStateN(e.ctx, tube, s, 100)
	if err != nil {
		e.t.Fatalf("PeekStateN(%s, %v): %v", tube, s, err)
	}
	out := make([]queue.ID, len(js))
	for i, j := range js {
		out[i] = j.ID
	}
	return out
}

// reserveOne reserves the one ready job of tube, which must be id.
func (e *scEnv) reserveOne(tube string, id queue.ID) {
	e.t.Helper()
	res, err := e.qs.Reserve(e.ctx, queue.ReserveRequest{Owner: ovOwner, Tubes: []string{tube}, Max: 1})
	if err != nil || len(res.Jobs) != 1 || res.Jobs[0].ID != id {
		e.t.Fatalf("Reserve: %+v %v, want job %d", res.Jobs, err, id)
	}
}

// wantTick checks the schedule after a tick: its counts and its last job.
func (e *scEnv) wantTick(st schedule.State, fires, skips uint64, lastJob queue.ID, what string) {
	e.t.Helper()
	if st.Fires != fires || st.Skips != skips || st.LastJob != uint64(lastJob) {
		e.t.Fatalf("%s: fires %d skips %d last job %d, want %d %d %d", what, st.Fires, st.Skips, st.LastJob, fires, skips, lastJob)
	}
}

func ovSchedule(name string, o schedule.Overlap) schedule.Schedule {
	return schedule.Schedule{Name: name, Spec: "@every 1m", Overlap: o, Job: schedule.Job{TTR: ovTTR}}
}

// ovTTR outlasts one tick's interval but not two.
const ovTTR = 90 * time.Second

// tickAfterTimeout fires the schedule's next tick once a job reserved at
// its last tick has run out of TTR: 95 s after it, within the grace.
func (e *scEnv) tickAfterTimeout(name string) schedule.State {
	e.t.Helper()
	e.clock.Advance(ovTTR + 5*time.Second)
	e.fireDue()
	return e.get(name)
}

// testScOverlapSkip: a tick puts nothing while the previous job is ready,
// delayed (released with a delay), reserved or back to ready after its
// TTR ran out; it puts once the previous job is buried or deleted.
func testScOverlapSkip(e *scEnv) {
	e.set(ovSchedule("s", schedule.OverlapSkip))
	st := e.tickOnce("s")
	a := queue.ID(st.LastJob)
	e.wantTick(st, 1, 0, a, "first tick")
	e.wantTick(e.tickOnce("s"), 1, 1, a, "previous ready")
	e.reserveOne("sc", a)
	e.wantTick(e.tickOnce("s"), 1, 2, a, "previous reserved")
	if err := e.qs.Release(e.ctx, ovOwner, a, 0, 10*time.Minute, "again later"); err != nil {
		e.t.Fatal(err)
	}
	e.wantTick(e.tickOnce("s"), 1, 3, a, "previous released with a delay")
	if err := e.qs.KickJob(e.ctx, a); err != nil {
		e.t.Fatal(err)
	}
	e.reserveOne("sc", a)
	e.wantTick(e.tickAfterTimeout("s"), 1, 4, a, "previous timed out")
	e.reserveOne("sc", a)
	if err := e.qs.Bury(e.ctx, ovOwner, a, 0, "failed"); err != nil {
		e.t.Fatal(err)
	}
	st = e.tickOnce("s")
	b := queue.ID(st.LastJob)
	if b == a || b == 0 {
		e.t.Fatalf("previous buried: last job %d, want a new one", b)
	}
	e.wantTick(st, 2, 4, b, "previous buried")
	e.reserveOne("sc", b)
	if _, err := e.qs.Delete(e.ctx, ovOwner, []queue.ID{b}); err != nil {
		e.t.Fatal(err)
	}
	st = e.tickOnce("s")
	e.wantTick(st, 3, 4, queue.ID(st.LastJob), "previous deleted")
	if ready := e.inState("sc", queue.Ready); len(ready) != 1 {
		e.t.Fatalf("ready jobs %v, want the last tick's alone", ready)
	}
	// A trigger puts its job whatever the policy, and is the previous job after.
	f, err := e.c.Trigger(e.ctx, "s")
	if err != nil {
		e.t.Fatal(err)
	}
	if st := e.get("s"); st.LastJob != f.JobID || st.Fires != 4 {
		e.t.Fatalf("after a trigger: last job %d fires %d, want %d 4", st.LastJob, st.Fires, f.JobID)
	}
	// Every tick either fired or was counted skipped.
	if st := e.get("s"); st.Fires-1+st.Skips != 7 || st.Misfires != 0 {
		e.t.Fatalf("fires %d (one a trigger) + skips %d + misfires %d, want 7 ticks", st.Fires, st.Skips, st.Misfires)
	}
}

// testScOverlapBufferOne: a tick whose previous job is reserved puts its
// job held behind it — delayed with no due time, not ready while the
// previous job is reserved, released or back after a timeout — and the
// held job becomes ready in the same operation that ends the previous
// one: a delete, a bury, a cancel. A tick that finds the previous job
// waiting (held, ready or delayed) puts nothing, so at most one job of
// the schedule waits.
func testScOverlapBufferOne(e *scEnv) {
	e.set(ovSchedule("b", schedule.OverlapBufferOne))
	a := queue.ID(e.tickOnce("b").LastJob)
	e.wantTick(e.tickOnce("b"), 1, 1, a, "previous ready")
	e.reserveOne("sc", a)
	st := e.tickOnce("b")
	b := queue.ID(st.LastJob)
	e.wantTick(st, 2, 1, b, "previous reserved: one waits behind it")
	e.wantHeld("sc", b, "behind a reserved job")
	// Released, the previous job is still live: b waits.
	if err := e.qs.Release(e.ctx, ovOwner, a, 0, 0, "again"); err != nil {
		e.t.Fatal(err)
	}
	e.wantReady("sc", []queue.ID{a}, "the previous job released")
	e.wantHeld("sc", b, "the previous job released")
	e.reserveOne("sc", a)
	e.wantTick(e.tickOnce("b"), 2, 2, b, "a third tick while one is held")
	e.wantHeld("sc", b, "after a skipped tick")
	// Its TTR runs out: ready again, still live; the tick finds b held.
	e.wantTick(e.tickAfterTimeout("b"), 2, 3, b, "previous job timed out")
	e.wantReady("sc", []queue.ID{a}, "the previous job timed out")
	e.wantHeld("sc", b, "the previous job timed out")
	e.reserveOne("sc", a)
	e.wakes("sc", "the previous job deleted", func() {
		if _, err := e.qs.Delete(e.ctx, ovOwner, []queue.ID{a}); err != nil {
			e.t.Fatal(err)
		}
	})
	e.wantReady("sc", []queue.ID{b}, "the previous job deleted")
	e.wantTick(e.tickOnce("b"), 2, 4, b, "one ready already")
	// Buried: the one held behind it is ready at once.
	e.reserveOne("sc", b)
	st = e.tickOnce("b")
	c := queue.ID(st.LastJob)
	e.wantTick(st, 3, 4, c, "held behind b")
	e.wantHeld("sc", c, "behind b")
	e.wakes("sc", "the previous job buried", func() {
		if err := e.qs.Bury(e.ctx, ovOwner, b, 0, "failed"); err != nil {
			e.t.Fatal(err)
		}
	})
	e.wantReady("sc", []queue.ID{c}, "the previous job buried")
	// Cancelled: likewise.
	e.reserveOne("sc", c)
	st = e.tickOnce("b")
	d := queue.ID(st.LastJob)
	e.wantTick(st, 4, 4, d, "held behind c")
	e.wantHeld("sc", d, "behind c")
	cs, _ := e.qs.(queue.CancelStore)
	if cs == nil {
		e.t.Fatal("the queue store of a schedule store must cancel (queue.CancelStore)")
	}
	e.wakes("sc", "the previous job cancelled", func() {
		if _, err := cs.Cancel(e.ctx, c, "stop"); err != nil {
			e.t.Fatal(err)
		}
	})
	e.wantReady("sc", []queue.ID{d}, "the previous job cancelled")
	// A held job kicked is ready at once; its previous job's end then
	// changes nothing.
	e.reserveOne("sc", d)
	st = e.tickOnce("b")
	f := queue.ID(st.LastJob)
	e.wantHeld("sc", f, "behind d")
	if err := e.qs.KickJob(e.ctx, f); err != nil {
		e.t.Fatal(err)
	}
	e.wantReady("sc", []queue.ID{f}, "the held job kicked")
	if _, err := e.qs.Delete(e.ctx, ovOwner, []queue.ID{d}); err != nil {
		e.t.Fatal(err)
	}
	e.wantReady("sc", []queue.ID{f}, "the previous job of a kicked one deleted")
	if st := e.get("b"); st.Fires+st.Skips != 9 || st.Misfires != 0 {
		e.t.Fatalf("fires %d + skips %d + misfires %d, want 9 ticks", st.Fires, st.Skips, st.Misfires)
	}
}

// wantHeld checks that job id of tube is held behind a running job:
// delayed with no time left, not ready.
func (e *scEnv) wantHeld(tube string, id queue.ID, what string) {
	e.t.Helper()
	js, err := e.qs.StatsJob(e.ctx, id)
	if err != nil || js.State != queue.Delayed || js.TimeLeft != 0 {
		e.t.Fatalf("%s: job %d: state %v time left %v %v, want held (delayed, no time left)", what, id, js.State, js.TimeLeft, err)
	}
	for _, r := range e.inState(tube, queue.Ready) {
		if r == id {
			e.t.Fatalf("%s: held job %d is ready", what, id)
		}
	}
}

// wakes runs end, which ends a running job, and checks that the store's
// queue.Notifier, when it has one, wakes the waiters of tube: the job
// held behind it became ready then, not at a later tick.
func (e *scEnv) wakes(tube, what string, end func()) {
	e.t.Helper()
	n, ok := e.qs.(queue.Notifier)
	if !ok {
		end()
		return
	}
	woken := make(chan struct{}, 1)
	stop, err := n.Listen(e.ctx, tube, func(string) {
		select {
		case woken <- struct{}{}:
		default:
		}
	})
	if err != nil {
		e.t.Fatal(err)
	}
	defer stop()
	end()
	select {
	case <-woken:
	case <-time.After(10 * time.Second):
		e.t.Fatalf("%s: the waiters of %s were not woken", what, tube)
	}
}

// wantReady checks the ready jobs of tube.
func (e *scEnv) wantReady(tube string, want []queue.ID, what string) {
	e.t.Helper()
	if got := e.inState(tube, queue.Ready); !slices.Equal(got, want) {
		e.t.Fatalf("%s: ready %v, want %v", what, got, want)
	}
}

// testScOverlapCancelPrevious: a tick cancels the previous job wherever it
// waits or runs (ready, delayed, reserved: its holder told, its later
// delete refused), leaves a buried one alone, and puts its own.
func testScOverlapCancelPrevious(e *scEnv) {
	e.set(ovSchedule("c", schedule.OverlapCancelPrevious))
	cs, _ := e.qs.(queue.CancelStore)
	if cs == nil {
		e.t.Fatal("the queue store of a schedule store must cancel (queue.CancelStore)")
	}
	type told struct {
		id     queue.ID
		reason string
	}
	heard := make(chan told, 16)
	stop, err := cs.ListenCancel(e.ctx, "sc", func(id queue.ID, reason string) {
		if id != 0 {
			heard <- told{id, reason}
		}
	})
	if err != nil {
		e.t.Fatal(err)
	}
	defer stop()
	// cancelled checks the tick st, which fired for the fires-th time: it
	// cancelled prev, which was state (no longer found), and put its own
	// job, returned.
	cancelled := func(st schedule.State, fires uint64, prev queue.ID, state string) queue.ID {
		e.t.Helper()
		id := queue.ID(st.LastJob)
		e.wantTick(st, fires, 0, id, "previous "+state)
		if _, err := e.qs.StatsJob(e.ctx, prev); !errors.Is(err, queue.ErrNotFound) {
			e.t.Fatalf("%s previous: job %d: %v, want ErrNotFound", state, prev, err)
		}
		return id
	}
	a := queue.ID(e.tickOnce("c").LastJob)
	b := cancelled(e.tickOnce("c"), 2, a, "ready")
	e.reserveOne("sc", b)
	st := e.tickOnce("c")
	c := cancelled(st, 3, b, "reserved")
	select {
	case h := <-heard:
		if h.id != b || h.reason != schedule.CancelReason("c", st.Last[0].Tick) {
			e.t.Fatalf("holder told %d %q, want %d %q", h.id, h.reason, b, schedule.CancelReason("c", st.Last[0].Tick))
		}
	case <-time.After(10 * time.Second):
		e.t.Fatal("the holder of the reserved previous job was not told")
	}
	if errs, err := e.qs.Delete(e.ctx, ovOwner, []queue.ID{b}); err != nil || !errors.Is(errs[0], queue.ErrNotFound) {
		e.t.Fatalf("holder's delete after the cancel: %v %v, want ErrNotFound", errs, err)
	}
	e.reserveOne("sc", c)
	if err := e.qs.Release(e.ctx, ovOwner, c, 0, 10*time.Minute, ""); err != nil {
		e.t.Fatal(err)
	}
	d := cancelled(e.tickOnce("c"), 4, c, "delayed")
	e.reserveOne("sc", d)
	// Its TTR runs out before the tick: ready again, cancelled, no one told.
	f := cancelled(e.tickAfterTimeout("c"), 5, d, "timed-out")
	e.reserveOne("sc", f)
	if err := e.qs.Bury(e.ctx, ovOwner, f, 0, ""); err != nil {
		e.t.Fatal(err)
	}
	st = e.tickOnce("c")
	e.wantTick(st, 6, 0, queue.ID(st.LastJob), "previous buried")
	if js, err := e.qs.StatsJob(e.ctx, f); err != nil || js.State != queue.Buried {
		e.t.Fatalf("a buried previous job is left alone: %+v %v", js, err)
	}
	select {
	case h := <-heard:
		e.t.Fatalf("told of %d %q: only the reserved one's holder is told", h.id, h.reason)
	default:
	}
}

// testScPauseOnFailure: a tick that finds the previous job buried pauses
// the schedule, puts nothing, counts a skip and records why; a resume
// clears the reason and the next tick fires. Without the option the
// tick fires.
func testScPauseOnFailure(e *scEnv) {
	s := ovSchedule("f", schedule.OverlapAllow)
	s.PauseOnFailure = true
	e.set(s)
	a := queue.ID(e.tickOnce("f").LastJob)
	// A released job (not a failure yet) does not pause it.
	e.reserveOne("sc", a)
	if err := e.qs.Release(e.ctx, ovOwner, a, 0, 0, "retry"); err != nil {
		e.t.Fatal(err)
	}
	st := e.tickOnce("f")
	b := queue.ID(st.LastJob)
	e.wantTick(st, 2, 0, b, "previous released")
	e.jobs("sc") // a and b done
	c := queue.ID(e.tickOnce("f").LastJob)
	e.reserveOne("sc", c)
	if err := e.qs.Bury(e.ctx, ovOwner, c, 0, "boom"); err != nil {
		e.t.Fatal(err)
	}
	st = e.tickOnce("f")
	if !st.Paused || st.PauseReason != schedule.PauseReasonBuried(uint64(c), "boom") {
		e.t.Fatalf("after a buried job: paused %v reason %q, want paused with %q", st.Paused, st.PauseReason, schedule.PauseReasonBuried(uint64(c), "boom"))
	}
	e.wantTick(st, 3, 1, c, "paused itself")
	if ready := e.inState("sc", queue.Ready); len(ready) != 0 {
		e.t.Fatalf("ready %v: the pausing tick puts nothing", ready)
	}
	if _, err := e.c.Pause(e.ctx, "f"); err != nil {
		e.t.Fatal(err)
	}
	if st := e.get("f"); st.PauseReason == "" {
		e.t.Fatal("a pause of a paused schedule cleared the reason")
	}
	st, err := e.c.Resume(e.ctx, "f")
	if err != nil || st.Paused || st.PauseReason != "" {
		e.t.Fatalf("Resume: paused %v reason %q %v", st.Paused, st.PauseReason, err)
	}
	st = e.tickOnce("f")
	if st.Paused || st.Fires != 4 {
		e.t.Fatalf("after the resume: paused %v fires %d, want a fire (the buried job acknowledged)", st.Paused, st.Fires)
	}
	// Without PauseOnFailure a buried previous job changes nothing.
	s = ovSchedule("g", schedule.OverlapAllow)
	s.Job.Tube = "sc2"
	e.set(s)
	g := queue.ID(e.tickOnce("g").LastJob)
	e.reserveOne("sc2", g)
	if err := e.qs.Bury(e.ctx, ovOwner, g, 0, "boom"); err != nil {
		e.t.Fatal(err)
	}
	if st := e.tickOnce("g"); st.Paused || st.Fires != 2 {
		e.t.Fatalf("without PauseOnFailure: paused %v fires %d", st.Paused, st.Fires)
	}
	if _, err := e.c.Set(e.ctx, schedule.Schedule{Name: "bad", Spec: "@every 1m", Job: schedule.Job{Tube: "sc"}, Overlap: 9}); !errors.Is(err, schedule.ErrInvalidOption) {
		e.t.Fatalf("Overlap 9: %v, want ErrInvalidOption", err)
	}
	// The policy is part of the definition: a change of it is an update.
	s2 := ovSchedule("g", schedule.OverlapSkip)
	s2.Job.Tube = "sc2"
	if st := e.set(s2); st.Overlap != schedule.OverlapSkip {
		e.t.Fatalf("Set with a new policy: %v", st.Overlap)
	}
}
