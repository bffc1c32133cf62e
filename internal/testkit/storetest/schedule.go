package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/schedule"
)

// NewScheduleStore returns a fresh, empty schedule store whose clock is
// clock.Now, and the queue store its fires put jobs into. It registers its
// own cleanup with t.
type NewScheduleStore func(t *testing.T, clock *Clock) (schedule.Store, queue.Store)

// Schedule runs the conformance suite for the schedule.Store contract
// against stores made by newStore, one fresh store per subtest. The cases
// drive the store through schedule.Client with the manual clock, firing
// with Client.FireDue, and read the jobs put from the queue store.
func Schedule(t *testing.T, newStore NewScheduleStore) {
	for _, c := range []struct {
		name string
		run  func(e *scEnv)
	}{
		{"SetGetListDelete", testScSetGetListDelete},
		{"OncePerTick", testScOncePerTick},
		{"RacingClients", testScRacingClients},
		{"Skip", testScSkip},
		{"FireOnce", testScFireOnce},
		{"CatchUp", testScCatchUp},
		{"Grace", testScGrace},
		{"ZoneDSTSpring", testScDSTSpring},
		{"ZoneDSTAutumn", testScDSTAutumn},
		{"StartEnd", testScStartEnd},
		{"PauseResume", testScPauseResume},
		{"StoreClock", testScStoreClock},
		{"UpdateWhileDue", testScUpdateWhileDue},
		{"TriggerNow", testScTrigger},
		{"LastFires", testScLastFires},
		{"NotDue", testScNotDue},
		{"StaleTube", testScStaleTube},
		{"BadInput", testScBadInput},
		{"NotifierTopicsAndClose", testScNotifier},
		{"OverlapSkip", testScOverlapSkip},
		{"OverlapBufferOne", testScOverlapBufferOne},
		{"OverlapCancelPrevious", testScOverlapCancelPrevious},
		{"PauseOnFailure", testScPauseOnFailure},
	} {
		t.Run(c.name, func(t *testing.T) {
			clock := NewClock(time.Date(2026, 1, 5, 12, 0, 0, 0, time.UTC))
			ss, qs := newStore(t, clock)
			cl, err := schedule.New(ss, nil)
			if err != nil {
				t.Fatal(err)
			}
			e := &scEnv{t: t, ctx: t.Context(), clock: clock, ss: ss, qs: qs, c: cl}
			c.run(e)
			e.checkInvariants()
		})
	}
}

type scEnv struct {
	t     *testing.T
	ctx   context.Context
	clock *Clock
	ss    schedule.Store
	qs    queue.Store
	c     *schedule.Client
	// closed: the case closed the store (no invariants to check after).
	closed bool
}

func (e *scEnv) set(s schedule.Schedule) schedule.State {
	e.t.Helper()
	if s.Job.Tube == "" {
		s.Job.Tube = "sc"
	}
	st, err := e.c.Set(e.ctx, s)
	if err != nil {
		e.t.Fatalf("Set(%s): %v", s.Name, err)
	}
	return st
}

func (e *scEnv) get(name string) schedule.State {
	e.t.Helper()
	st, err := e.c.Get(e.ctx, name)
	if err != nil {
		e.t.Fatalf("Get(%s): %v", name, err)
	}
	return st
}

func (e *scEnv) fireDue() {
	e.t.Helper()
	if _, err := e.c.FireDue(e.ctx); err != nil {
		e.t.Fatalf("FireDue: %v", err)
	}
}

// advanceTo moves the clock to t.
func (e *scEnv) advanceTo(t time.Time) {
	e.t.Helper()
	if d := t.Sub(e.clock.Now()); d > 0 {
		e.clock.Advance(d)
	}
}

// jobs reserves and deletes every ready job of tube and returns the bodies.
func (e *scEnv) jobs(tube string) []queue.Job {
	e.t.Helper()
	var out []queue.Job
	for {
		res, err := e.qs.Reserve(e.ctx, queue.ReserveRequest{Owner: "storetest", Tubes: []string{tube}, Max: 100})
		if err != nil {
			e.t.Fatalf("Reserve: %v", err)
		}
		if len(res.Jobs) == 0 {
			return out
		}
		ids := make([]queue.ID, len(res.Jobs))
		for i, j := range res.Jobs {
			ids[i] = j.ID
		}
		if _, err := e.qs.Delete(e.ctx, "storetest", ids); err != nil {
			e.t.Fatalf("Delete: %v", err)
		}
		out = append(out, res.Jobs...)
	}
}

func (e *scEnv) wantJobs(tube string, n int) []queue.Job {
	e.t.Helper()
	js := e.jobs(tube)
	if len(js) != n {
		e.t.Fatalf("%d jobs in %s, want %d", len(js), tube, n)
	}
	return js
}

// ticksOf returns the ticks of the schedule's last fires, oldest first.
func ticksOf(st schedule.State) []time.Time {
	out := make([]time.Time, len(st.Last))
	for i, f := range st.Last {
		out[len(out)-1-i] = f.Tick
	}
	return out
}

func sameTimes(a, b []time.Time) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].Equal(b[i]) {
			return false
		}
	}
	return true
}

func testScSetGetListDelete(e *scEnv) {
	s := schedule.Schedule{Name: "b", Spec: "@hourly", Job: schedule.Job{Tube: "sc", Body: []byte("x"), Priority: 7, TTR: 5 * time.Second}}
	st := e.set(s)
	if st.Version == 0 || !st.Next.Equal(time.Date(2026, 1, 5, 13, 0, 0, 0, time.UTC)) {
		e.t.Fatalf("after Set: %+v", st)
	}
	again := e.set(s)
	if again.Version != st.Version {
		e.t.Fatalf("an unchanged Set changed the version: %d -> %d", st.Version, again.Version)
	}
	s.Job.Body = []byte("y")
	if changed := e.set(s); changed.Version <= st.Version {
		e.t.Fatalf("a changed Set kept the version %d", changed.Version)
	}
	e.set(schedule.Schedule{Name: "a", Spec: "@daily"})
	e.set(schedule.Schedule{Name: "c", Spec: "@daily"})
	got := e.get("b")
	if string(got.Job.Body) != "y" || got.Job.Priority != 7 || got.Job.TTR != 5*time.Second || got.Spec != "@hourly" {
		e.t.Fatalf("Get: %+v", got)
	}
	list, err := e.c.List(e.ctx, "a", 10)
	if err != nil || len(list) != 2 || list[0].Name != "b" || list[1].Name != "c" {
		e.t.Fatalf("List after a: %v %v", list, err)
	}
	if err := e.c.Delete(e.ctx, "b"); err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.c.Get(e.ctx, "b"); !errors.Is(err, schedule.ErrNotFound) {
		e.t.Fatalf("Get after Delete: %v", err)
	}
	if err := e.c.Delete(e.ctx, "b"); !errors.Is(err, schedule.ErrNotFound) {
		e.t.Fatalf("second Delete: %v", err)
	}
}

func testScOncePerTick(e *scEnv) {
	e.set(schedule.Schedule{Name: "m", Spec: "@every 1m", Job: schedule.Job{Body: []byte("tick")}})
	for i := range 3 {
		e.clock.Advance(time.Minute)
		e.fireDue()
		e.fireDue() // nothing more is due
		js := e.wantJobs("sc", 1)
		if string(js[0].Body) != "tick" || js[0].TTR != queue.DefaultTTR {
			e.t.Fatalf("fire %d: body %q, TTR %v; want tick and the default TTR (the schedule gave none)", i, js[0].Body, js[0].TTR)
		}
		// The job carries its tick.
		name, tick, ok := schedule.ParseJobKey(js[0].UniqueKey)
		if want := e.clock.Now().Truncate(time.Minute); !ok || name != "m" || !tick.Equal(want) {
			e.t.Fatalf("fire %d: the job's key %q reads as (%q, %v, %v), want (m, %v)", i, js[0].UniqueKey, name, tick, ok, want)
		}
	}
	st := e.get("m")
	if st.Fires != 3 || st.Misfires != 0 {
		e.t.Fatalf("fires %d misfires %d", st.Fires, st.Misfires)
	}
	for _, f := range st.Last {
		if f.Lateness != 0 {
			e.t.Fatalf("lateness %v with the clock exactly on the tick", f.Lateness)
		}
	}
}

func testScRacingClients(e *scEnv) {
	e.set(schedule.Schedule{Name: "r", Spec: "@every 1s", Misfire: schedule.CatchUp(1000)})
	clients := make([]*schedule.Client, 4)
	for i := range clients {
		clients[i], _ = schedule.New(e.ss, nil)
	}
	total := 0
	for round := range 20 {
		e.clock.Advance(time.Duration(1+round%3) * time.Second)
		var wg sync.WaitGroup
		errs := make(chan error, len(clients))
		for _, c := range clients {
			wg.Go(func() {
				if _, err := c.FireDue(e.ctx); err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			e.t.Fatal(err)
		}
		total += 1 + round%3
	}
	js := e.wantJobs("sc", total)
	st := e.get("r")
	if int(st.Fires) != total {
		e.t.Fatalf("Fires = %d, want %d (jobs %d)", st.Fires, total, len(js))
	}
}

// outage sets an "@every 1m" schedule with policy p, lets 5 minutes and
// 30 seconds pass unfired, fires, and returns the schedule.
func outage(e *scEnv, p schedule.Policy) schedule.State {
	e.t.Helper()
	e.set(schedule.Schedule{Name: "o", Spec: "@every 1m", Misfire: p, Grace: 10 * time.Second})
	e.clock.Advance(5*time.Minute + 30*time.Second) // ticks at 1..5 min are due, the latest 30 s late
	e.fireDue()
	return e.get("o")
}

func testScSkip(e *scEnv) {
	st := outage(e, schedule.Skip())
	e.wantJobs("sc", 0)
	if st.Misfires != 5 || st.Fires != 0 {
		e.t.Fatalf("misfires %d fires %d, want 5 and 0", st.Misfires, st.Fires)
	}
	base := time.Date(2026, 1, 5, 12, 0, 0, 0, time.UTC)
	if !st.Next.Equal(base.Add(6 * time.Minute)) {
		e.t.Fatalf("next %v", st.Next)
	}
}

func testScFireOnce(e *scEnv) {
	st := outage(e, schedule.FireOnce())
	e.wantJobs("sc", 1)
	base := time.Date(2026, 1, 5, 12, 0, 0, 0, time.UTC)
	if st.Misfires != 4 || st.Fires != 1 || !st.Last[0].Tick.Equal(base.Add(5*time.Minute)) || st.Last[0].Lateness != 30*time.Second {
		e.t.Fatalf("after an outage: %+v", st)
	}
}

func testScCatchUp(e *scEnv) {
	st := outage(e, schedule.CatchUp(3))
	e.wantJobs("sc", 3)
	base := time.Date(2026, 1, 5, 12, 0, 0, 0, time.UTC)
	want := []time.Time{base.Add(3 * time.Minute), base.Add(4 * time.Minute), base.Add(5 * time.Minute)}
	if st.Misfires != 2 || !sameTimes(ticksOf(st), want) {
		e.t.Fatalf("misfires %d ticks %v, want 2 and %v", st.Misfires, ticksOf(st), want)
	}
}

func testScGrace(e *scEnv) {
	// Late by less than the grace: every policy fires each tick, in order.
	e.set(schedule.Schedule{Name: "g", Spec: "@every 1s", Grace: 5 * time.Second})
	e.clock.Advance(3*time.Second + 500*time.Millisecond)
	e.fireDue()
	e.wantJobs("sc", 3)
	if st := e.get("g"); st.Misfires != 0 || st.Last[0].Lateness != 500*time.Millisecond {
		e.t.Fatalf("%+v", st)
	}
}

// dstCase sets "30 2 * * *" in Berlin at from (a local noon the day
// before a change of clocks) and checks that it fires once, at want, the
// night of the change, and next at dayAfter.
func dstCase(e *scEnv, from, want, dayAfter time.Time) {
	e.t.Helper()
	e.advanceTo(from)
	st := e.set(schedule.Schedule{Name: "berlin", Spec: "30 2 * * *", Zone: "Europe/Berlin"})
	if !st.Next.Equal(want) {
		e.t.Fatalf("next %v, want %v", st.Next, want)
	}
	e.advanceTo(want.Add(-time.Millisecond))
	e.fireDue()
	e.wantJobs("sc", 0)
	e.advanceTo(want)
	e.fireDue()
	e.wantJobs("sc", 1)
	// Through the rest of the day, nothing more fires.
	e.clock.Advance(3 * time.Hour)
	e.fireDue()
	e.wantJobs("sc", 0)
	st = e.get("berlin")
	if !st.Last[0].Tick.Equal(want) {
		e.t.Fatalf("tick %v, want %v", st.Last[0].Tick, want)
	}
	times, err := e.c.NextTimes(e.ctx, "berlin", 2)
	if err != nil || len(times) != 2 || !times[0].Equal(st.Next) || !times[1].After(times[0]) {
		e.t.Fatalf("NextTimes: %v %v", times, err)
	}
	if !st.Next.Equal(dayAfter) {
		e.t.Fatalf("the day after: %v, want %v", st.Next, dayAfter)
	}
}

func testScDSTSpring(e *scEnv) {
	berlin, _ := schedule.LoadZone("Europe/Berlin")
	// 2026-03-29: clocks jump from 02:00 CET to 03:00 CEST; 02:30 fires at 03:00.
	dstCase(e, time.Date(2026, 3, 28, 12, 0, 0, 0, berlin), time.Date(2026, 3, 29, 1, 0, 0, 0, time.UTC),
		time.Date(2026, 3, 30, 0, 30, 0, 0, time.UTC))
}

func testScDSTAutumn(e *scEnv) {
	berlin, _ := schedule.LoadZone("Europe/Berlin")
	// 2026-10-25: 02:00–03:00 happens twice; 02:30 fires once, at 02:30 CEST.
	dstCase(e, time.Date(2026, 10, 24, 12, 0, 0, 0, berlin), time.Date(2026, 10, 25, 0, 30, 0, 0, time.UTC),
		time.Date(2026, 10, 26, 1, 30, 0, 0, time.UTC))
}

func testScStartEnd(e *scEnv) {
	now := e.clock.Now()
	e.set(schedule.Schedule{Name: "se", Spec: "@every 1m", Start: now.Add(10 * time.Minute), End: now.Add(12 * time.Minute)})
	e.clock.Advance(9 * time.Minute)
	e.fireDue()
	e.wantJobs("sc", 0)
	e.clock.Advance(time.Minute)
	e.fireDue()
	e.wantJobs("sc", 1)
	e.clock.Advance(time.Minute)
	e.fireDue()
	e.clock.Advance(time.Minute)
	e.fireDue()
	e.wantJobs("sc", 2)
	e.clock.Advance(time.Hour)
	e.fireDue()
	e.wantJobs("sc", 0)
	st := e.get("se")
	if !st.Next.IsZero() || st.Fires != 3 {
		e.t.Fatalf("after End: next %v fires %d", st.Next, st.Fires)
	}
	if wait, err := e.c.FireDue(e.ctx); err != nil || wait >= 0 {
		e.t.Fatalf("FireDue with nothing scheduled: %v %v", wait, err)
	}
}

func testScPauseResume(e *scEnv) {
	e.set(schedule.Schedule{Name: "p", Spec: "@every 1m", Misfire: schedule.CatchUp(100)})
	if st, err := e.c.Pause(e.ctx, "p"); err != nil || !st.Paused {
		e.t.Fatalf("Pause: %+v %v", st, err)
	}
	e.clock.Advance(5*time.Minute + time.Second)
	e.fireDue()
	e.wantJobs("sc", 0)
	st, err := e.c.Resume(e.ctx, "p")
	if err != nil || st.Paused {
		e.t.Fatalf("Resume: %+v %v", st, err)
	}
	base := time.Date(2026, 1, 5, 12, 0, 0, 0, time.UTC)
	if !st.Next.Equal(base.Add(6 * time.Minute)) {
		e.t.Fatalf("resumed next %v: the paused ticks must not fire", st.Next)
	}
	e.clock.Advance(time.Minute)
	e.fireDue()
	e.wantJobs("sc", 1)
	if _, err := e.c.Pause(e.ctx, "nope"); !errors.Is(err, schedule.ErrNotFound) {
		e.t.Fatalf("Pause of a missing schedule: %v", err)
	}
}

// testScStoreClock sets, pauses and resumes schedules while the store's
// clock differs from the process's (time.Now, the only clock a Client could
// read besides the store's): first months behind it, then 5 s ahead (a
// server 5 s slow). Every next tick must follow the store's clock: the
// first tick after the set or the resume, no burst of ticks that the
// process thinks are past, none of the ticks passed while paused.
func testScStoreClock(e *scEnv) {
	for i, skew := range []time.Duration{0, 5 * time.Second} {
		if skew > 0 {
			e.advanceTo(time.Now().Add(skew))
		}
		name := fmt.Sprintf("skew%d", i)
		now := e.clock.Now()
		st := e.set(schedule.Schedule{Name: name, Spec: "@every 1s", Misfire: schedule.CatchUp(100)})
		if !st.Next.After(now) || st.Next.After(now.Add(time.Second)) {
			e.t.Fatalf("%s: set at %v (store clock) has next tick %v, want the first after it", name, now, st.Next)
		}
		e.fireDue()
		e.wantJobs("sc", 0)
		times, err := e.c.NextTimes(e.ctx, name, 3)
		if err != nil || len(times) != 3 || !times[0].Equal(st.Next) || !times[2].Equal(st.Next.Add(2*time.Second)) {
			e.t.Fatalf("%s: NextTimes %v %v, want 3 from %v", name, times, err, st.Next)
		}
		e.advanceTo(st.Next)
		e.fireDue()
		e.wantJobs("sc", 1)

		if _, err := e.c.Pause(e.ctx, name); err != nil {
			e.t.Fatal(err)
		}
		e.clock.Advance(6 * time.Second)
		now = e.clock.Now()
		st, err = e.c.Resume(e.ctx, name)
		if err != nil {
			e.t.Fatal(err)
		}
		if !st.Next.After(now) || st.Next.After(now.Add(time.Second)) {
			e.t.Fatalf("%s: resumed at %v (store clock) with next tick %v, want the first after it", name, now, st.Next)
		}
		e.fireDue()
		e.wantJobs("sc", 0)
		e.advanceTo(st.Next)
		e.fireDue()
		e.wantJobs("sc", 1)
		if _, err := e.c.Pause(e.ctx, name); err != nil {
			e.t.Fatal(err)
		}
	}
}

func testScUpdateWhileDue(e *scEnv) {
	st := e.set(schedule.Schedule{Name: "u", Spec: "@every 1m", Misfire: schedule.CatchUp(100)})
	e.clock.Advance(2*time.Minute + 10*time.Second)
	// Another process planned a fire of the old definition...
	stale := schedule.FireRequest{Name: "u", Version: st.Version, Next: st.Next, Tick: st.Next, NewNext: st.Next.Add(time.Minute)}
	// ...and the definition changes before it fires.
	up := e.set(schedule.Schedule{Name: "u", Spec: "@every 1h", Misfire: schedule.CatchUp(100)})
	if _, err := e.ss.Fire(e.ctx, stale); !errors.Is(err, schedule.ErrConflict) {
		e.t.Fatalf("stale fire: %v, want ErrConflict", err)
	}
	e.fireDue()
	e.wantJobs("sc", 0)
	if want := time.Date(2026, 1, 5, 13, 0, 0, 0, time.UTC); !up.Next.Equal(want) {
		e.t.Fatalf("updated next %v, want %v", up.Next, want)
	}
}

func testScTrigger(e *scEnv) {
	st := e.set(schedule.Schedule{Name: "t", Spec: "@daily", Job: schedule.Job{Body: []byte("now")}})
	e.clock.Advance(time.Second)
	f, err := e.c.Trigger(e.ctx, "t")
	if err != nil || !f.Manual || !f.Tick.Equal(e.clock.Now()) || f.JobID == 0 {
		e.t.Fatalf("Trigger: %+v %v", f, err)
	}
	js := e.wantJobs("sc", 1)
	if uint64(js[0].ID) != f.JobID || string(js[0].Body) != "now" {
		e.t.Fatalf("job %+v, fire %+v", js[0], f)
	}
	if got := e.get("t"); !got.Next.Equal(st.Next) {
		e.t.Fatalf("Trigger moved next from %v to %v", st.Next, got.Next)
	}
	if _, err := e.c.Trigger(e.ctx, "none"); !errors.Is(err, schedule.ErrNotFound) {
		e.t.Fatalf("Trigger of a missing schedule: %v", err)
	}
}

func testScLastFires(e *scEnv) {
	e.set(schedule.Schedule{Name: "l", Spec: "@every 1m"})
	for i := range schedule.KeepFires + 3 {
		e.clock.Advance(time.Minute + time.Duration(i)*time.Millisecond)
		e.fireDue()
	}
	st := e.get("l")
	if len(st.Last) != schedule.KeepFires || st.Fires != schedule.KeepFires+3 {
		e.t.Fatalf("%d last fires, %d fires", len(st.Last), st.Fires)
	}
	js := e.jobs("sc")
	ids := map[uint64]bool{}
	for _, j := range js {
		ids[uint64(j.ID)] = true
	}
	for i, f := range st.Last {
		if i > 0 && !f.Tick.Before(st.Last[i-1].Tick) {
			e.t.Fatalf("last fires not newest first: %v", ticksOf(st))
		}
		if !ids[f.JobID] {
			e.t.Fatalf("fire %d names job %d, not put", i, f.JobID)
		}
		if f.Lateness < 0 || f.Lateness > time.Second {
			e.t.Fatalf("fire %d lateness %v", i, f.Lateness)
		}
	}
	// Cumulative clock drift of 0+1+…+12 ms shows as lateness of the newest.
	if want := time.Duration((schedule.KeepFires+2)*(schedule.KeepFires+3)/2) * time.Millisecond; st.Last[0].Lateness != want {
		e.t.Fatalf("newest lateness %v, want %v", st.Last[0].Lateness, want)
	}
}

func testScNotDue(e *scEnv) {
	st := e.set(schedule.Schedule{Name: "n", Spec: "@every 1m"})
	_, err := e.ss.Fire(e.ctx, schedule.FireRequest{Name: "n", Version: st.Version, Next: st.Next, Tick: st.Next, NewNext: st.Next.Add(time.Minute)})
	if !errors.Is(err, schedule.ErrNotDue) {
		e.t.Fatalf("early fire: %v, want ErrNotDue", err)
	}
	e.wantJobs("sc", 0)
	if got := e.get("n"); got.Version != st.Version {
		e.t.Fatal("an early fire changed the schedule")
	}
}

// A fire that names the tube its caller read finds nothing when the
// schedule was since re-created on another tube, however equal the rest.
func testScStaleTube(e *scEnv) {
	old := e.set(schedule.Schedule{Name: "st", Spec: "@every 1m", Job: schedule.Job{Tube: "one"}})
	if err := e.c.Delete(e.ctx, "st"); err != nil {
		e.t.Fatal(err)
	}
	cur := e.set(schedule.Schedule{Name: "st", Spec: "@every 1m", Job: schedule.Job{Tube: "two"}})
	e.advanceTo(cur.Next)
	for _, tube := range []string{old.Job.Tube, "three"} {
		_, err := e.ss.Fire(e.ctx, schedule.FireRequest{Name: "st", Tube: tube, Version: cur.Version, Next: cur.Next,
			Tick: cur.Next, NewNext: cur.Next.Add(time.Minute)})
		if !errors.Is(err, schedule.ErrNotFound) {
			e.t.Fatalf("a fire naming tube %q: %v, want ErrNotFound", tube, err)
		}
	}
	e.wantJobs("one", 0)
	e.wantJobs("two", 0)
	if got := e.get("st"); got.Version != cur.Version || got.Fires != 0 {
		e.t.Fatalf("a fire naming another tube changed the schedule: %+v", got)
	}
	res, err := e.ss.Fire(e.ctx, schedule.FireRequest{Name: "st", Tube: "two", Version: cur.Version, Next: cur.Next,
		Tick: cur.Next, NewNext: cur.Next.Add(time.Minute)})
	if err != nil || !res.Fired {
		e.t.Fatalf("a fire naming the schedule's tube: %+v, %v", res, err)
	}
	e.wantJobs("two", 1)
}

func testScBadInput(e *scEnv) {
	for _, s := range []schedule.Schedule{
		{Name: "", Spec: "@daily"},
		{Name: "x", Spec: "61 * * * *"},
		{Name: "x", Spec: "@daily", Zone: "Nowhere/City"},
		{Name: "x", Spec: "@daily", Job: schedule.Job{Tube: "bad tube"}},
	} {
		if _, err := e.c.Set(e.ctx, s); err == nil {
			e.t.Fatalf("Set(%+v) accepted", s)
		}
	}
	if list, err := e.c.List(e.ctx, "", 10); err != nil || len(list) != 0 {
		e.t.Fatalf("bad input stored something: %v %v", list, err)
	}
	// The tube of an existing schedule does not change.
	st := e.set(schedule.Schedule{Name: "moved", Spec: "@daily", Job: schedule.Job{Tube: "one"}})
	if _, err := e.c.Set(e.ctx, schedule.Schedule{Name: "moved", Spec: "@daily", Job: schedule.Job{Tube: "two"}}); !errors.Is(err, schedule.ErrInvalidOption) {
		e.t.Fatalf("a change of tube: %v, want ErrInvalidOption", err)
	}
	if got := e.get("moved"); got.Version != st.Version || got.Job.Tube != "one" {
		e.t.Fatalf("a refused change of tube changed the schedule: %+v", got)
	}
	if err := e.c.Delete(e.ctx, "moved"); err != nil {
		e.t.Fatal(err)
	}
	e.set(schedule.Schedule{Name: "moved", Spec: "@daily", Job: schedule.Job{Tube: "two"}})
}

// testScNotifier: a store's Notifier announces TopicDue alone, and refuses
// another topic with ErrNoTopic (as ttlhash's Notifier does); once the
// store is closed, Listen fails with ErrClosed as the store's methods do.
func testScNotifier(e *scEnv) {
	n, ok := e.ss.(schedule.Notifier)
	if !ok {
		e.t.Fatalf("%T is no schedule.Notifier", e.ss)
	}
	if _, err := n.Listen(e.ctx, "no such topic", func(string) {}); !errors.Is(err, schedule.ErrNoTopic) {
		e.t.Fatalf("Listen of an unknown topic: %v, want ErrNoTopic", err)
	}
	stop, err := n.Listen(e.ctx, schedule.TopicDue, func(string) {})
	if err != nil {
		e.t.Fatalf("Listen(TopicDue): %v", err)
	}
	stop()
	if err := e.qs.Close(); err != nil {
		e.t.Fatal(err)
	}
	e.closed = true
	if _, err := n.Listen(e.ctx, schedule.TopicDue, func(string) {}); !errors.Is(err, schedule.ErrClosed) {
		e.t.Errorf("Listen after Close: %v, want ErrClosed", err)
	}
	if _, err := e.ss.Get(e.ctx, "x"); !errors.Is(err, schedule.ErrClosed) {
		e.t.Errorf("Get after Close: %v, want ErrClosed", err)
	}
}
