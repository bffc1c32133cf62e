package storetest

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/hourglass-io/hourglass/queue"
)

// history returns the history fields of js.
func history(js queue.JobStats) queue.JobStats {
	return queue.JobStats{
		PutAt: js.PutAt, ReservedAt: js.ReservedAt, ReleasedAt: js.ReleasedAt, BuriedAt: js.BuriedAt,
		KickedAt: js.KickedAt, TimedOutAt: js.TimedOutAt, LastError: js.LastError, LastErrorAt: js.LastErrorAt,
	}
}

// wantHistory compares the history fields of StatsJob(id) with want's.
func (e *env) wantHistory(step string, id queue.ID, want queue.JobStats) {
	e.t.Helper()
	if diff := cmp.Diff(history(want), history(e.statsJob(id))); diff != "" {
		e.t.Errorf("%s: history of job %d (-want +got):\n%s", step, id, diff)
	}
}

// testHistoryReasons: the reason of a release or a bury becomes the job's
// last error with its time; a release or bury without one keeps the last
// error; the other owner's failed attempt changes nothing.
func testHistoryReasons(t *testing.T, s *suite) {
	e := s.env(t)
	at := func(d time.Duration) time.Time { return epoch.Add(d) }
	id := e.put("hr", queue.NewJob{Body: []byte("fails"), TTR: time.Minute})
	want := queue.JobStats{PutAt: epoch}
	e.wantHistory("put", id, want)

	e.advance(time.Second)
	e.reserveWant(e.q, id, "hr")
	want.ReservedAt = at(time.Second)
	e.wantHistory("reserved", id, want)

	e.advance(time.Second)
	e.ok("ReleaseWithReason", e.q.ReleaseWithReason(e.ctx, id, 0, time.Second, "dial tcp: connection refused"))
	want.ReleasedAt, want.LastError, want.LastErrorAt = at(2*time.Second), "dial tcp: connection refused", at(2*time.Second)
	e.wantHistory("released with a reason", id, want)

	e.advance(time.Second)
	e.reserveWant(e.q, id, "hr")
	wantErr(t, "BuryWithReason by another owner", e.q2.BuryWithReason(e.ctx, id, 0, "not mine"), queue.ErrNotReserved)
	want.ReservedAt = at(3 * time.Second)
	e.wantHistory("another owner's bury refused", id, want)

	e.advance(time.Second)
	e.ok("Release without a reason", e.q.Release(e.ctx, id, 0, 0))
	want.ReleasedAt = at(4 * time.Second)
	e.wantHistory("released without a reason: the last error stays", id, want)

	e.advance(time.Second)
	e.reserveWant(e.q, id, "hr")
	e.advance(time.Second)
	e.ok("BuryWithReason", e.q.BuryWithReason(e.ctx, id, 0, "no such user: ü"))
	want.ReservedAt, want.BuriedAt = at(5*time.Second), at(6*time.Second)
	want.LastError, want.LastErrorAt = "no such user: ü", at(6*time.Second)
	e.wantHistory("buried with a reason", id, want)

	e.advance(time.Second)
	e.ok("KickJob", e.q.KickJob(e.ctx, id))
	want.KickedAt = at(7 * time.Second)
	e.wantHistory("kicked", id, want)

	// A job that never failed has no last error, and no reason changes another job.
	other := e.put("hr", queue.NewJob{Body: []byte("fine")})
	e.wantHistory("another job", other, queue.JobStats{PutAt: at(7 * time.Second)})
	if js := e.statsJob(id); js.Releases != 2 || js.Buries != 1 || js.Kicks != 1 || js.Reserves != 3 {
		t.Errorf("counters: %+v, want 3 reserves, 2 releases, 1 bury, 1 kick", js)
	}
}

// testHistoryReasonBound: a reason is kept to MaxReasonLen bytes, cut at
// the end of a whole character; invalid UTF-8 is replaced. One of exactly
// MaxReasonLen bytes given to the store is kept whole.
func testHistoryReasonBound(t *testing.T, s *suite) {
	e := s.env(t)
	cases := []struct {
		name, reason, want string
	}{
		{"ascii, too long", strings.Repeat("x", 3000), strings.Repeat("x", queue.MaxReasonLen)},
		{"a 3-byte character across the limit", strings.Repeat("x", queue.MaxReasonLen-1) + "€tail", strings.Repeat("x", queue.MaxReasonLen-1)},
		{"2-byte characters", strings.Repeat("é", 600), strings.Repeat("é", queue.MaxReasonLen/2)},
		{"invalid UTF-8", "bad \xff byte", "bad \uFFFD byte"},
	}
	for i, c := range cases {
		id := e.reserved(e.q, "hb", queue.NewJob{Body: []byte(c.name)})
		var err error
		if i%2 == 0 {
			err = e.q.ReleaseWithReason(e.ctx, id, 0, time.Hour, c.reason)
		} else {
			err = e.q.BuryWithReason(e.ctx, id, 0, c.reason)
		}
		e.ok(c.name, err)
		got := e.statsJob(id).LastError
		if got != c.want {
			t.Errorf("%s: LastError is %d bytes (%.20q…), want %d bytes (%.20q…)", c.name, len(got), got, len(c.want), c.want)
		}
		if len(got) > queue.MaxReasonLen || !utf8.ValidString(got) {
			t.Errorf("%s: LastError of %d bytes, valid UTF-8 %v", c.name, len(got), utf8.ValidString(got))
		}
	}
	// Straight to the store: a reason of exactly the limit is kept whole.
	full := strings.Repeat("ü", queue.MaxReasonLen/2)
	for _, bury := range []bool{false, true} {
		id := e.reserved(e.q, "hb", queue.NewJob{})
		var err error
		if bury {
			err = e.store.Bury(e.ctx, e.q.Owner(), id, 0, full)
		} else {
			err = e.store.Release(e.ctx, e.q.Owner(), id, 0, 0, full)
		}
		e.ok("Store release or bury", err)
		if got := e.statsJob(id).LastError; got != full {
			t.Errorf("bury %v: LastError of %d bytes, want the %d bytes given", bury, len(got), len(full))
		}
	}
}
