package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/ratelimit"
)

// limited sets limits on tube, skipping the case for a store without them.
func (e *env) limited(tube string, l queue.Limits) {
	e.t.Helper()
	e.needLimits()
	e.ok("SetLimits", e.q.SetLimits(e.ctx, tube, l))
}

// needLimits skips the case for a store without tube limits (nor groups,
// which are held to their tube's group template).
func (e *env) needLimits() {
	e.t.Helper()
	if _, ok := e.raw.(queue.LimitStore); !ok {
		e.t.Skip("the store does not implement queue.LimitStore")
	}
}

// storeNext asks the store for one job of tubes, wanting none, and returns
// Next and NextTube.
func (e *env) storeNext(step string, tubes ...string) (time.Duration, string) {
	e.t.Helper()
	res, err := e.store.Reserve(e.ctx, queue.ReserveRequest{Owner: e.q.Owner(), Tubes: tubes, Max: 1})
	if err != nil {
		e.t.Fatalf("%s: Store.Reserve(%q): %v", step, tubes, err)
	}
	if len(res.Jobs) != 0 {
		e.t.Fatalf("%s: Store.Reserve(%q) reserved %v, want nothing", step, tubes, ids(res.Jobs))
	}
	return res.Next, res.NextTube
}

// testLimitsSetAndClear: limits are set, read, listed, shown in the tube's
// stats and cleared; bad limits are refused and change nothing.
func testLimitsSetAndClear(t *testing.T, s *suite) {
	e := s.env(t)
	l := queue.Limits{Rate: ratelimit.PerSecond(10).WithBurst(3), Cap: 4}
	e.limited("lim", l)
	got, err := e.q.TubeLimits(e.ctx, "lim")
	e.ok("TubeLimits", err)
	if diff := cmp.Diff(l, got); diff != "" {
		t.Errorf("TubeLimits (-set +got):\n%s", diff)
	}
	if got, _ := e.q.TubeLimits(e.ctx, "other"); !got.IsZero() {
		t.Errorf("TubeLimits of a tube without limits = %v, want none", got)
	}
	all, err := e.q.LimitedTubes(e.ctx)
	e.ok("LimitedTubes", err)
	if diff := cmp.Diff(map[string]queue.Limits{"lim": l}, all); diff != "" {
		t.Errorf("LimitedTubes (-want +got):\n%s", diff)
	}
	// Limits alone do not make a tube.
	if tubes := e.tubes(); len(tubes) != 0 {
		t.Errorf("Tubes = %q with only limits set, want none", tubes)
	}
	e.putPri("lim", 0, "a job")
	if st := e.statsTube("lim"); st.Limits != l {
		t.Errorf("TubeStats.Limits = %v, want %v", st.Limits, l)
	}

	// A rate without a burst gets Events as its burst.
	capOnly := queue.Limits{Cap: 1}
	e.ok("SetLimits cap only", e.q.SetLimits(e.ctx, "lim", capOnly))
	rate := queue.Limits{Rate: ratelimit.Limit{Events: 5, Per: time.Minute}}
	e.ok("SetLimits rate only", e.q.SetLimits(e.ctx, "lim2", rate))
	if got, _ := e.q.TubeLimits(e.ctx, "lim2"); got.Rate.Burst != 5 || got.Cap != 0 {
		t.Errorf("TubeLimits of a rate without burst = %v, want burst 5 and no cap", got)
	}

	for _, bad := range []queue.Limits{
		{Cap: -1},
		{Cap: queue.MaxCap + 1},
		{Rate: ratelimit.Limit{Events: 0, Per: time.Second, Burst: 1}},
		{Rate: ratelimit.PerSecond(10).WithAlgorithm(ratelimit.SlidingLog)},
		{Rate: ratelimit.Funnel(10, time.Second, 2)},
	} {
		wantErr(t, "SetLimits "+bad.String(), e.q.SetLimits(e.ctx, "lim", bad), queue.ErrInvalid)
	}
	wantErr(t, "SetLimits of a bad tube name", e.q.SetLimits(e.ctx, "", capOnly), queue.ErrInvalidTube)
	if got, _ := e.q.TubeLimits(e.ctx, "lim"); got != capOnly {
		t.Errorf("TubeLimits after refused changes = %v, want %v", got, capOnly)
	}

	e.ok("ClearLimits", e.q.ClearLimits(e.ctx, "lim"))
	e.ok("ClearLimits", e.q.ClearLimits(e.ctx, "lim2"))
	if got, _ := e.q.TubeLimits(e.ctx, "lim"); !got.IsZero() {
		t.Errorf("TubeLimits after ClearLimits = %v, want none", got)
	}
	if st := e.statsTube("lim"); !st.Limits.IsZero() {
		t.Errorf("TubeStats.Limits after ClearLimits = %v, want none", st.Limits)
	}
	if all, _ := e.q.LimitedTubes(e.ctx); len(all) != 0 {
		t.Errorf("LimitedTubes after clearing all = %v, want none", all)
	}
}

// testLimitCap: at most Cap jobs of a tube are reserved at once; a place
// frees when a job is deleted, released, buried or its TTR ends, and then
// the next job in (priority, ID) order is taken.
func testLimitCap(t *testing.T, s *suite) {
	e := s.env(t)
	e.limited("cap", queue.Limits{Cap: 2})
	var jobs []queue.ID
	for i := range 8 {
		jobs = append(jobs, e.put("cap", queue.NewJob{Priority: 10, Body: []byte{byte('a' + i)}, TTR: 5 * time.Second}))
	}
	got, err := e.q.ReserveN(e.ctx, 5, queue.ReserveOptions{Tubes: []string{"cap"}, Timeout: -1})
	e.ok("ReserveN", err)
	if diff := cmp.Diff(jobs[:2], ids(got)); diff != "" {
		t.Fatalf("ReserveN(5) under a cap of 2 (-want +got):\n%s", diff)
	}
	e.noReserve(e.q2, "cap")
	if next, tube := e.storeNext("at the cap", "cap"); next != 5*time.Second || tube != "cap" {
		t.Errorf("Next at the cap = %v in %q, want the first TTR's end, 5s in \"cap\"", next, tube)
	}
	// Three reserves fell short while the cap held the tube back: the
	// ReserveN, the reserve of q2, the store's.
	st := e.statsTube("cap")
	if st.Reserved != 2 || st.LimitHolds != 3 {
		t.Errorf("TubeStats at the cap: Reserved %d, LimitHolds %d; want 2 and 3", st.Reserved, st.LimitHolds)
	}

	// A delete frees a place; an urgent job put meanwhile goes first.
	urgent := e.putPri("cap", 1, "urgent")
	e.ok("Delete", e.q.Delete(e.ctx, jobs[0]))
	e.reserveWant(e.q2, urgent, "cap")
	e.noReserve(e.q2, "cap")
	// A bury frees a place.
	e.ok("Bury", e.q.Bury(e.ctx, jobs[1], 10))
	e.reserveWant(e.q2, jobs[2], "cap")
	e.noReserve(e.q, "cap")
	// A release frees a place, and the released job takes its turn again.
	e.ok("Release", e.q2.Release(e.ctx, jobs[2], 10, 0))
	e.reserveWant(e.q, jobs[2], "cap")
	e.noReserve(e.q, "cap")
	// A release with a delay frees a place.
	e.ok("Release with delay", e.q.Release(e.ctx, jobs[2], 10, time.Hour))
	e.reserveWant(e.q, jobs[3], "cap")
	e.noReserve(e.q, "cap")
	// A TTR's end frees a place: the job that timed out is ready again and
	// goes first by its ID.
	e.advance(5 * time.Second)
	e.reserveWant(e.q, jobs[3], "cap")
	e.noReserve(e.q, "cap")
	// ReserveJob is not held back, as by a pause, but its job counts.
	e.reserveJob(e.q, jobs[4])
	if st := e.statsTube("cap"); st.Reserved != 3 {
		t.Errorf("Reserved = %d after ReserveJob past the cap, want 3", st.Reserved)
	}
	e.ok("Delete", e.q.Delete(e.ctx, jobs[4]))
	e.noReserve(e.q, "cap")
	// Clearing the cap lets every ready job go.
	e.ok("ClearLimits", e.q.ClearLimits(e.ctx, "cap"))
	e.reserveWant(e.q, jobs[5], "cap")
	e.reserveWant(e.q, jobs[6], "cap")
}

// testLimitRate: a rate hands out at most burst jobs at once, then one per
// interval, exactly when the store's clock reaches each; Next says when.
func testLimitRate(t *testing.T, s *suite) {
	e := s.env(t)
	e.limited("rate", queue.Limits{Rate: ratelimit.Limit{Events: 4, Per: time.Second, Burst: 2}}) // one per 250ms
	var jobs []queue.ID
	for i := range 6 {
		jobs = append(jobs, e.putPri("rate", 5, string(rune('a'+i))))
	}
	got, err := e.q.ReserveN(e.ctx, 6, queue.ReserveOptions{Tubes: []string{"rate"}, Timeout: -1})
	e.ok("ReserveN", err)
	if diff := cmp.Diff(jobs[:2], ids(got)); diff != "" {
		t.Fatalf("ReserveN(6) with a burst of 2 (-want +got):\n%s", diff)
	}
	if next, tube := e.storeNext("after the burst", "rate"); next != 250*time.Millisecond || tube != "rate" {
		t.Errorf("Next after the burst = %v in %q, want 250ms in \"rate\"", next, tube)
	}
	e.advance(249 * time.Millisecond)
	if next, _ := e.storeNext("1ms before", "rate"); next != time.Millisecond {
		t.Errorf("Next 1ms before the rate frees = %v, want 1ms", next)
	}
	// An urgent job put meanwhile is the next one out: nothing is reordered
	// but by priority.
	urgent := e.putPri("rate", 0, "urgent")
	e.advance(time.Millisecond)
	e.reserveWant(e.q, urgent, "rate")
	e.noReserve(e.q, "rate")
	e.advance(250 * time.Millisecond)
	e.reserveWant(e.q2, jobs[2], "rate")
	e.noReserve(e.q2, "rate")
	// Deletes and releases give nothing back: the rate counts reserves.
	e.ok("Release", e.q2.Release(e.ctx, jobs[2], 5, 0))
	e.noReserve(e.q2, "rate")
	// Idle time refills the burst, never beyond it.
	for _, id := range []queue.ID{jobs[0], jobs[1], urgent} {
		e.ok("Delete", e.q.Delete(e.ctx, id))
	}
	e.advance(time.Hour)
	got, err = e.q.ReserveN(e.ctx, 6, queue.ReserveOptions{Tubes: []string{"rate"}, Timeout: -1})
	e.ok("ReserveN", err)
	if diff := cmp.Diff([]queue.ID{jobs[2], jobs[3]}, ids(got)); diff != "" {
		t.Errorf("ReserveN(6) after an idle hour (-want +got):\n%s", diff)
	}
	// A delayed job that falls due is held to the rate too.
	d := e.put("rate", queue.NewJob{Priority: 0, Body: []byte("delayed"), Delay: 100 * time.Millisecond})
	e.advance(100 * time.Millisecond)
	e.noReserve(e.q, "rate")
	e.advance(150 * time.Millisecond)
	e.reserveWant(e.q, d, "rate")
}

// testLimitRateWindow: over a run of reserves at random moments, no window
// of any length holds more reserves than burst + length*rate.
func testLimitRateWindow(t *testing.T, s *suite) {
	e := s.env(t)
	l := ratelimit.Limit{Events: 10, Per: time.Second, Burst: 3} // one per 100ms
	e.limited("win", queue.Limits{Rate: l})
	jobs := make([]queue.NewJob, 200)
	for i := range jobs {
		jobs[i] = queue.NewJob{Body: []byte("w")}
	}
	e.putMany("win", jobs)
	var at []time.Duration // when each reserve succeeded, since the start
	var now time.Duration
	steps := []time.Duration{7, 30, 1, 55, 100, 13, 240, 3, 99, 101}
	for i := 0; i < 400 && len(at) < 150; i++ {
		got, err := e.q.ReserveN(e.ctx, 4, queue.ReserveOptions{Tubes: []string{"win"}, Timeout: -1})
		if err != nil && !errors.Is(err, queue.ErrTimeout) {
			t.Fatalf("ReserveN: %v", err)
		}
		for range got {
			at = append(at, now)
		}
		d := steps[i%len(steps)] * time.Millisecond
		e.advance(d)
		now += d
	}
	if len(at) < 50 {
		t.Fatalf("only %d reserves in %v", len(at), now)
	}
	for i := range at {
		for j := i; j < len(at); j++ {
			span := at[j] - at[i] // the reserves i..j lie in a window of this length
			allowed := int64(l.Burst) + int64(span/l.Interval())
			if int64(j-i+1) > allowed {
				t.Fatalf("%d reserves within %v (from %v), want at most %d", j-i+1, span, at[i], allowed)
			}
		}
	}
}

// testLimitOutlivesTube: limits and the rate's state stay while the tube
// empties and is gone, so a tube that fills again gets no second burst.
func testLimitOutlivesTube(t *testing.T, s *suite) {
	e := s.env(t)
	e.limited("out", queue.Limits{Rate: ratelimit.Every(time.Hour), Cap: 1})
	a := e.putPri("out", 0, "a")
	e.reserveWant(e.q, a, "out")
	e.ok("Delete", e.q.Delete(e.ctx, a))
	if _, err := e.q.StatsTube(e.ctx, "out"); !errors.Is(err, queue.ErrNotFound) {
		t.Fatalf("StatsTube of the emptied tube: %v, want ErrNotFound", err)
	}
	b := e.putPri("out", 0, "b")
	e.noReserve(e.q, "out")
	if next, _ := e.storeNext("refilled", "out"); next != time.Hour {
		t.Errorf("Next for a tube that came back = %v, want 1h", next)
	}
	e.advance(time.Hour)
	e.reserveWant(e.q, b, "out")
}

// testLimitSkipsTube: a reserve of several tubes skips one its limits hold
// back, as it skips a paused one, and takes from the others in order.
func testLimitSkipsTube(t *testing.T, s *suite) {
	e := s.env(t)
	e.limited("held", queue.Limits{Cap: 1})
	h1 := e.putPri("held", 0, "h1")
	h2 := e.putPri("held", 0, "h2")
	f1 := e.putPri("free", 5, "f1")
	f2 := e.putPri("free", 5, "f2")
	got, err := e.q.ReserveN(e.ctx, 3, queue.ReserveOptions{Tubes: []string{"held", "free"}, Timeout: -1})
	e.ok("ReserveN", err)
	if diff := cmp.Diff([]queue.ID{h1, f1, f2}, ids(got)); diff != "" {
		t.Errorf("ReserveN(3) of a capped and a free tube (-want +got):\n%s", diff)
	}
	e.noReserve(e.q2, "held", "free")
	e.ok("Delete", e.q.Delete(e.ctx, h1))
	e.reserveWant(e.q2, h2, "free", "held")
}

// testLimitWakes: a reserve waiting on a tube its cap holds back is woken
// when a place frees (a delete, a bury, a release) or the limits are
// cleared, with no poll.
func testLimitWakes(t *testing.T, s *suite) {
	for _, c := range []struct {
		name string
		act  func(e *env, held queue.ID)
	}{
		{"Delete", func(e *env, held queue.ID) { e.ok("Delete", e.q2.Delete(e.ctx, held)) }},
		{"Bury", func(e *env, held queue.ID) { e.ok("Bury", e.q2.Bury(e.ctx, held, 9)) }},
		{"Release delayed", func(e *env, held queue.ID) { e.ok("Release", e.q2.Release(e.ctx, held, 9, time.Hour)) }},
		{"ClearLimits", func(e *env, _ queue.ID) { e.ok("ClearLimits", e.q.ClearLimits(e.ctx, "wake")) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := s.env(t)
			e.limited("wake", queue.Limits{Cap: 1})
			held := e.putPri("wake", 0, "held")
			e.reserveWant(e.q2, held, "wake")
			next := e.putPri("wake", 5, "next")
			w := e.startWaiter("wake")
			c.act(e, held)
			w.wantJob(t, next, c.name)
		})
	}
}
