package storetest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hourglass-io/hourglass/queue"
)

// testKeptNotAWake: a reserve that finds nothing in a tube that only keeps
// jobs has nothing to wait for: a kept job's drop makes no job ready.
func testKeptNotAWake(t *testing.T, s *suite) {
	e := s.keepEnv(t)
	e.ok("SetRetention", e.q.SetRetention(e.ctx, "nw", time.Minute))
	id := e.put("nw", queue.NewJob{Body: []byte("a")})
	e.ok("Finish", e.q.Finish(e.ctx, id, []byte("r")))
	r, err := e.raw.Reserve(e.ctx, queue.ReserveRequest{Owner: "o", Tubes: []string{"nw"}, Max: 1})
	e.ok("Reserve", err)
	if len(r.Jobs) != 0 || r.Next >= 0 {
		t.Errorf("reserve of a tube that only keeps a job = %d jobs, next %v (%q), want none and nothing to wait for", len(r.Jobs), r.Next, r.NextTube)
	}
}

// keepEnv is an env whose store must keep finished jobs.
func (s *suite) keepEnv(t *testing.T) *env {
	t.Helper()
	e := s.env(t)
	if _, ok := e.raw.(queue.KeepStore); !ok {
		t.Fatal("the store does not implement queue.KeepStore")
	}
	return e
}

// KeptDropper is implemented by stores whose kept jobs are dropped by a
// background loop a little after their time (Redis): DropKept drops at
// once those whose time has come. The suite calls it before it looks at
// what a drop changes beside the job (the tube's life); Lookup never
// finds a job whose time has come, dropped or not.
type KeptDropper interface {
	DropKept(ctx context.Context) (int, error)
}

// dropKept calls the store's DropKept, if it has one.
func (e *env) dropKept() {
	e.t.Helper()
	if d, ok := e.raw.(KeptDropper); ok {
		if _, err := d.DropKept(e.ctx); err != nil {
			e.t.Errorf("DropKept: %v", err)
		}
	}
}

func (e *env) lookup(id queue.ID) queue.JobStats {
	e.t.Helper()
	js, err := e.q.Lookup(e.ctx, id)
	e.ok("Lookup", err)
	return js
}

func (e *env) wantNoLookup(step string, id queue.ID, tube, key string) {
	e.t.Helper()
	if js, err := e.q.Lookup(e.ctx, id); !errors.Is(err, queue.ErrNotFound) {
		e.t.Errorf("%s: Lookup(%d) = %v %v, want ErrNotFound", step, id, js.State, err)
	}
	if key != "" {
		if js, err := e.q.LookupKey(e.ctx, tube, key); !errors.Is(err, queue.ErrNotFound) {
			e.t.Errorf("%s: LookupKey(%q) = job %d %v %v, want ErrNotFound", step, key, js.ID, js.State, err)
		}
	}
}

// wantKept checks that job id is kept, finished at the clock's now minus
// ago, until KeptUntil, with result.
func (e *env) wantKept(step string, id queue.ID, result string, until time.Time) queue.JobStats {
	e.t.Helper()
	js := e.lookup(id)
	if js.State != queue.Finished || string(js.Result) != result || !js.KeptUntil.Equal(until) || js.FinishedAt.IsZero() {
		e.t.Errorf("%s: Lookup(%d) = %v result %q finished %v kept until %v; want finished, result %q, kept until %v",
			step, id, js.State, js.Result, js.FinishedAt, js.KeptUntil, result, until)
	}
	if _, err := e.q.StatsJob(e.ctx, id); !errors.Is(err, queue.ErrNotFound) {
		e.t.Errorf("%s: StatsJob(%d) of a kept job: %v, want ErrNotFound", step, id, err)
	}
	if _, err := e.q.Peek(e.ctx, id); !errors.Is(err, queue.ErrNotFound) {
		e.t.Errorf("%s: Peek(%d) of a kept job: %v, want ErrNotFound", step, id, err)
	}
	return js
}

// testRetentionSetting: a tube's retention is 0 until set, reads back as
// set, outlives the tube, and bad values are refused.
func testRetentionSetting(t *testing.T, s *suite) {
	e := s.keepEnv(t)
	r, err := e.q.Retention(e.ctx, "r")
	e.ok("Retention", err)
	if r != 0 {
		t.Errorf("Retention of a new tube = %v, want 0", r)
	}
	e.ok("SetRetention", e.q.SetRetention(e.ctx, "r", 90*time.Second))
	if r, err := e.q.Retention(e.ctx, "r"); err != nil || r != 90*time.Second {
		t.Errorf("Retention = %v %v, want 1m30s", r, err)
	}
	for _, d := range []time.Duration{-time.Second, queue.MaxRetention + time.Millisecond, 1500 * time.Microsecond} {
		wantErr(t, "SetRetention "+d.String(), e.q.SetRetention(e.ctx, "r", d), queue.ErrInvalid)
	}
	wantErr(t, "SetRetention of a bad tube", e.q.SetRetention(e.ctx, "bad tube", time.Second), queue.ErrInvalidTube)
	if r, _ := e.q.Retention(e.ctx, "r"); r != 90*time.Second {
		t.Errorf("Retention after refused changes = %v, want 1m30s", r)
	}
	e.wantListed("r", false, "a retention alone makes a tube")
	// It outlives the tube: a job put after it is kept.
	id := e.put("r", queue.NewJob{Body: []byte("a")})
	e.ok("Delete", e.q.Delete(e.ctx, id))
	e.wantKept("delete after the tube came and went", id, "", epoch.Add(90*time.Second))
	e.ok("SetRetention 0", e.q.SetRetention(e.ctx, "r", 0))
	if r, _ := e.q.Retention(e.ctx, "r"); r != 0 {
		t.Errorf("Retention after clearing = %v", r)
	}
	e.wantKept("a cleared retention keeps what it kept", id, "", epoch.Add(90*time.Second))
}

// testFinishKeeps: a finished job is kept with its result, history and
// key until its deadline, outside every count, and then is gone.
func testFinishKeeps(t *testing.T, s *suite) {
	e := s.keepEnv(t)
	e.ok("SetRetention", e.q.SetRetention(e.ctx, "done", 10*time.Second))
	id := e.put("done", queue.NewJob{Body: []byte("order"), Priority: 3, UniqueKey: "order-42"})
	e.reserveWant(e.q, id, "done")
	e.ok("Release with a reason", e.q.ReleaseWithReason(e.ctx, id, 3, 0, "flaky"))
	e.reserveWant(e.q, id, "done")
	e.advance(time.Second)
	wantErr(t, "Finish by another owner", e.q2.Finish(e.ctx, id, []byte("no")), queue.ErrReserved)
	e.ok("Finish", e.q.Finish(e.ctx, id, []byte("shipped")))
	finished := epoch.Add(time.Second)
	until := finished.Add(10 * time.Second)
	js := e.wantKept("after Finish", id, "shipped", until)
	if !js.FinishedAt.Equal(finished) || js.Tube != "done" || js.UniqueKey != "order-42" || string(js.Body) != "order" ||
		js.Reserves != 2 || js.Releases != 1 || js.LastError != "flaky" || js.Priority != 3 {
		t.Errorf("kept job = %+v; want finished at %v in tube done, key order-42, body order, 2 reserves, 1 release, last error flaky, priority 3", js, finished)
	}
	if want := []queue.AttemptError{{At: epoch, Attempt: 1, Reason: "flaky"}}; !cmp.Equal(js.Errors, want) {
		t.Errorf("kept job's error history = %+v, want %+v", js.Errors, want)
	}
	byKey, err := e.q.LookupKey(e.ctx, "done", "order-42")
	e.ok("LookupKey", err)
	if byKey.ID != id || byKey.State != queue.Finished || string(byKey.Result) != "shipped" {
		t.Errorf("LookupKey = job %d %v %q, want %d finished shipped", byKey.ID, byKey.State, byKey.Result, id)
	}
	// Outside every count and reply.
	e.wantTubeStats("with a kept job", queue.TubeStats{Name: "done", TotalJobs: 1, Deletes: 1, Reserves: 2})
	if st := e.stats(); st.Ready+st.Reserved+st.Delayed+st.Buried != 0 {
		t.Errorf("Stats with only a kept job: %+v", st)
	}
	e.noReserve(e.q, "done")
	wantErr(t, "Delete of a kept job", e.q.Delete(e.ctx, id), queue.ErrNotFound)
	wantErr(t, "Finish of a kept job", e.q.Finish(e.ctx, id, nil), queue.ErrNotFound)
	wantErr(t, "KickJob of a kept job", e.q.KickJob(e.ctx, id), queue.ErrNotFound)
	if _, err := e.q.ReserveJob(e.ctx, id); !errors.Is(err, queue.ErrNotFound) {
		t.Errorf("ReserveJob of a kept job: %v, want ErrNotFound", err)
	}
	e.wantListed("done", true, "a tube keeping a job is not listed")
	// Until its deadline, and not after.
	e.advance(10*time.Second - time.Millisecond)
	e.wantKept("a millisecond before the deadline", id, "shipped", until)
	e.advance(time.Millisecond)
	e.wantNoLookup("at the deadline", id, "done", "order-42")
	e.dropKept()
	e.wantListed("done", false, "a tube whose kept jobs are dropped is still listed")
}

// testDeleteKeeps: a delete (a beanstalkd delete, a worker's done-next
// delete) in a tube with a retention keeps the job, without a result.
func testDeleteKeeps(t *testing.T, s *suite) {
	e := s.keepEnv(t)
	e.ok("SetRetention", e.q.SetRetention(e.ctx, "del", time.Minute))
	a := e.put("del", queue.NewJob{Body: []byte("a")})
	b := e.put("del", queue.NewJob{Body: []byte("b")})
	c := e.put("del", queue.NewJob{Body: []byte("c"), Delay: time.Hour})
	e.ok("Delete of a ready job", e.q.Delete(e.ctx, a))
	e.wantKept("deleted", a, "", epoch.Add(time.Minute))
	res, err := e.store.Reserve(e.ctx, queue.ReserveRequest{Owner: e.q.Owner(), Tubes: []string{"del"}, Max: 1})
	e.ok("Reserve", err)
	if len(res.Jobs) != 1 || res.Jobs[0].ID != b {
		t.Fatalf("Reserve = %+v, want job %d", res.Jobs, b)
	}
	res, err = e.store.Reserve(e.ctx, queue.ReserveRequest{Owner: e.q.Owner(), Tubes: []string{"del"}, Max: 1, Delete: []queue.ID{b}})
	e.ok("Reserve deleting b", err)
	if len(res.Deleted) != 1 || res.Deleted[0] != nil || len(res.Jobs) != 0 {
		t.Errorf("Reserve deleting b = %+v, want b deleted and no job", res)
	}
	e.wantKept("deleted by a reserve", b, "", epoch.Add(time.Minute))
	e.ok("Delete of a delayed job", e.q.Delete(e.ctx, c))
	e.wantKept("deleted while delayed", c, "", epoch.Add(time.Minute))
	e.advance(time.Minute)
	for _, id := range []queue.ID{a, b, c} {
		e.wantNoLookup("after the retention", id, "", "")
	}
}

// testFinishWithoutRetention: in a tube without a retention a Finish is a
// delete, and Lookup finds live jobs as StatsJob does.
func testFinishWithoutRetention(t *testing.T, s *suite) {
	e := s.keepEnv(t)
	id := e.put("plain", queue.NewJob{Body: []byte("x"), UniqueKey: "k"})
	js := e.lookup(id)
	if js.State != queue.Ready || js.ID != id || string(js.Body) != "x" {
		t.Errorf("Lookup of a ready job = %+v", js)
	}
	if byKey, err := e.q.LookupKey(e.ctx, "plain", "k"); err != nil || byKey.ID != id || byKey.State != queue.Ready {
		t.Errorf("LookupKey of a ready job = %d %v %v", byKey.ID, byKey.State, err)
	}
	e.ok("Finish", e.q.Finish(e.ctx, id, []byte("r")))
	e.wantNoLookup("finished without a retention", id, "plain", "k")
	e.dropKept()
	e.wantListed("plain", false, "tube listed after its only job finished")
}

// testFinishErrors: bad input is refused and changes nothing.
func testFinishErrors(t *testing.T, s *suite) {
	e := s.keepEnv(t)
	e.ok("SetRetention", e.q.SetRetention(e.ctx, "fe", time.Minute))
	wantErr(t, "Finish of an unknown job", e.q.Finish(e.ctx, e.unknownID(), nil), queue.ErrNotFound)
	wantErr(t, "Finish of ID 0", e.q.Finish(e.ctx, 0, nil), queue.ErrNotFound)
	id := e.put("fe", queue.NewJob{Body: []byte("x")})
	wantErr(t, "Finish with a result too big", e.q.Finish(e.ctx, id, []byte(strings.Repeat("r", queue.MaxResultLen+1))), queue.ErrInvalid)
	e.wantState(id, queue.Ready)
	big := []byte(strings.Repeat("r", queue.MaxResultLen))
	e.ok("Finish with the largest result", e.q.Finish(e.ctx, id, big))
	e.wantKept("largest result", id, string(big), epoch.Add(time.Minute))
	if _, err := e.q.LookupKey(e.ctx, "fe", ""); !errors.Is(err, queue.ErrInvalid) {
		t.Errorf("LookupKey of an empty key: %v, want ErrInvalid", err)
	}
	if _, err := e.q.LookupKey(e.ctx, "fe", "nokey"); !errors.Is(err, queue.ErrNotFound) {
		t.Errorf("LookupKey of a key nobody holds: %v, want ErrNotFound", err)
	}
	if _, err := e.q.LookupKey(e.ctx, "never", "nokey"); !errors.Is(err, queue.ErrNotFound) {
		t.Errorf("LookupKey in an unknown tube: %v, want ErrNotFound", err)
	}
}

// testKeptKeyNewJob: a put with the key of a kept job makes a new job
// (NewJob.UniqueKept not asked), which LookupKey then finds; the kept one
// is still found by its ID.
func testKeptKeyNewJob(t *testing.T, s *suite) {
	e := s.keepEnv(t)
	e.ok("SetRetention", e.q.SetRetention(e.ctx, "kk", time.Minute))
	a := e.put("kk", queue.NewJob{Body: []byte("a"), UniqueKey: "k"})
	e.ok("Finish", e.q.Finish(e.ctx, a, []byte("1")))
	b := e.put("kk", queue.NewJob{Body: []byte("b"), UniqueKey: "k"})
	if b == a {
		t.Fatalf("a put with a kept job's key is a duplicate of it")
	}
	if js, err := e.q.LookupKey(e.ctx, "kk", "k"); err != nil || js.ID != b || js.State != queue.Ready {
		t.Errorf("LookupKey = %d %v %v, want the new job %d ready", js.ID, js.State, err, b)
	}
	if dup := e.put("kk", queue.NewJob{Body: []byte("c"), UniqueKey: "k"}); dup != b {
		t.Errorf("a put with the live job's key = %d, want the duplicate %d", dup, b)
	}
	e.wantKept("the first job", a, "1", epoch.Add(time.Minute))
	e.advance(time.Second)
	e.ok("Finish b", e.q.Finish(e.ctx, b, []byte("2")))
	if js, err := e.q.LookupKey(e.ctx, "kk", "k"); err != nil || js.ID != b || string(js.Result) != "2" {
		t.Errorf("LookupKey after both finished = %d %q %v, want %d with result 2", js.ID, js.Result, err, b)
	}
	e.advance(time.Minute - time.Second)
	e.wantNoLookup("a's deadline", a, "", "")
	if js, err := e.q.LookupKey(e.ctx, "kk", "k"); err != nil || js.ID != b {
		t.Errorf("LookupKey after a's deadline = %d %v, want %d", js.ID, err, b)
	}
}

func (e *env) putRes(tube string, j queue.NewJob) queue.PutResult {
	e.t.Helper()
	res, err := e.q.PutMany(e.ctx, tube, []queue.NewJob{j})
	e.ok("Put", err)
	return res[0]
}

// testKeyWindow: a job put with UniqueFor makes every put with its key a
// duplicate until its window closes, whether it is live or ended; ended,
// it is kept (without a retention) until then.
func testKeyWindow(t *testing.T, s *suite) {
	e := s.keepEnv(t)
	a := e.put("w", queue.NewJob{Body: []byte("a"), UniqueKey: "k", UniqueFor: 10 * time.Second})
	if r := e.putRes("w", queue.NewJob{Body: []byte("b"), UniqueKey: "k"}); r.ID != a || !r.Duplicate || r.State != queue.Ready {
		t.Errorf("a put while the job is live = %+v, want a duplicate of %d, ready", r, a)
	}
	e.reserveWant(e.q, a, "w")
	e.advance(time.Second)
	e.ok("Delete", e.q.Delete(e.ctx, a))
	e.wantKept("ended inside its window", a, "", epoch.Add(10*time.Second))
	e.advance(time.Second)
	if r := e.putRes("w", queue.NewJob{Body: []byte("c"), UniqueKey: "k"}); r.ID != a || !r.Duplicate || r.State != queue.Finished || r.Result != nil {
		t.Errorf("a put inside the window after the job ended = %+v, want a duplicate of %d, finished, without a result", r, a)
	}
	e.noReserve(e.q, "w")
	e.advance(8*time.Second - time.Millisecond)
	if r := e.putRes("w", queue.NewJob{Body: []byte("d"), UniqueKey: "k"}); r.ID != a || !r.Duplicate {
		t.Errorf("a put a millisecond before the window closes = %+v, want a duplicate of %d", r, a)
	}
	e.advance(time.Millisecond)
	r := e.putRes("w", queue.NewJob{Body: []byte("e"), UniqueKey: "k", UniqueFor: 5 * time.Second})
	if r.Duplicate || r.ID == a {
		t.Fatalf("a put when the window closed = %+v, want a new job", r)
	}
	e.wantNoLookup("the first job after its window", a, "", "")
	// Ended without a retention and outside its window: deleted.
	e.reserveWant(e.q, r.ID, "w")
	e.advance(5 * time.Second)
	e.ok("Delete after the window", e.q.Delete(e.ctx, r.ID))
	e.wantNoLookup("ended after its window", r.ID, "w", "k")
	// A window with a retention: kept for the longer of the two.
	e.ok("SetRetention", e.q.SetRetention(e.ctx, "w2", 3*time.Second))
	b := e.put("w2", queue.NewJob{Body: []byte("b"), UniqueKey: "k", UniqueFor: 10 * time.Second})
	e.ok("Finish", e.q.Finish(e.ctx, b, []byte("r")))
	e.wantKept("window longer than the retention", b, "r", e.clock.Now().Add(10*time.Second))
	if r := e.putRes("w2", queue.NewJob{Body: []byte("b2"), UniqueKey: "k"}); r.ID != b || !r.Duplicate || r.State != queue.Finished || string(r.Result) != "r" {
		t.Errorf("a put inside the window of a job finished with a result = %+v, want a duplicate of %d with result r", r, b)
	}
	c := e.put("w2", queue.NewJob{Body: []byte("c"), UniqueKey: "q", UniqueFor: time.Second})
	e.ok("Finish", e.q.Finish(e.ctx, c, nil))
	e.wantKept("retention longer than the window", c, "", e.clock.Now().Add(3*time.Second))
}

// testUniqueKept: a put asking UniqueKept is a duplicate of a kept job
// with its key; one that does not ask is a new job.
func testUniqueKept(t *testing.T, s *suite) {
	e := s.keepEnv(t)
	e.ok("SetRetention", e.q.SetRetention(e.ctx, "uk", time.Minute))
	a := e.put("uk", queue.NewJob{Body: []byte("a"), UniqueKey: "order-1"})
	e.ok("Finish", e.q.Finish(e.ctx, a, []byte("done")))
	if r := e.putRes("uk", queue.NewJob{Body: []byte("b"), UniqueKey: "order-1", UniqueKept: true}); r.ID != a || !r.Duplicate || r.State != queue.Finished || string(r.Result) != "done" {
		t.Errorf("UniqueKept put while the job is kept = %+v, want a duplicate of %d, finished, with its result", r, a)
	}
	e.noReserve(e.q, "uk")
	e.advance(time.Minute)
	r := e.putRes("uk", queue.NewJob{Body: []byte("c"), UniqueKey: "order-1", UniqueKept: true})
	if r.Duplicate {
		t.Errorf("UniqueKept put after the job was dropped = %+v, want a new job", r)
	}
	e.ok("Finish", e.q.Finish(e.ctx, r.ID, nil))
	if r2 := e.putRes("uk", queue.NewJob{Body: []byte("d"), UniqueKey: "order-1"}); r2.Duplicate {
		t.Errorf("a put without UniqueKept while a job is kept = %+v, want a new job", r2)
	}
}

// testDuplicateState: a duplicate says the state of the job it found, at
// the put's time.
func testDuplicateState(t *testing.T, s *suite) {
	e := s.keepEnv(t)
	for _, c := range []struct {
		name string
		job  queue.NewJob
		then func(id queue.ID)
		want queue.State
	}{
		{"ready", queue.NewJob{}, func(queue.ID) {}, queue.Ready},
		{"delayed", queue.NewJob{Delay: time.Minute}, func(queue.ID) {}, queue.Delayed},
		{"reserved", queue.NewJob{}, func(id queue.ID) { e.reserveWant(e.q, id, "ds-reserved") }, queue.Reserved},
		{"buried", queue.NewJob{}, func(id queue.ID) {
			e.reserveWant(e.q, id, "ds-buried")
			e.ok("Bury", e.q.Bury(e.ctx, id, 0))
		}, queue.Buried},
		// What has fallen due counts: a delay or a TTR that ran out makes
		// the job ready, whether or not the store has moved it yet.
		{"delay-over", queue.NewJob{Delay: time.Second}, func(queue.ID) { e.advance(time.Second) }, queue.Ready},
		{"ttr-over", queue.NewJob{TTR: 2 * time.Second}, func(id queue.ID) {
			e.reserveWant(e.q, id, "ds-ttr-over")
			e.advance(2 * time.Second)
		}, queue.Ready},
	} {
		c.job.UniqueKey = "k"
		id := e.put("ds-"+c.name, c.job)
		c.then(id)
		if r := e.putRes("ds-"+c.name, queue.NewJob{UniqueKey: "k"}); r.ID != id || !r.Duplicate || r.State != c.want {
			t.Errorf("%s: duplicate = %+v, want of %d, %v", c.name, r, id, c.want)
		}
	}
	res, err := e.q.PutMany(e.ctx, "ds-batch", []queue.NewJob{{UniqueKey: "b", Delay: time.Second}, {UniqueKey: "b"}})
	e.ok("PutMany", err)
	if !res[1].Duplicate || res[1].ID != res[0].ID || res[1].State != queue.Delayed {
		t.Errorf("a duplicate of an earlier job of the same put = %+v, want of %d, delayed", res[1], res[0].ID)
	}
}

// testKeyOptionsBadInput: windows without a key, bad windows and keys
// beginning with NUL are refused and store nothing.
func testKeyOptionsBadInput(t *testing.T, s *suite) {
	e := s.keepEnv(t)
	for _, j := range []queue.NewJob{
		{UniqueFor: time.Second},
		{UniqueKept: true},
		{UniqueKey: "k", UniqueFor: -time.Second},
		{UniqueKey: "k", UniqueFor: 1500 * time.Microsecond},
		{UniqueKey: "k", UniqueFor: queue.MaxRetention + time.Millisecond},
		{UniqueKey: "\x00k"},
	} {
		if _, err := e.q.Put(e.ctx, "bad", j); !errors.Is(err, queue.ErrInvalid) {
			t.Errorf("Put(%+v): %v, want ErrInvalid", j, err)
		}
	}
	e.wantListed("bad", false, "refused puts made the tube")
}
