package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/queue"
)

func (e *env) needCancel() queue.CancelStore {
	e.t.Helper()
	cs, ok := e.raw.(queue.CancelStore)
	if !ok {
		e.t.Skip("the store does not implement queue.CancelStore")
	}
	return cs
}

// cancel cancels id through e.q and checks the state it says the job was in.
func (e *env) cancel(id queue.ID, reason string, was queue.State) {
	e.t.Helper()
	st, err := e.q.Cancel(e.ctx, id, reason)
	if err != nil {
		e.t.Fatalf("Cancel(%d): %v", id, err)
	}
	if st != was {
		e.t.Errorf("Cancel(%d) says the job was %v, want %v", id, st, was)
	}
}

// testCancelEveryState: a ready, delayed, buried or reserved job is
// removed by a cancel, which says the state it was in and counts a cancel
// (not a delete) in the tube; the holder of a reserved one then finds no
// job for its delete, release, bury or touch, and nothing makes the job
// ready again.
func testCancelEveryState(t *testing.T, s *suite) {
	e := s.env(t)
	e.needCancel()
	ready := e.putPri("cx", 5, "ready")
	delayed := e.put("cx", queue.NewJob{Body: []byte("delayed"), Delay: time.Minute})
	buried := e.buried(e.q2, "cx", 5, "buried")
	held := e.reserved(e.q2, "cx", queue.NewJob{Body: []byte("held"), TTR: 10 * time.Second})
	keep := e.putPri("cx", 9, "keep")

	e.cancel(ready, "", queue.Ready)
	e.cancel(delayed, "not needed", queue.Delayed)
	e.cancel(buried, "stale", queue.Buried)
	e.cancel(held, "the customer left", queue.Reserved)
	for _, id := range []queue.ID{ready, delayed, buried, held} {
		e.wantGone(id)
		if _, err := e.q.Cancel(e.ctx, id, "again"); !errors.Is(err, queue.ErrNotFound) {
			t.Errorf("a second Cancel(%d): %v, want ErrNotFound", id, err)
		}
	}
	// The holder learns it at its next command on the job.
	if err := e.q2.Delete(e.ctx, held); !errors.Is(err, queue.ErrNotFound) {
		t.Errorf("the holder's Delete of a cancelled job: %v, want ErrNotFound", err)
	}
	if err := e.q2.ReleaseWithReason(e.ctx, held, 0, 0, "retry"); !errors.Is(err, queue.ErrNotFound) {
		t.Errorf("the holder's Release of a cancelled job: %v, want ErrNotFound", err)
	}
	if err := e.q2.Bury(e.ctx, held, 0); !errors.Is(err, queue.ErrNotFound) {
		t.Errorf("the holder's Bury of a cancelled job: %v, want ErrNotFound", err)
	}
	if _, err := e.q2.Touch(e.ctx, held); !errors.Is(err, queue.ErrNotFound) {
		t.Errorf("the holder's Touch of a cancelled job: %v, want ErrNotFound", err)
	}
	if n, err := e.q2.Abandon(e.ctx); err != nil || n != 0 {
		t.Errorf("the holder's Abandon after the cancel = %d, %v; want 0 jobs", n, err)
	}
	// Its TTR passing brings nothing back.
	e.advance(time.Minute)
	e.reserveWant(e.q, keep, "cx")
	e.noReserve(e.q, "cx")
	st := e.statsTube("cx")
	if st.Cancels != 4 || st.Deletes != 0 {
		t.Errorf("StatsTube after 4 cancels: Cancels %d, Deletes %d; want 4 and 0", st.Cancels, st.Deletes)
	}
	if st.Ready+st.Delayed+st.Buried != 0 || st.Reserved != 1 {
		t.Errorf("StatsTube after the cancels: %d ready, %d delayed, %d buried, %d reserved; want only the one reserved", st.Ready, st.Delayed, st.Buried, st.Reserved)
	}

	// Bad input changes nothing.
	if _, err := e.q.Cancel(e.ctx, 0, ""); !errors.Is(err, queue.ErrNotFound) {
		t.Errorf("Cancel(0): %v, want ErrNotFound", err)
	}
	if _, err := e.q.Cancel(e.ctx, e.unknownID(), ""); !errors.Is(err, queue.ErrNotFound) {
		t.Errorf("Cancel of an unknown job: %v, want ErrNotFound", err)
	}
}

// testCancelTimedOut: a reservation whose TTR has run out has ended before
// the cancel: the job was ready (its timeout counted), and nobody is told.
func testCancelTimedOut(t *testing.T, s *suite) {
	e := s.env(t)
	e.needCancel()
	e.put("cto", queue.NewJob{Body: []byte("keeps the tube"), Delay: time.Hour})
	id := e.reserved(e.q2, "cto", queue.NewJob{Body: []byte("x"), TTR: time.Second})
	e.advance(2 * time.Second)
	e.cancel(id, "late", queue.Ready)
	e.wantGone(id)
	if st := e.statsTube("cto"); st.Timeouts != 1 || st.Cancels != 1 {
		t.Errorf("StatsTube: %d timeouts, %d cancels; want 1 and 1", st.Timeouts, st.Cancels)
	}
}

// testCancelFreesTubeAndKey: cancelling a tube's last job frees the tube
// as a delete does, and a unique key with it.
func testCancelFreesTubeAndKey(t *testing.T, s *suite) {
	e := s.env(t)
	e.needCancel()
	id := e.put("cfree", queue.NewJob{Body: []byte("x"), UniqueKey: "k"})
	e.cancel(id, "", queue.Ready)
	for _, name := range e.tubes() {
		if name == "cfree" {
			t.Errorf("Tubes after its last job was cancelled still lists cfree")
		}
	}
	again := e.put("cfree", queue.NewJob{Body: []byte("y"), UniqueKey: "k"})
	if again == id {
		t.Errorf("a put with the key of a cancelled job returned the cancelled job's ID %d", id)
	}
	e.wantState(again, queue.Ready)
}

// heardCancel is one call of a ListenCancel.
type heardCancel struct {
	id     queue.ID
	reason string
}

// testCancelListen: a listener of a tube hears of the cancel of a reserved
// job of the tube (or of one of its groups) with its reason; the cancel of
// a job nobody held tells nobody.
func testCancelListen(t *testing.T, s *suite) {
	e := s.env(t)
	cs := e.needCancel()
	heard := make(chan heardCancel, 100)
	stop, err := cs.ListenCancel(e.ctx, "cl", func(id queue.ID, reason string) {
		if id != 0 {
			heard <- heardCancel{id, reason}
		}
	})
	e.ok("ListenCancel", err)
	defer stop()
	next := func(what string) heardCancel {
		t.Helper()
		timer := time.NewTimer(waitLimit)
		defer timer.Stop()
		select {
		case h := <-heard:
			return h
		case <-timer.C:
			t.Fatalf("no cancel heard after %s", what)
		}
		return heardCancel{}
	}
	ready := e.putPri("cl", 0, "ready")
	held := e.reserved(e.q2, "cl", queue.NewJob{Body: []byte("held")})
	e.cancel(ready, "nobody holds it", queue.Ready)
	e.cancel(held, "stop now", queue.Reserved)
	// In order on one tube: the first heard is the reserved job's.
	if h := next("the cancel of a reserved job"); h != (heardCancel{held, "stop now"}) {
		t.Errorf("heard %+v, want job %d with reason %q", h, held, "stop now")
	}
	grouped, err := e.q.Put(e.ctx, "cl", queue.NewJob{Body: []byte("g"), Group: "acme"})
	e.ok("Put into a group", err)
	e.reserveJob(e.q2, grouped)
	e.cancel(grouped, "", queue.Reserved)
	if h := next("the cancel of a reserved job of a group"); h != (heardCancel{grouped, ""}) {
		t.Errorf("heard %+v, want job %d with no reason", h, grouped)
	}
}

// testCancelWorker: a Worker's handler whose job is cancelled sees its
// context end with a *CancelError carrying the reason; the Worker then
// neither deletes, releases nor buries the job, and goes on with the next.
func testCancelWorker(t *testing.T, s *suite) {
	e := s.env(t)
	e.needCancel()
	started := make(chan queue.ID, 10)
	causes := make(chan error, 10)
	w, err := queue.NewWorker(e.q2, queue.HandlerFunc(func(ctx context.Context, job queue.Job) error {
		started <- job.ID
		if string(job.Body) == "quick" {
			return nil
		}
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return ctx.Err()
	}), &queue.WorkerOptions{Tubes: []string{"cw"}})
	e.ok("NewWorker", err)
	ran := make(chan error, 1)
	go func() { ran <- w.Run(e.ctx) }()
	stopped := false
	shutdown := func() {
		if !stopped {
			stopped = true
			if err := w.Shutdown(e.ctx); err != nil {
				t.Errorf("Worker.Shutdown: %v", err)
			}
			if err := <-ran; err != nil {
				t.Errorf("Worker.Run: %v", err)
			}
		}
	}
	defer shutdown()
	wait := func(what string) {
		t.Helper()
		timer := time.NewTimer(waitLimit)
		defer timer.Stop()
		select {
		case <-started:
		case <-timer.C:
			t.Fatalf("the handler did not start %s", what)
		}
	}
	e.put("cw", queue.NewJob{Body: []byte("keeps the tube"), Delay: time.Hour})
	id := e.putPri("cw", 0, "long")
	wait("the long job")
	e.cancel(id, "account closed", queue.Reserved)
	timer := time.NewTimer(waitLimit)
	defer timer.Stop()
	select {
	case cause := <-causes:
		var ce *queue.CancelError
		if !errors.As(cause, &ce) || ce.ID != id || ce.Reason != "account closed" || !errors.Is(cause, queue.ErrCancelled) {
			t.Errorf("the handler's cause: %v, want a CancelError of job %d, %q", cause, id, "account closed")
		}
	case <-timer.C:
		t.Fatal("the handler's context did not end after the cancel")
	}
	// The Worker goes on: the next job runs, and is deleted by the time
	// the Worker has stopped.
	quick := e.putPri("cw", 0, "quick")
	wait("the next job")
	shutdown()
	e.wantGone(quick)
	e.wantGone(id)
	st := e.statsTube("cw")
	if st.Cancels != 1 || st.Deletes != 1 || st.Buries != 0 {
		t.Errorf("StatsTube: %d cancels, %d deletes, %d buries; want 1, 1, 0", st.Cancels, st.Deletes, st.Buries)
	}
}

// testCancelKept: in a tube that keeps finished jobs, a cancelled job is
// kept like a finished one: Lookup finds it finished, Cancelled, with the
// reason as its last error, until the retention has passed; the cancel
// counts as a cancel, not a delete; the holder still finds no job.
func testCancelKept(t *testing.T, s *suite) {
	e := s.keepEnv(t)
	e.ok("SetRetention", e.q.SetRetention(e.ctx, "ck", time.Minute))
	e.put("ck", queue.NewJob{Body: []byte("keeps the tube"), Delay: time.Hour})
	ready := e.putPri("ck", 5, "ready")
	held := e.reserved(e.q2, "ck", queue.NewJob{Body: []byte("held")})
	e.advance(time.Second)
	e.cancel(ready, "", queue.Ready)
	e.cancel(held, "account closed", queue.Reserved)
	for _, c := range []struct {
		id     queue.ID
		reason string
	}{{ready, ""}, {held, "account closed"}} {
		js := e.lookup(c.id)
		if js.State != queue.Finished || !js.Cancelled || js.LastError != c.reason || js.FinishedAt.IsZero() {
			t.Errorf("Lookup(%d) of a cancelled kept job: %v, cancelled %v, last error %q, finished at %v; want finished, cancelled, %q",
				c.id, js.State, js.Cancelled, js.LastError, js.FinishedAt, c.reason)
		}
		e.wantGone(c.id)
	}
	if err := e.q2.Delete(e.ctx, held); !errors.Is(err, queue.ErrNotFound) {
		t.Errorf("the holder's Delete of a cancelled kept job: %v, want ErrNotFound", err)
	}
	if _, err := e.q2.Touch(e.ctx, held); !errors.Is(err, queue.ErrNotFound) {
		t.Errorf("the holder's Touch of a cancelled kept job: %v, want ErrNotFound", err)
	}
	if _, err := e.q.Cancel(e.ctx, held, "again"); !errors.Is(err, queue.ErrNotFound) {
		t.Errorf("a second Cancel of a kept job: %v, want ErrNotFound", err)
	}
	st := e.statsTube("ck")
	if st.Cancels != 2 || st.Deletes != 0 || st.Ready+st.Reserved != 0 {
		t.Errorf("StatsTube: %d cancels, %d deletes, %d ready, %d reserved; want 2, 0, 0, 0", st.Cancels, st.Deletes, st.Ready, st.Reserved)
	}
	e.advance(time.Minute)
	e.dropKept()
	e.wantNoLookup("after the retention", held, "", "")
}
