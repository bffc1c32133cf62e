package storetest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hourglass-io/hourglass/queue"
)

// wantErrors compares the error history of StatsJob(id) with want.
func (e *env) wantErrors(step string, id queue.ID, want []queue.AttemptError) {
	e.t.Helper()
	js := e.statsJob(id)
	if diff := cmp.Diff(want, js.Errors); diff != "" {
		e.t.Errorf("%s: error history of job %d (-want +got):\n%s", step, id, diff)
	}
	if n := len(js.Errors); n > 0 && (js.Errors[n-1].Reason != js.LastError || !js.Errors[n-1].At.Equal(js.LastErrorAt)) {
		e.t.Errorf("%s: newest error %+v is not the last error %q at %v", step, js.Errors[n-1], js.LastError, js.LastErrorAt)
	}
}

// testErrorHistory: each release or bury that gives a reason adds the
// error of the attempt it ends (its time, the reserve it ended, the
// reason as the job keeps it) to the job's history, which keeps the last
// queue.MaxErrors within queue.MaxErrorBytes of reasons, oldest first
// (queue.AppendError); a release or bury without a reason, another
// owner's refused one, a timeout, a kick and a touch add nothing; and the
// history is the job's alone.
func testErrorHistory(t *testing.T, s *suite) {
	e := s.env(t)
	id := e.put("eh", queue.NewJob{Body: []byte("flaky"), TTR: 10 * time.Second})
	other := e.put("eh", queue.NewJob{Body: []byte("fine"), TTR: 10 * time.Second})
	e.wantErrors("put", id, nil)

	var want []queue.AttemptError
	for n := 1; n <= 16; n++ {
		e.advance(time.Second)
		e.reserveWant(e.q, id, "eh")
		e.advance(250 * time.Millisecond)
		reason := fmt.Sprintf("attempt %d: connection refused", n)
		switch {
		case n == 3:
			reason = "" // a release without a reason
		case n == 5:
			reason = strings.Repeat("é", queue.MaxReasonLen) // cut to MaxReasonLen by the Queue
		case n >= 12:
			reason = fmt.Sprintf("%d %s", n, strings.Repeat("x", queue.MaxReasonLen-10)) // the byte budget binds
		}
		if n%4 == 0 {
			wantErr(t, "another owner's bury", e.q2.BuryWithReason(e.ctx, id, 0, "not mine"), queue.ErrNotReserved)
			e.ok("BuryWithReason", e.q.BuryWithReason(e.ctx, id, 0, reason))
			e.ok("KickJob", e.q.KickJob(e.ctx, id))
		} else {
			e.ok("ReleaseWithReason", e.q.ReleaseWithReason(e.ctx, id, 0, 0, reason))
		}
		if reason != "" {
			want = queue.AppendError(want, queue.AttemptError{At: e.clock.Now(), Attempt: uint32(n), Reason: queue.CutReason(reason)})
		}
		e.wantErrors(fmt.Sprintf("attempt %d", n), id, want)
	}
	if len(want) != queue.MaxErrorBytes/queue.MaxReasonLen || want[0].Attempt != 13 {
		t.Fatalf("the model kept %d errors from attempt %d; the case meant the byte budget to bind", len(want), want[0].Attempt)
	}

	// A timeout and a touch add nothing; the next reason does.
	e.advance(time.Second)
	e.reserveWant(e.q, id, "eh")
	e.ok("Touch", e.touch(e.q, id))
	e.advance(11 * time.Second)
	e.wantErrors("timed out", id, want)
	if js := e.statsJob(id); js.Timeouts != 1 || js.State != queue.Ready {
		t.Fatalf("after the TTR ran out: %v with %d timeouts, want ready with 1", js.State, js.Timeouts)
	}
	e.reserveWant(e.q, id, "eh")
	e.ok("BuryWithReason", e.q.BuryWithReason(e.ctx, id, 0, "short"))
	want = queue.AppendError(want, queue.AttemptError{At: e.clock.Now(), Attempt: 18, Reason: "short"})
	e.wantErrors("after a timeout", id, want)

	// Straight to the store: a reason of exactly MaxReasonLen is kept whole.
	e.ok("KickJob", e.q.KickJob(e.ctx, id))
	e.reserveWant(e.q, id, "eh")
	full := strings.Repeat("ü", queue.MaxReasonLen/2)
	e.ok("Store.Release", e.store.Release(e.ctx, e.q.Owner(), id, queue.KeepPriority, time.Minute, full))
	want = queue.AppendError(want, queue.AttemptError{At: e.clock.Now(), Attempt: 19, Reason: full})
	e.wantErrors("a reason of MaxReasonLen", id, want)

	e.wantErrors("the other job", other, nil)
	e.ok("Delete", e.q.Delete(e.ctx, id))
	if _, err := e.q.StatsJob(e.ctx, id); err == nil {
		t.Fatal("StatsJob of a deleted job succeeded")
	}
}
