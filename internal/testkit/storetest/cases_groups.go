package storetest

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/ratelimit"
)

// grouped skips the case for a store that serves no groups, and sets
// limits on tube when l is not zero.
func (e *env) grouped(tube string, l queue.Limits) {
	e.t.Helper()
	if l.IsZero() {
		e.needLimits()
		return
	}
	e.limited(tube, l)
}

// putGroup stores a job of group g of tube with priority pri.
func (e *env) putGroup(tube, g string, pri uint32, body string) queue.ID {
	e.t.Helper()
	return e.put(tube, queue.NewJob{Group: g, Priority: pri, Body: []byte(body), TTR: 10 * time.Second})
}

// reserveAll reserves one job at a time from tubes through q until none is
// ready, and returns their IDs in order.
func (e *env) reserveAll(q *queue.Queue, tubes ...string) []queue.ID {
	e.t.Helper()
	var out []queue.ID
	for {
		got, err := q.ReserveN(e.ctx, 1, queue.ReserveOptions{Tubes: tubes, Timeout: -1})
		if err != nil || len(got) == 0 {
			return out
		}
		out = append(out, got[0].ID)
	}
}

// testGroupRotation: a reserve of a tube serves the tube's own jobs and
// its groups' in turn, one job per turn, each group's jobs in (priority,
// ID) order; the job names its group's tube; a reserve of a group's tube
// takes only that group's jobs; the tube's stats count its groups.
func testGroupRotation(t *testing.T, s *suite) {
	e := s.env(t)
	e.grouped("mail", queue.Limits{})
	a1 := e.putGroup("mail", "a", 5, "a1")
	a2 := e.putGroup("mail", "a", 5, "a2")
	a0 := e.putGroup("mail", "a", 1, "a0") // more urgent: first of group a
	b1 := e.putGroup("mail", "b", 9, "b1")
	p1 := e.putPri("mail", 7, "p1") // the tube's own job
	b2 := e.putGroup("mail", "b", 9, "b2")

	st := e.statsTube("mail")
	if st.Ready != 1 || st.GroupReady != 5 || st.Groups != 2 {
		t.Errorf("stats of the tube: Ready %d, GroupReady %d, Groups %d; want 1, 5 and 2", st.Ready, st.GroupReady, st.Groups)
	}
	if st := e.statsTube("mail;a"); st.Ready != 3 || st.Groups != 0 {
		t.Errorf("stats of group a: Ready %d, Groups %d; want 3 and 0", st.Ready, st.Groups)
	}
	j := e.reserveWant(e.q, a0, "mail")
	if j.Tube != "mail;a" {
		t.Errorf("the reserved job's tube = %q, want \"mail;a\"", j.Tube)
	}
	got := e.reserveAll(e.q, "mail")
	// group a was served; b and the tube itself follow in the order they
	// got ready jobs, then a again.
	if diff := cmp.Diff([]queue.ID{b1, p1, a1, b2, a2}, got); diff != "" {
		t.Errorf("reserves of the tube (-want +got):\n%s", diff)
	}
	for _, id := range append(got, a0) {
		e.ok("Release", e.q.Release(e.ctx, id, 5, 0))
	}
	// A group's tube reserved by name gives only its jobs.
	if diff := cmp.Diff([]queue.ID{b1, b2}, e.reserveAll(e.q2, "mail;b")); diff != "" {
		t.Errorf("reserves of \"mail;b\" (-want +got):\n%s", diff)
	}
	if st := e.statsTube("mail"); st.Ready != 1 || st.GroupReady != 3 || st.GroupReserved != 2 {
		t.Errorf("stats of the tube: Ready %d, GroupReady %d, GroupReserved %d; want 1, 3, 2", st.Ready, st.GroupReady, st.GroupReserved)
	}
}

// testGroupFairness: a group with many jobs does not starve one with few,
// even when the big one's jobs are more urgent and were put first: the
// small group is served at every other turn.
func testGroupFairness(t *testing.T, s *suite) {
	e := s.env(t)
	e.grouped("fair", queue.Limits{})
	big := make([]queue.NewJob, 500)
	for i := range big {
		big[i] = queue.NewJob{Group: "big", Priority: 0, Body: []byte("b")}
	}
	e.putMany("fair", big)
	var small []queue.ID
	for range 10 {
		small = append(small, e.putGroup("fair", "small", 100, "s"))
	}
	got, err := e.q.ReserveN(e.ctx, 20, queue.ReserveOptions{Tubes: []string{"fair"}, Timeout: -1})
	e.ok("ReserveN", err)
	var gotSmall []queue.ID
	for i, j := range got {
		wantTube := "fair;big"
		if i%2 == 1 {
			wantTube = "fair;small"
			gotSmall = append(gotSmall, j.ID)
		}
		if j.Tube != wantTube {
			t.Fatalf("reserve %d took a job of %q, want %q (turns alternate)", i, j.Tube, wantTube)
		}
	}
	if diff := cmp.Diff(small, gotSmall); diff != "" {
		t.Errorf("the small group's jobs (-want +got):\n%s", diff)
	}
}

// testGroupCap: at most the group cap of each group is reserved, and at
// most the tube's cap of the tube and its groups together; a place frees
// at a delete, a bury or a TTR's end.
func testGroupCap(t *testing.T, s *suite) {
	e := s.env(t)
	e.grouped("gc", queue.Limits{Cap: 3, Group: queue.GroupLimits{Cap: 1}})
	ids := map[string][]queue.ID{}
	for _, g := range []string{"a", "b", "c", "d"} {
		for range 3 {
			ids[g] = append(ids[g], e.putGroup("gc", g, 0, g))
		}
	}
	got, err := e.q.ReserveN(e.ctx, 10, queue.ReserveOptions{Tubes: []string{"gc"}, Timeout: -1})
	e.ok("ReserveN", err)
	if diff := cmp.Diff([]queue.ID{ids["a"][0], ids["b"][0], ids["c"][0]}, ids2(got)); diff != "" {
		t.Fatalf("ReserveN(10) under a tube cap of 3, group cap 1 (-want +got):\n%s", diff)
	}
	e.noReserve(e.q2, "gc")
	// A group's tube reserved by name is held to both caps too.
	e.noReserve(e.q2, "gc;a")
	e.noReserve(e.q2, "gc;d")
	if st := e.statsTube("gc"); st.Reserved+st.GroupReserved != 3 || st.Groups != 4 || st.LimitHolds < 1 {
		t.Errorf("stats at the cap: Reserved %d + GroupReserved %d, Groups %d, LimitHolds %d; want 3 in all, 4 groups, holds", st.Reserved, st.GroupReserved, st.Groups, st.LimitHolds)
	}
	// A delete in group a frees a place of the tube: d, whose turn comes
	// first, takes it; group a's next job waits for its own place.
	e.ok("Delete", e.q.Delete(e.ctx, ids["a"][0]))
	e.reserveWant(e.q2, ids["d"][0], "gc")
	e.noReserve(e.q2, "gc")
	// A bury frees a place of the tube and of group b; a, whose turn
	// comes first and which has no job reserved, takes it.
	e.ok("Bury", e.q.Bury(e.ctx, ids["b"][0], 0))
	e.reserveWant(e.q2, ids["a"][1], "gc")
	e.noReserve(e.q2, "gc")
	// The TTRs end: every place frees, and the timed-out jobs go first in
	// their groups.
	e.advance(10 * time.Second)
	got, err = e.q.ReserveN(e.ctx, 10, queue.ReserveOptions{Tubes: []string{"gc"}, Timeout: -1})
	e.ok("ReserveN", err)
	if len(got) != 3 {
		t.Fatalf("ReserveN(10) after the TTRs = %d jobs, want 3", len(got))
	}
	seen := map[string]bool{}
	for _, j := range got {
		if seen[j.Tube] {
			t.Errorf("two jobs of %q reserved at once, group cap 1", j.Tube)
		}
		seen[j.Tube] = true
	}
}

func ids2(jobs []queue.Job) []queue.ID { return ids(jobs) }

// testGroupRate: each group is held to the template's rate on its own,
// and the tube's rate counts all its groups; Next says when one frees.
func testGroupRate(t *testing.T, s *suite) {
	e := s.env(t)
	e.grouped("gr", queue.Limits{
		Rate:  ratelimit.Limit{Events: 10, Per: time.Second, Burst: 3}, // the tube: one per 100ms, 3 at once
		Group: queue.GroupLimits{Rate: ratelimit.Limit{Events: 1, Per: time.Second, Burst: 1}},
	})
	a1 := e.putGroup("gr", "a", 0, "a1")
	a2 := e.putGroup("gr", "a", 0, "a2")
	b1 := e.putGroup("gr", "b", 0, "b1")
	b2 := e.putGroup("gr", "b", 0, "b2")
	got, err := e.q.ReserveN(e.ctx, 4, queue.ReserveOptions{Tubes: []string{"gr"}, Timeout: -1})
	e.ok("ReserveN", err)
	if diff := cmp.Diff([]queue.ID{a1, b1}, ids(got)); diff != "" {
		t.Fatalf("ReserveN(4) with one per group per second (-want +got):\n%s", diff)
	}
	if next, tube := e.storeNext("groups held", "gr"); next != time.Second || tube != "gr" {
		t.Errorf("Next with every group held = %v in %q, want 1s in \"gr\"", next, tube)
	}
	c1 := e.putGroup("gr", "c", 0, "c1")
	c2 := e.putGroup("gr", "c", 0, "c2")
	d1 := e.putGroup("gr", "d", 0, "d1")
	e.reserveWant(e.q, c1, "gr")
	// The tube's burst of 3 is spent: group d, fresh, waits for the
	// tube's rate.
	e.noReserve(e.q, "gr")
	if next, _ := e.storeNext("the tube's rate", "gr"); next != 100*time.Millisecond {
		t.Errorf("Next with the tube's burst spent = %v, want 100ms", next)
	}
	e.advance(100 * time.Millisecond)
	e.reserveWant(e.q, d1, "gr")
	e.noReserve(e.q, "gr")
	// At 1s every group's rate frees, and the tube's burst is whole again.
	e.advance(900 * time.Millisecond)
	got, err = e.q.ReserveN(e.ctx, 4, queue.ReserveOptions{Tubes: []string{"gr"}, Timeout: -1})
	e.ok("ReserveN", err)
	if diff := cmp.Diff([]queue.ID{a2, b2, c2}, ids(got)); diff != "" {
		t.Fatalf("ReserveN(4) at 1s (-want +got):\n%s", diff)
	}
}

// testGroupDelayedReleased: delayed and released jobs of a group take
// their group's turn when they are ready, and are held to its limits.
func testGroupDelayedReleased(t *testing.T, s *suite) {
	e := s.env(t)
	e.grouped("dr", queue.Limits{Group: queue.GroupLimits{Cap: 1}})
	d := e.put("dr", queue.NewJob{Group: "late", Body: []byte("d"), Delay: time.Second})
	a1 := e.putGroup("dr", "a", 0, "a1")
	a2 := e.putGroup("dr", "a", 0, "a2")
	e.reserveWant(e.q, a1, "dr")
	e.noReserve(e.q, "dr")
	e.advance(time.Second)
	e.reserveWant(e.q, d, "dr")
	// Released with a delay, a1 frees its group's place; a2 goes.
	e.ok("Release", e.q.Release(e.ctx, a1, 0, time.Second))
	e.reserveWant(e.q, a2, "dr")
	e.advance(time.Second)
	e.noReserve(e.q, "dr") // a1 is ready again, its group at its cap
	e.ok("Delete", e.q.Delete(e.ctx, a2))
	e.reserveWant(e.q, a1, "dr")
}

// testGroupWakes: a reserve waiting on a tube is woken by a put into one of
// its groups, by a place of a group freed by a delete, and by a place of
// the tube's cap freed by a delete of the tube's own job.
func testGroupWakes(t *testing.T, s *suite) {
	t.Run("Put", func(t *testing.T) {
		e := s.env(t)
		e.grouped("wk", queue.Limits{})
		w := e.startWaiter("wk")
		id := e.putGroup("wk", "g", 0, "g")
		w.wantJob(t, id, "a put")
	})
	t.Run("Delete", func(t *testing.T) {
		e := s.env(t)
		e.grouped("wk", queue.Limits{Group: queue.GroupLimits{Cap: 1}})
		held := e.putGroup("wk", "g", 0, "held")
		e.reserveWant(e.q2, held, "wk")
		next := e.putGroup("wk", "g", 5, "next")
		w := e.startWaiter("wk")
		e.ok("Delete", e.q2.Delete(e.ctx, held))
		w.wantJob(t, next, "a delete")
	})
	// The tube's cap counts its groups' reservations: with one of the
	// tube's own jobs and one of a group's reserved, the cap of 2 holds a
	// waiter back, and a delete of the tube's own job frees its place.
	t.Run("DeleteOwnAtFamilyCap", func(t *testing.T) {
		e := s.env(t)
		e.grouped("wf", queue.Limits{Cap: 2})
		own := e.putPri("wf", 0, "own")
		e.reserveWant(e.q2, own, "wf")
		grp := e.putGroup("wf", "g", 0, "grp")
		e.reserveWant(e.q2, grp, "wf")
		next := e.putGroup("wf", "g", 5, "next")
		w := e.startWaiter("wf")
		e.ok("Delete", e.q2.Delete(e.ctx, own))
		w.wantJob(t, next, "a delete")
	})
}

// testGroupBadInput: limits set on a group's tube, and a group that makes
// no valid tube name, are refused and change nothing.
func testGroupBadInput(t *testing.T, s *suite) {
	e := s.env(t)
	e.grouped("bi", queue.Limits{Group: queue.GroupLimits{Cap: 2}})
	wantErr(t, "SetLimits of a group's tube", e.q.SetLimits(e.ctx, "bi;g", queue.Limits{Cap: 1}), queue.ErrInvalid)
	wantErr(t, "SetLimits with a bad group cap", e.q.SetLimits(e.ctx, "bi", queue.Limits{Group: queue.GroupLimits{Cap: -1}}), queue.ErrInvalid)
	wantErr(t, "SetLimits with a bad group rate", e.q.SetLimits(e.ctx, "bi", queue.Limits{Group: queue.GroupLimits{Rate: ratelimit.PerSecond(1).WithAlgorithm(ratelimit.SlidingLog)}}), queue.ErrInvalid)
	if got, _ := e.q.TubeLimits(e.ctx, "bi"); got != (queue.Limits{Group: queue.GroupLimits{Cap: 2}}) {
		t.Errorf("TubeLimits after refused changes = %v", got)
	}
	for _, g := range []string{"has space", string(make([]byte, queue.MaxTubeName))} {
		_, err := e.q.Put(e.ctx, "bi", queue.NewJob{Group: g, Body: []byte("x")})
		wantErr(t, "Put with group "+g[:min(len(g), 12)], err, queue.ErrInvalid)
	}
	_, err := e.q.Put(e.ctx, "bi;g", queue.NewJob{Group: "h", Body: []byte("x")})
	wantErr(t, "Put with a group into a group's tube", err, queue.ErrInvalid)
	if tubes := e.tubes(); len(tubes) != 0 {
		t.Errorf("Tubes = %q after refused puts, want none", tubes)
	}
}
