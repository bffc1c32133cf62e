package storetest

import (
	"errors"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/hourglass-io/hourglass/queue"
)

// testStatsTube: every field of StatsTube, Urgent counting ready jobs with
// a priority below 1024 only.
func testStatsTube(t *testing.T, s *suite) {
	e := s.env(t)
	e.putPri("st", 0, "urgent 0")
	e.putPri("st", queue.UrgentPriority-1, "urgent 1023")
	n := e.putPri("st", queue.UrgentPriority, "not urgent 1024")
	d := e.put("st", queue.NewJob{Body: []byte("delayed"), Priority: 5, Delay: 10 * time.Second})
	e.buried(e.q, "st", 2, "buried")
	r := e.reserved(e.q, "st", queue.NewJob{Body: []byte("reserved"), Priority: 3})
	e.putPri("st-other", 0, "another tube")
	// Two reservations (the buried job's and the reserved one's), one bury.
	want := queue.TubeStats{Name: "st", Urgent: 2, Ready: 3, Reserved: 1, Delayed: 1, Buried: 1, TotalJobs: 6, Reserves: 2, Buries: 1}
	e.wantTubeStats("six jobs", want)

	e.ok("Delete", e.q.Delete(e.ctx, n))
	e.ok("Delete", e.q.Delete(e.ctx, d))
	want.Ready, want.Delayed, want.Deletes = 2, 0, 2
	e.wantTubeStats("two deleted", want)

	if n, err := e.q.Kick(e.ctx, "st", 1); err != nil || n != 1 {
		t.Fatalf("Kick = %d, %v", n, err)
	}
	want.Urgent, want.Ready, want.Buried = 3, 3, 0
	e.wantTubeStats("buried job kicked", want)

	e.ok("Release", e.q.Release(e.ctx, r, 2000, 0))
	want.Ready, want.Reserved = 4, 0
	e.wantTubeStats("reserved job released with priority 2000", want)

	e.ok("PauseTube", e.q.PauseTube(e.ctx, "st", 10*time.Second))
	e.advance(1500 * time.Millisecond)
	want.Pauses, want.Pause, want.PauseTimeLeft = 1, 10*time.Second, 8500*time.Millisecond
	e.wantTubeStats("paused 1.5s ago for 10s", want)

	e.ok("PauseTube again", e.q.PauseTube(e.ctx, "st", 5*time.Second))
	want.Pauses, want.Pause, want.PauseTimeLeft = 2, 5*time.Second, 5*time.Second
	e.wantTubeStats("paused again for 5s", want)

	e.advance(5 * time.Second)
	want.Pause, want.PauseTimeLeft = 0, 0
	e.wantTubeStats("pause over", want)

	e.put("st", queue.NewJob{Body: []byte("one more")})
	want.Urgent, want.Ready, want.TotalJobs = 4, 5, 7
	e.wantTubeStats("one more put", want)

	// A reservation whose TTR runs out counts a reserve and a timeout.
	j := e.reserve(e.q, "st")
	e.advance(j.TTR + time.Second)
	want.Reserves, want.Timeouts = 3, 1
	e.wantTubeStats("a reservation timed out", want)
	e.wantTubeStats("the other tube", queue.TubeStats{Name: "st-other", Urgent: 1, Ready: 1, TotalJobs: 1})
}

// testStatsTubeUnknown: StatsTube of a tube with no job and no pause is
// ErrNotFound, and looking at a tube does not create it.
func testStatsTubeUnknown(t *testing.T, s *suite) {
	e := s.env(t)
	notFound := func(tube, why string) {
		t.Helper()
		if ts, err := e.q.StatsTube(e.ctx, tube); !errors.Is(err, queue.ErrNotFound) {
			t.Errorf("StatsTube(%q) %s = %+v, %v; want ErrNotFound", tube, why, ts, err)
		}
	}
	notFound("nothing", "of a tube never used")
	e.noReserve(e.q, "ghost")
	if _, err := e.q.PeekReady(e.ctx, "ghost"); !errors.Is(err, queue.ErrNotFound) {
		t.Errorf("PeekReady(ghost): %v", err)
	}
	if n, err := e.q.Kick(e.ctx, "ghost", 1); err != nil || n != 0 {
		t.Errorf("Kick(ghost) = %d, %v", n, err)
	}
	notFound("ghost", "after a reserve, a peek and a kick")

	id := e.putPri("brief", 0, "x")
	e.reserveWant(e.q, id, "brief")
	if ts := e.statsTube("brief"); ts.Reserved != 1 || ts.TotalJobs != 1 {
		t.Errorf("StatsTube(brief) with a reserved job: %+v", ts)
	}
	e.ok("Delete", e.q.Delete(e.ctx, id))
	notFound("brief", "after its only job was deleted")
	if got := e.tubes(); len(got) != 0 {
		t.Errorf("Tubes = %q, want none", got)
	}
}

// testStats: Stats sums the tubes.
func testStats(t *testing.T, s *suite) {
	e := s.env(t)
	if diff := gocmp.Diff(queue.Stats{}, e.stats()); diff != "" {
		t.Errorf("Stats of an empty store (-want +got):\n%s", diff)
	}
	a1 := e.putPri("sa", 0, "urgent")
	a2 := e.putPri("sa", 2000, "not urgent")
	a3 := e.put("sa", queue.NewJob{Body: []byte("delayed"), Delay: time.Minute})
	a4 := e.buried(e.q, "sa", 1, "buried")
	e.reserved(e.q2, "sb", queue.NewJob{Body: []byte("reserved"), TTR: time.Second})
	e.putPri("sb", 5, "urgent too")
	want := queue.Stats{Urgent: 2, Ready: 3, Reserved: 1, Delayed: 1, Buried: 1, TotalJobs: 6, Tubes: 2}
	if diff := gocmp.Diff(want, e.stats()); diff != "" {
		t.Errorf("Stats (-want +got):\n%s", diff)
	}

	e.advance(time.Second)
	want.Urgent, want.Ready, want.Reserved, want.Timeouts = 3, 4, 0, 1
	if diff := gocmp.Diff(want, e.stats()); diff != "" {
		t.Errorf("Stats after a timeout (-want +got):\n%s", diff)
	}

	errs, err := e.q.DeleteMany(e.ctx, []queue.ID{a1, a2, a3, a4})
	e.ok("DeleteMany", err)
	if !errsMatch(errs, make([]error, 4)) {
		t.Fatalf("DeleteMany: %v", errs)
	}
	want = queue.Stats{Urgent: 2, Ready: 2, TotalJobs: 6, Timeouts: 1, Tubes: 1}
	if diff := gocmp.Diff(want, e.stats()); diff != "" {
		t.Errorf("Stats after tube sa emptied (-want +got):\n%s", diff)
	}
}

// testPauseTube: reserves skip a paused tube until the pause ends or is
// ended; puts, peeks, kicks and reserve-by-ID still work.
func testPauseTube(t *testing.T, s *suite) {
	e := s.env(t)
	a1 := e.putPri("pa", 0, "a1")
	b1 := e.putPri("pb", 10, "b1")
	e.ok("PauseTube", e.q.PauseTube(e.ctx, "pa", 10*time.Second))
	e.reserveWant(e.q, b1, "pa", "pb")
	e.noReserve(e.q, "pa", "pb")
	res, err := e.store.Reserve(e.ctx, queue.ReserveRequest{Owner: e.q.Owner(), Tubes: []string{"pa"}, Max: 1})
	e.ok("Store.Reserve", err)
	if len(res.Jobs) != 0 || res.Next != 10*time.Second || res.NextTube != "pa" {
		t.Errorf("Store.Reserve of a paused tube = %d jobs, Next %v in %q; want none, 10s in pa", len(res.Jobs), res.Next, res.NextTube)
	}

	// A paused tube still takes puts, peeks, kicks and reserve-by-ID.
	a2 := e.putPri("pa", 1, "a2")
	if j, err := e.q.PeekReady(e.ctx, "pa"); err != nil || j.ID != a1 {
		t.Errorf("PeekReady(pa) = %d, %v; want %d", j.ID, err, a1)
	}
	a3 := e.buried(e.q2, "pa", 2, "a3")
	if n, err := e.q.Kick(e.ctx, "pa", 1); err != nil || n != 1 {
		t.Errorf("Kick(pa) = %d, %v; want 1", n, err)
	}
	e.wantState(a3, queue.Ready)
	e.reserveJob(e.q, a2)
	e.ok("Release", e.q.Release(e.ctx, a2, 1, 0))
	e.noReserve(e.q, "pa")

	e.advance(10*time.Second - time.Millisecond)
	if ts := e.statsTube("pa"); ts.Pause != 10*time.Second || ts.PauseTimeLeft != time.Millisecond {
		t.Errorf("1ms before the pause ends: Pause %v, PauseTimeLeft %v; want 10s and 1ms", ts.Pause, ts.PauseTimeLeft)
	}
	e.noReserve(e.q, "pa")
	e.advance(time.Millisecond)
	e.reserveWant(e.q, a1, "pa", "pb")

	// Pause 0 ends a pause early.
	e.ok("PauseTube 1h", e.q.PauseTube(e.ctx, "pa", time.Hour))
	e.noReserve(e.q, "pa")
	if ts := e.statsTube("pa"); ts.Pauses != 2 || ts.Pause != time.Hour || ts.PauseTimeLeft != time.Hour {
		t.Errorf("second pause: %+v, want Pauses 2, Pause and PauseTimeLeft 1h", ts)
	}
	e.ok("PauseTube 0", e.q.PauseTube(e.ctx, "pa", 0))
	if ts := e.statsTube("pa"); ts.Pause != 0 || ts.PauseTimeLeft != 0 {
		t.Errorf("after PauseTube 0: Pause %v, PauseTimeLeft %v; want 0", ts.Pause, ts.PauseTimeLeft)
	}
	e.reserveWant(e.q, a2, "pa")
	e.reserveWant(e.q, a3, "pa")
}

// testTubes: Tubes lists the tubes that hold a job or a pause, in the order
// they were created; a tube that holds neither is gone.
func testTubes(t *testing.T, s *suite) {
	e := s.env(t)
	want := func(step string, names ...string) {
		t.Helper()
		got := e.tubes()
		if diff := gocmp.Diff(names, got, jobOpts); diff != "" {
			t.Errorf("%s: Tubes (-want +got):\n%s", step, diff)
		}
		if st := e.stats(); st.Tubes != int64(len(names)) {
			t.Errorf("%s: Stats.Tubes = %d, want %d", step, st.Tubes, len(names))
		}
	}
	want("empty store")
	// Tubes created at one instant of the store's clock may come in any
	// order (Store.Tubes), so the clock moves between creations.
	b := e.putPri("tb", 0, "b")
	e.advance(time.Millisecond)
	a := e.putPri("ta", 0, "a")
	e.advance(time.Millisecond)
	c := e.putPri("tc", 0, "c")
	e.advance(time.Millisecond)
	e.putPri("tb", 0, "b2")
	want("three tubes", "tb", "ta", "tc")

	e.ok("Delete", e.q.Delete(e.ctx, a))
	want("ta emptied", "tb", "tc")
	a = e.putPri("ta", 0, "a again")
	e.advance(time.Millisecond)
	want("ta created again", "tb", "tc", "ta")
	if ts := e.statsTube("ta"); ts.TotalJobs != 1 || ts.Deletes != 0 {
		t.Errorf("StatsTube of the re-created tube: %+v, want TotalJobs 1, Deletes 0", ts)
	}

	// Jobs in any state keep their tube.
	e.reserveWant(e.q, b, "tb")
	e.ok("Bury", e.q.Bury(e.ctx, b, 0))
	e.reserveJob(e.q, c)
	e.ok("Release with delay", e.q.Release(e.ctx, c, 0, time.Minute))
	e.reserveJob(e.q, a)
	want("jobs buried, delayed and reserved", "tb", "tc", "ta")

	// A pause keeps a tube with no job, until the pause ends.
	e.ok("PauseTube", e.q.PauseTube(e.ctx, "tp", 5*time.Second))
	want("paused empty tube", "tb", "tc", "ta", "tp")
	e.wantTubeStats("paused empty tube", queue.TubeStats{Name: "tp", Pauses: 1, Pause: 5 * time.Second, PauseTimeLeft: 5 * time.Second})
	// A paused tube whose last job goes is gone, its pause with it, as
	// beanstalkd frees a tube.
	e.ok("PauseTube tc", e.q.PauseTube(e.ctx, "tc", 10*time.Second))
	e.ok("Delete", e.q.Delete(e.ctx, c))
	want("paused tube emptied", "tb", "ta", "tp")
	e.advance(5 * time.Second)
	want("pause over", "tb", "ta")
	e.wantNoTube("tp", "of an empty tube whose pause ended")
	e.put("tc", queue.NewJob{Body: []byte("c again")})
	e.wantTubeStats("tc created again", queue.TubeStats{Name: "tc", Urgent: 1, Ready: 1, TotalJobs: 1})
}

// testHold: a reference keeps a tube, its counters and its pause, without
// a job; the tube goes when its last job or reference goes and neither
// remains, whatever its pause.
func testHold(t *testing.T, s *suite) {
	e := s.env(t)
	e.ok("Hold", e.q.Hold(e.ctx, "h", 1))
	e.wantTubeStats("held, never used", queue.TubeStats{Name: "h"})
	if got := e.tubes(); !gocmp.Equal(got, []string{"h"}) {
		t.Errorf("Tubes with one held tube = %q", got)
	}

	a := e.putPri("h", 0, "a")
	b := e.putPri("h", 0, "b")
	e.ok("Delete", e.q.Delete(e.ctx, a))
	e.reserveWant(e.q, b, "h")
	e.ok("Delete", e.q.Delete(e.ctx, b))
	want := queue.TubeStats{Name: "h", TotalJobs: 2, Deletes: 2, Reserves: 1}
	e.wantTubeStats("every job deleted", want)

	// A second holder, and an owner of another session.
	e.ok("Hold again", e.q.Hold(e.ctx, "h", 1))
	other := e.q.WithOwner("hold-session/conn")
	e.ok("Hold by another session", other.Hold(e.ctx, "h", 1))
	e.ok("PauseTube", e.q.PauseTube(e.ctx, "h", time.Minute))
	want.Pauses, want.Pause, want.PauseTimeLeft = 1, time.Minute, time.Minute
	e.wantTubeStats("paused", want)
	// The pause ends; the references keep the tube.
	e.advance(2 * time.Minute)
	want.Pause, want.PauseTimeLeft = 0, 0
	e.wantTubeStats("pause over", want)

	// Taking back more than a session holds takes back what it holds, and
	// none of another session's.
	e.ok("PauseTube", e.q.PauseTube(e.ctx, "h", time.Minute))
	want.Pauses, want.Pause, want.PauseTimeLeft = 2, time.Minute, time.Minute
	e.ok("Hold -5", e.q.Hold(e.ctx, "h", -5))
	e.wantTubeStats("first session's references taken back", want)
	e.ok("Hold -1 again", e.q.Hold(e.ctx, "h", -1))
	e.wantTubeStats("nothing more to take back", want)

	// The last reference goes: the tube is gone, pause and counters too.
	e.ok("Hold -1 by the other session", other.Hold(e.ctx, "h", -1))
	e.wantNoTube("h", "after the last reference went")
	if got := e.tubes(); len(got) != 0 {
		t.Errorf("Tubes after the last reference went = %q, want none", got)
	}
	e.ok("Hold -1 of a tube that does not exist", e.q.Hold(e.ctx, "h", -1))
	e.wantNoTube("h", "after taking back nothing")

	// A tube with jobs whose last reference goes keeps its counters while
	// it holds a job; its last job going then ends it.
	e.ok("Hold hj", e.q.Hold(e.ctx, "hj", 1))
	j := e.putPri("hj", 0, "j")
	e.ok("Hold hj -1", e.q.Hold(e.ctx, "hj", -1))
	e.ok("PauseTube hj", e.q.PauseTube(e.ctx, "hj", time.Hour))
	e.wantTubeStats("a job, no reference", queue.TubeStats{Name: "hj", Ready: 1, Urgent: 1, TotalJobs: 1, Pauses: 1, Pause: time.Hour, PauseTimeLeft: time.Hour})
	e.ok("Delete", e.q.Delete(e.ctx, j))
	e.wantNoTube("hj", "of a paused tube after its last job went")

	// A tube emptied by Reserve's deletes goes too, unless held.
	e.ok("Hold hr", e.q.Hold(e.ctx, "hr", 2))
	r := e.putPri("hr", 0, "r")
	e.reserveWant(e.q, r, "hr")
	res, err := e.store.Reserve(e.ctx, queue.ReserveRequest{Owner: e.q.Owner(), Tubes: []string{"hr"}, Max: 1, Delete: []queue.ID{r}})
	if err != nil || len(res.Deleted) != 1 || res.Deleted[0] != nil {
		t.Fatalf("Reserve with a delete: %+v, %v", res, err)
	}
	e.wantTubeStats("held tube emptied by Reserve", queue.TubeStats{Name: "hr", TotalJobs: 1, Deletes: 1, Reserves: 1})
	e.ok("Hold hr -2", e.q.Hold(e.ctx, "hr", -2))
	e.wantNoTube("hr", "after the references went")
}

// testHoldSessions: a store shared by several processes (queue.Sessions)
// takes back the references of a session that ends or lapses.
func testHoldSessions(t *testing.T, s *suite) {
	e := s.env(t)
	ss, ok := e.raw.(queue.Sessions)
	if !ok {
		return // a store of one process: references end with their holder
	}
	a := e.q.WithOwner("hold-a/1")
	b := e.q.WithOwner("hold-b/1")
	e.ok("KeepAlive a", ss.KeepAlive(e.ctx, "hold-a", time.Second))
	e.ok("KeepAlive b", ss.KeepAlive(e.ctx, "hold-b", time.Hour))
	e.ok("Hold a", a.Hold(e.ctx, "hs", 1))
	e.ok("Hold a", a.Hold(e.ctx, "hs-a", 1))
	e.ok("Hold b", b.Hold(e.ctx, "hs", 1))
	id := e.putPri("hs", 0, "x")
	e.ok("Delete", e.q.Delete(e.ctx, id))
	want := queue.TubeStats{Name: "hs", TotalJobs: 1, Deletes: 1}

	e.advance(2 * time.Second)
	if _, err := ss.Reap(e.ctx); err != nil {
		t.Fatalf("Reap: %v", err)
	}
	e.rec.forgetSession("hold-a")
	e.wantTubeStats("a lapsed, b holds", want)
	e.wantNoTube("hs-a", "of the tube only a lapsed session held")
	e.ok("EndSession b", ss.EndSession(e.ctx, "hold-b"))
	e.rec.forgetSession("hold-b")
	e.wantNoTube("hs", "after the last session ended")
}

// testSessionsReap: a store shared by several processes (queue.Sessions)
// returns to ready, counting no release or timeout, the reservations of a
// session whose lease lapsed, and only those, once.
func testSessionsReap(t *testing.T, s *suite) {
	e := s.env(t)
	ss, ok := e.raw.(queue.Sessions)
	if !ok {
		return // a store of one process: its reservations end with it
	}
	e.ok("KeepAlive a", ss.KeepAlive(e.ctx, "reap-a", 2*time.Second))
	e.ok("KeepAlive b", ss.KeepAlive(e.ctx, "reap-b", time.Hour))
	a, b := e.q.WithOwner("reap-a/1"), e.q.WithOwner("reap-b/1")
	ja := e.reserved(a, "sr", queue.NewJob{Body: []byte("a"), TTR: time.Hour})
	jb := e.reserved(b, "sr", queue.NewJob{Body: []byte("b"), TTR: time.Hour})
	e.advance(time.Second)
	if n, err := ss.Reap(e.ctx); err != nil || n != 0 {
		t.Fatalf("Reap while the lease holds = %d, %v; want 0", n, err)
	}
	e.advance(1500 * time.Millisecond)
	if n, err := ss.Reap(e.ctx); err != nil || n != 1 {
		t.Fatalf("Reap after a's lease lapsed = %d, %v; want 1", n, err)
	}
	if st := e.statsJob(ja); st.State != queue.Ready || st.Releases != 0 || st.Timeouts != 0 {
		t.Errorf("the lapsed session's job: %+v, want ready with no release or timeout counted", st)
	}
	e.wantState(jb, queue.Reserved)
	if n, err := ss.Reap(e.ctx); err != nil || n != 0 {
		t.Errorf("second Reap = %d, %v; want 0", n, err)
	}
	e.ok("Release b's job", b.Release(e.ctx, jb, 0, 0))
	e.ok("EndSession b", ss.EndSession(e.ctx, "reap-b"))
}
