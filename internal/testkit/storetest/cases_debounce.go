package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/queue"
)

// debounced is a debounce put: body, priority, delay, max wait.
func debounced(body string, pri uint32, delay, maxWait time.Duration) queue.NewJob {
	return queue.NewJob{Body: []byte(body), Priority: pri, Delay: delay, UniqueKey: "k",
		Debounce: queue.DebounceReplace | queue.DebounceExtend, MaxWait: maxWait}
}

// wantDebounced checks that r is a debounce of job id, now in state st.
func (e *env) wantDebounced(step string, r queue.PutResult, id queue.ID, st queue.State) {
	e.t.Helper()
	if r.ID != id || !r.Duplicate || !r.Debounced || r.State != st {
		e.t.Errorf("%s: put = %+v, want a debounce of %d, %v", step, r, id, st)
	}
}

// wantJob checks a live job's state, priority, body, delay and time left.
func (e *env) wantJob(step string, id queue.ID, st queue.State, pri uint32, body string, delay, left time.Duration) {
	e.t.Helper()
	js := e.statsJob(id)
	if js.State != st || js.Priority != pri || string(js.Body) != body || js.Delay != delay || js.TimeLeft != left {
		e.t.Errorf("%s: job %d is %v pri %d body %q delay %v left %v; want %v pri %d body %q delay %v left %v",
			step, id, js.State, js.Priority, js.Body, js.Delay, js.TimeLeft, st, pri, body, delay, left)
	}
}

// testDebounce: each put of a burst replaces the delayed job's body and
// priority and restarts its delay; the job runs once, Delay after the
// last put, with the last put's body.
func testDebounce(t *testing.T, s *suite) {
	e := s.keepEnv(t)
	a := e.put("db", debounced("1", 5, 200*time.Millisecond, 2*time.Second))
	e.wantJob("first put", a, queue.Delayed, 5, "1", 200*time.Millisecond, 200*time.Millisecond)
	e.advance(150 * time.Millisecond)
	e.wantDebounced("second put", e.putRes("db", debounced("2", 3, 200*time.Millisecond, 2*time.Second)), a, queue.Delayed)
	e.wantJob("second put", a, queue.Delayed, 3, "2", 200*time.Millisecond, 200*time.Millisecond)
	e.advance(199 * time.Millisecond)
	e.noReserve(e.q, "db")
	e.wantDebounced("third put", e.putRes("db", debounced("3", 7, 300*time.Millisecond, 2*time.Second)), a, queue.Delayed)
	e.advance(299 * time.Millisecond)
	e.noReserve(e.q, "db")
	e.advance(time.Millisecond)
	j := e.reserveWant(e.q, a, "db")
	if string(j.Body) != "3" || j.Priority != 7 || j.UniqueKey != "k" {
		t.Errorf("reserved %+v, want body 3, priority 7, key k", j)
	}
	if st := e.statsTube("db"); st.TotalJobs != 1 || st.Reserved != 1 {
		t.Errorf("stats = %d put, %d reserved; want 1 and 1", st.TotalJobs, st.Reserved)
	}
}

// testDebounceMaxWait: a burst longer than MaxWait makes the job ready at
// its first put plus MaxWait; the next put then starts a new job.
func testDebounceMaxWait(t *testing.T, s *suite) {
	e := s.keepEnv(t)
	a := e.put("mw", debounced("0", 1, 200*time.Millisecond, time.Second))
	for i := 1; i <= 6; i++ {
		e.advance(150 * time.Millisecond) // 900 ms after the first put at the last
		e.wantDebounced("inside the max wait", e.putRes("mw", debounced(string(rune('0'+i)), 1, 200*time.Millisecond, time.Second)), a, queue.Delayed)
	}
	e.wantJob("the last put before the max wait", a, queue.Delayed, 1, "6", 100*time.Millisecond, 100*time.Millisecond)
	e.advance(99 * time.Millisecond)
	e.noReserve(e.q, "mw")
	e.advance(time.Millisecond) // first put + 1 s
	b := e.putRes("mw", debounced("7", 1, 200*time.Millisecond, time.Second))
	if b.Duplicate || b.ID == a {
		t.Fatalf("a put once the job is ready = %+v, want a new job", b)
	}
	e.wantJob("the job of the first burst", a, queue.Ready, 1, "6", 100*time.Millisecond, 0)
	if js := e.statsJob(a); js.UniqueKey != "" {
		t.Errorf("the job that gave up its key has UniqueKey %q, want none", js.UniqueKey)
	}
	if js, err := e.q.LookupKey(e.ctx, "mw", "k"); err != nil || js.ID != b.ID {
		t.Errorf("LookupKey = job %d %v, want the new job %d", js.ID, err, b.ID)
	}
	j := e.reserveWant(e.q, a, "mw")
	if string(j.Body) != "6" {
		t.Errorf("the first burst's job has body %q, want 6", j.Body)
	}
	// The old job's end leaves the key with the new one.
	e.ok("Delete", e.q.Delete(e.ctx, a))
	e.advance(100 * time.Millisecond)
	e.wantDebounced("a put of the second burst", e.putRes("mw", debounced("8", 1, 200*time.Millisecond, time.Second)), b.ID, queue.Delayed)
	// A put whose max wait has already passed makes the job ready at once.
	e.advance(150 * time.Millisecond)
	r := e.putRes("mw", debounced("9", 2, 200*time.Millisecond, 200*time.Millisecond))
	e.wantDebounced("past the max wait", r, b.ID, queue.Ready)
	j = e.reserveWant(e.q, b.ID, "mw")
	if string(j.Body) != "9" || j.Priority != 2 {
		t.Errorf("reserved %+v, want body 9, priority 2", j)
	}
}

// testDebounceExtend: DebounceExtend alone restarts the delay and keeps
// the body and priority.
func testDebounceExtend(t *testing.T, s *suite) {
	e := s.keepEnv(t)
	a := e.put("ex", queue.NewJob{Body: []byte("first"), Priority: 4, Delay: time.Second, UniqueKey: "k"})
	e.advance(600 * time.Millisecond)
	ext := queue.NewJob{Body: []byte("second"), Priority: 9, Delay: 500 * time.Millisecond, UniqueKey: "k", Debounce: queue.DebounceExtend}
	e.wantDebounced("extend", e.putRes("ex", ext), a, queue.Delayed)
	e.wantJob("extended", a, queue.Delayed, 4, "first", 500*time.Millisecond, 500*time.Millisecond)
	e.advance(400 * time.Millisecond) // the first put's due time
	e.noReserve(e.q, "ex")
	e.advance(100 * time.Millisecond)
	if j := e.reserveWant(e.q, a, "ex"); string(j.Body) != "first" {
		t.Errorf("reserved body %q, want first", j.Body)
	}
}

// testDebounceReplace: DebounceReplace alone replaces the body and
// priority and keeps the due time.
func testDebounceReplace(t *testing.T, s *suite) {
	e := s.keepEnv(t)
	a := e.put("rp", queue.NewJob{Body: []byte("first"), Priority: 4, Delay: time.Second, UniqueKey: "k"})
	e.advance(600 * time.Millisecond)
	rep := queue.NewJob{Body: []byte("second"), Priority: 9, Delay: 5 * time.Second, UniqueKey: "k", Debounce: queue.DebounceReplace}
	e.wantDebounced("replace", e.putRes("rp", rep), a, queue.Delayed)
	e.wantJob("replaced", a, queue.Delayed, 9, "second", time.Second, 400*time.Millisecond)
	e.advance(400 * time.Millisecond)
	if j := e.reserveWant(e.q, a, "rp"); string(j.Body) != "second" || j.Priority != 9 {
		t.Errorf("reserved %+v, want body second, priority 9", j)
	}
}

// testDebounceLive: once the key's job is ready, reserved or buried, a
// put with Debounce starts a new job, which takes the key over, or is a
// duplicate when it asks DuplicateLive.
func testDebounceLive(t *testing.T, s *suite) {
	e := s.keepEnv(t)
	for _, c := range []struct {
		name string
		then func(tube string, id queue.ID)
		want queue.State
	}{
		{"ready", func(string, queue.ID) {}, queue.Ready},
		{"reserved", func(tube string, id queue.ID) { e.reserveWant(e.q, id, tube) }, queue.Reserved},
		{"buried", func(tube string, id queue.ID) {
			e.reserveWant(e.q, id, tube)
			e.ok("Bury", e.q.Bury(e.ctx, id, 0))
		}, queue.Buried},
	} {
		tube := "dl-" + c.name
		a := e.put(tube, queue.NewJob{Body: []byte("a"), UniqueKey: "k"})
		c.then(tube, a)
		dup := debounced("d", 0, time.Second, 0)
		dup.DuplicateLive = true
		if r := e.putRes(tube, dup); r.ID != a || !r.Duplicate || r.Debounced || r.State != c.want {
			t.Errorf("%s: DuplicateLive put = %+v, want a duplicate of %d, %v", c.name, r, a, c.want)
		}
		r := e.putRes(tube, debounced("b", 0, time.Second, 0))
		if r.Duplicate || r.ID == a {
			t.Fatalf("%s: debounce put = %+v, want a new job", c.name, r)
		}
		if js := e.statsJob(a); js.State != c.want || js.UniqueKey != "" || string(js.Body) != "a" {
			t.Errorf("%s: the old job is %v key %q body %q; want %v, no key, body a", c.name, js.State, js.UniqueKey, js.Body, c.want)
		}
		// The new job holds the key, whatever becomes of the old one.
		if c.want == queue.Reserved {
			e.ok("Delete", e.q.Delete(e.ctx, a))
		}
		e.wantDebounced(c.name+": next put", e.putRes(tube, debounced("c", 0, time.Second, 0)), r.ID, queue.Delayed)
		if st := e.statsTube(tube); st.TotalJobs != 2 {
			t.Errorf("%s: %d jobs put, want 2", c.name, st.TotalJobs)
		}
	}
}

// testDebounceBatch: the jobs of one PutMany debounce each other in order.
func testDebounceBatch(t *testing.T, s *suite) {
	e := s.keepEnv(t)
	res := e.putMany("bt", []queue.NewJob{
		debounced("1", 1, time.Second, 3*time.Second),
		debounced("2", 2, 2*time.Second, 3*time.Second),
		debounced("3", 3, 500*time.Millisecond, 3*time.Second),
		{Body: []byte("plain"), UniqueKey: "k"},
	})
	a := res[0].ID
	if res[0].Duplicate {
		t.Fatalf("first job = %+v, want a new job", res[0])
	}
	e.wantDebounced("second job", res[1], a, queue.Delayed)
	e.wantDebounced("third job", res[2], a, queue.Delayed)
	if r := res[3]; r.ID != a || !r.Duplicate || r.Debounced || r.State != queue.Delayed {
		t.Errorf("a job without Debounce = %+v, want a duplicate of %d, delayed", r, a)
	}
	e.wantJob("after the batch", a, queue.Delayed, 3, "3", 500*time.Millisecond, 500*time.Millisecond)
	// A batch whose job is made ready by a later one starts a new job after it.
	res = e.putMany("bt2", []queue.NewJob{
		debounced("1", 1, time.Second, time.Second),
		debounced("2", 1, 0, time.Second),
		debounced("3", 1, time.Second, time.Second),
	})
	e.wantDebounced("made ready", res[1], res[0].ID, queue.Ready)
	if res[2].Duplicate || res[2].ID == res[0].ID {
		t.Errorf("a put after the job is ready = %+v, want a new job", res[2])
	}
	e.wantJob("made ready", res[0].ID, queue.Ready, 1, "2", 0, 0)
	e.wantJob("the new one", res[2].ID, queue.Delayed, 1, "3", time.Second, time.Second)
	if st := e.statsTube("bt2"); st.TotalJobs != 2 || st.Ready != 1 || st.Delayed != 1 {
		t.Errorf("stats = %d put, %d ready, %d delayed; want 2, 1, 1", st.TotalJobs, st.Ready, st.Delayed)
	}
}

// testDebounceWindowAndKept: a ready job whose UniqueFor window holds is
// duplicated, not replaced; a kept job's key makes a new job as before.
func testDebounceWindowAndKept(t *testing.T, s *suite) {
	e := s.keepEnv(t)
	a := e.put("wk", queue.NewJob{Body: []byte("a"), UniqueKey: "k", UniqueFor: 10 * time.Second})
	if r := e.putRes("wk", debounced("b", 0, time.Second, 0)); r.ID != a || !r.Duplicate || r.Debounced {
		t.Errorf("inside a ready job's window = %+v, want a duplicate of %d", r, a)
	}
	e.ok("SetRetention", e.q.SetRetention(e.ctx, "wk2", time.Minute))
	b := e.put("wk2", queue.NewJob{Body: []byte("a"), UniqueKey: "k"})
	e.ok("Finish", e.q.Finish(e.ctx, b, nil))
	r := e.putRes("wk2", debounced("c", 0, time.Second, 0))
	if r.Duplicate || r.ID == b {
		t.Errorf("while a job with the key is kept = %+v, want a new job", r)
	}
	e.wantDebounced("then", e.putRes("wk2", debounced("d", 0, time.Second, 0)), r.ID, queue.Delayed)
}

// testDebounceBadInput: a debounce without a key, with unknown flags, a
// max wait below the delay, or its options without it is refused and
// stores nothing.
func testDebounceBadInput(t *testing.T, s *suite) {
	e := s.keepEnv(t)
	for _, j := range []queue.NewJob{
		{Debounce: queue.DebounceReplace},
		{UniqueKey: "k", Debounce: 4},
		{UniqueKey: "k", MaxWait: time.Second},
		{UniqueKey: "k", DuplicateLive: true},
		{UniqueKey: "k", Debounce: queue.DebounceExtend, Delay: time.Second, MaxWait: 500 * time.Millisecond},
		{UniqueKey: "k", Debounce: queue.DebounceExtend, MaxWait: -time.Second},
		{UniqueKey: "k", Debounce: queue.DebounceExtend, MaxWait: queue.MaxDuration + time.Second},
	} {
		if _, err := e.q.Put(e.ctx, "bad", j); !errors.Is(err, queue.ErrInvalid) {
			t.Errorf("Put(%+v): %v, want ErrInvalid", j, err)
		}
	}
	e.wantListed("bad", false, "refused puts made the tube")
}
