package storetest

import (
	"errors"
	"github.com/google/go-cmp/cmp"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/queue"
)

// testDelayed: a delayed job becomes ready exactly at its due time.
func testDelayed(t *testing.T, s *suite) {
	for _, delay := range []time.Duration{time.Millisecond, time.Second, 5*time.Second + 250*time.Millisecond, time.Hour} {
		t.Run(delay.String(), func(t *testing.T) {
			e := s.env(t)
			id := e.put("later", queue.NewJob{Body: []byte("d"), Priority: 3, Delay: delay})
			want := queue.JobStats{Tube: "later", State: queue.Delayed, Priority: 3, Delay: delay, TTR: queue.DefaultTTR, TimeLeft: delay, PutAt: epoch}
			e.wantStatsJob("just put", id, want)
			if _, err := e.q.PeekReady(e.ctx, "later"); !errors.Is(err, queue.ErrNotFound) {
				t.Errorf("PeekReady with only a delayed job: %v, want ErrNotFound", err)
			}
			e.noReserve(e.q, "later")

			e.advance(delay - time.Millisecond)
			want.Age, want.TimeLeft = delay-time.Millisecond, time.Millisecond
			e.wantStatsJob("1ms before due", id, want)
			e.noReserve(e.q, "later")
			if j, err := e.q.PeekDelayed(e.ctx, "later"); err != nil || j.ID != id {
				t.Errorf("PeekDelayed 1ms before due = %d, %v; want job %d", j.ID, err, id)
			}

			e.advance(time.Millisecond)
			want.State, want.Age, want.TimeLeft = queue.Ready, delay, 0
			e.wantStatsJob("at due time", id, want)
			if j, err := e.q.PeekReady(e.ctx, "later"); err != nil || j.ID != id {
				t.Errorf("PeekReady at due time = %d, %v; want job %d", j.ID, err, id)
			}
			if _, err := e.q.PeekDelayed(e.ctx, "later"); !errors.Is(err, queue.ErrNotFound) {
				t.Errorf("PeekDelayed after the job is due: %v, want ErrNotFound", err)
			}
			j := e.reserveWant(e.q, id, "later")
			if j.Reserves != 1 {
				t.Errorf("Reserves = %d, want 1", j.Reserves)
			}
		})
	}
}

// testPeekDelayedSoonest: PeekDelayed returns the soonest due job, ties by
// ID, and due jobs become ready in that order.
func testPeekDelayedSoonest(t *testing.T, s *suite) {
	e := s.env(t)
	d30 := e.put("soon", queue.NewJob{Body: []byte("30s"), Delay: 30 * time.Second})
	d10 := e.put("soon", queue.NewJob{Body: []byte("10s"), Delay: 10 * time.Second, Priority: 9})
	d20 := e.put("soon", queue.NewJob{Body: []byte("20s"), Delay: 20 * time.Second})
	d10b := e.put("soon", queue.NewJob{Body: []byte("10s again"), Delay: 10 * time.Second})
	e.advance(2 * time.Second)
	d15 := e.put("soon", queue.NewJob{Body: []byte("15s at +2s"), Delay: 15 * time.Second}) // due at 17s
	peek := func(want queue.ID) {
		t.Helper()
		j, err := e.q.PeekDelayed(e.ctx, "soon")
		if err != nil || j.ID != want {
			t.Fatalf("PeekDelayed = job %d, %v; want job %d", j.ID, err, want)
		}
	}
	peek(d10)
	e.ok("Delete", e.q.Delete(e.ctx, d10))
	peek(d10b)
	e.advance(8 * time.Second) // 10s: d10b due
	peek(d15)
	e.reserveWant(e.q, d10b, "soon")
	e.advance(7 * time.Second) // 17s: d15 due
	peek(d20)
	e.advance(3 * time.Second) // 20s: d20 due
	peek(d30)
	e.reserveWant(e.q, d20, "soon") // both ready with priority 0: d20 has the lower ID
	e.reserveWant(e.q, d15, "soon")
	e.noReserve(e.q, "soon")
	e.advance(10 * time.Second)
	if _, err := e.q.PeekDelayed(e.ctx, "soon"); !errors.Is(err, queue.ErrNotFound) {
		t.Errorf("PeekDelayed with every job due: %v, want ErrNotFound", err)
	}
	e.reserveWant(e.q, d30, "soon")
}

// testTTRExpiry: a reservation ends when its TTR runs out; the job is ready
// again with a timeout counted, and its old owner no longer holds it.
func testTTRExpiry(t *testing.T, s *suite) {
	e := s.env(t)
	const ttr = 2 * time.Second
	id := e.put("ttr", queue.NewJob{Body: []byte("slow"), Priority: 4, TTR: ttr})
	e.reserveWant(e.q, id, "ttr")
	want := queue.JobStats{Tube: "ttr", State: queue.Reserved, Priority: 4, TTR: ttr, TimeLeft: ttr, Reserves: 1,
		PutAt: epoch, ReservedAt: epoch, ReservedBy: e.q.Owner()}
	e.wantStatsJob("reserved", id, want)

	e.advance(ttr - time.Millisecond)
	want.Age, want.TimeLeft = ttr-time.Millisecond, time.Millisecond
	e.wantStatsJob("1ms before the TTR runs out", id, want)
	if st := e.stats(); st.Timeouts != 0 || st.Reserved != 1 {
		t.Errorf("Stats 1ms before expiry: Timeouts %d Reserved %d, want 0 and 1", st.Timeouts, st.Reserved)
	}

	e.advance(time.Millisecond)
	want.State, want.Age, want.TimeLeft, want.Timeouts, want.ReservedBy = queue.Ready, ttr, 0, 1, ""
	want.TimedOutAt = epoch.Add(ttr)
	e.wantStatsJob("TTR run out", id, want)
	if st := e.stats(); st.Timeouts != 1 || st.Ready != 1 || st.Reserved != 0 {
		t.Errorf("Stats after expiry: Timeouts %d Ready %d Reserved %d, want 1, 1, 0", st.Timeouts, st.Ready, st.Reserved)
	}

	// The old owner's reservation is over.
	wantErr(t, "Release by the old owner", e.q.Release(e.ctx, id, 0, 0), queue.ErrNotReserved)
	wantErr(t, "Bury by the old owner", e.q.Bury(e.ctx, id, 0), queue.ErrNotReserved)
	wantErr(t, "Touch by the old owner", e.touch(e.q, id), queue.ErrNotReserved)
	e.wantStatsJob("after the old owner's attempts", id, want)

	// Someone else reserves it; the old owner still cannot end it, nor delete it.
	j := e.reserveWant(e.q2, id, "ttr")
	if j.Reserves != 2 {
		t.Errorf("Reserves after a second reserve = %d, want 2", j.Reserves)
	}
	wantErr(t, "Delete by the old owner while another holds it", e.q.Delete(e.ctx, id), queue.ErrReserved)
	wantErr(t, "Release by the old owner while another holds it", e.q.Release(e.ctx, id, 0, 0), queue.ErrNotReserved)
	wantErr(t, "Touch by the old owner while another holds it", e.touch(e.q, id), queue.ErrNotReserved)
	e.wantState(id, queue.Reserved)

	// It times out again; the ready job can be deleted by anyone.
	e.advance(ttr)
	want.Age, want.Reserves, want.Timeouts = 2*ttr, 2, 2
	want.ReservedAt, want.TimedOutAt = epoch.Add(ttr), epoch.Add(2*ttr) // the time the TTR ran out
	e.wantStatsJob("second expiry", id, want)
	if st := e.stats(); st.Timeouts != 2 {
		t.Errorf("Stats.Timeouts = %d, want 2", st.Timeouts)
	}
	wantErr(t, "Delete of the timed-out (ready) job by the first owner", e.q.Delete(e.ctx, id), nil)
	e.wantGone(id)
}

// testTouch: Touch at t moves the expiry to t+TTR.
func testTouch(t *testing.T, s *suite) {
	e := s.env(t)
	const ttr = 10 * time.Second
	id := e.put("touch", queue.NewJob{Body: []byte("t"), TTR: ttr})
	e.reserveWant(e.q, id, "touch")
	e.advance(4 * time.Second)
	if got := e.statsJob(id).TimeLeft; got != 6*time.Second {
		t.Errorf("TimeLeft 4s after reserve = %v, want 6s", got)
	}
	e.ok("Touch", e.touch(e.q, id))
	if got := e.statsJob(id).TimeLeft; got != ttr {
		t.Errorf("TimeLeft after Touch = %v, want the full TTR %v", got, ttr)
	}
	e.advance(ttr - time.Millisecond)
	if js := e.statsJob(id); js.State != queue.Reserved || js.TimeLeft != time.Millisecond {
		t.Errorf("1ms before the touched expiry: %v with TimeLeft %v, want reserved with 1ms", js.State, js.TimeLeft)
	}
	e.ok("Touch again", e.touch(e.q, id))
	e.advance(ttr - time.Millisecond)
	e.wantState(id, queue.Reserved)
	e.advance(time.Millisecond)
	if js := e.statsJob(id); js.State != queue.Ready || js.Timeouts != 1 {
		t.Errorf("at the touched expiry: %v with %d timeouts, want ready with 1", js.State, js.Timeouts)
	}

	wantErr(t, "Touch of a ready job", e.touch(e.q, id), queue.ErrNotReserved)
	e.reserveWant(e.q2, id, "touch")
	wantErr(t, "Touch of another owner's job", e.touch(e.q, id), queue.ErrNotReserved)
	e.ok("Touch by the owner", e.touch(e.q2, id))
	wantErr(t, "Touch of an unknown job", e.touch(e.q, e.unknownID()), queue.ErrNotFound)
	e.ok("Delete", e.q2.Delete(e.ctx, id))
	wantErr(t, "Touch of a deleted job", e.touch(e.q2, id), queue.ErrNotFound)
}

// testReservations: reserves return the time left on the store's clock,
// and an owner's reservations come back from the store with the time left,
// without those of other owners, and without one whose TTR ran out.
func testReservations(t *testing.T, s *suite) {
	e := s.env(t)
	held := func(q *queue.Queue) map[queue.ID]time.Duration {
		t.Helper()
		rs, err := q.Held(e.ctx)
		e.ok("Held", err)
		m := map[queue.ID]time.Duration{}
		for _, r := range rs {
			m[r.ID] = r.Left
		}
		return m
	}
	want := func(what string, got, want map[queue.ID]time.Duration) {
		t.Helper()
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", what, diff)
		}
	}
	want("Held of a new owner", held(e.q), map[queue.ID]time.Duration{})
	short := e.put("rs", queue.NewJob{Body: []byte("short"), TTR: 5 * time.Second})
	long := e.put("rs", queue.NewJob{Body: []byte("long"), TTR: time.Minute})
	theirs := e.put("rs", queue.NewJob{Body: []byte("theirs"), TTR: time.Minute})
	j, err := e.q.Reserve(e.ctx, queue.ReserveOptions{Tubes: []string{"rs"}, Timeout: -1})
	e.ok("Reserve", err)
	if j.ID != short || j.Left != 5*time.Second {
		t.Errorf("Reserve = job %d with %v left, want %d with 5s", j.ID, j.Left, short)
	}
	e.advance(time.Second)
	j, err = e.q.ReserveJob(e.ctx, long)
	e.ok("ReserveJob", err)
	if j.Left != time.Minute {
		t.Errorf("ReserveJob: %v left, want 1m", j.Left)
	}
	e.reserveWant(e.q2, theirs, "rs")
	e.advance(2 * time.Second)
	want("Held 3s after the first reserve", held(e.q), map[queue.ID]time.Duration{short: 2 * time.Second, long: 58 * time.Second})
	want("Held of the other owner", held(e.q2), map[queue.ID]time.Duration{theirs: 58 * time.Second})
	e.advance(2 * time.Second) // short's TTR runs out; nothing has looked at it
	want("Held once short's TTR ran out", held(e.q), map[queue.ID]time.Duration{long: 56 * time.Second})
	e.ok("Touch", e.touch(e.q, long))
	want("Held after Touch", held(e.q), map[queue.ID]time.Duration{long: time.Minute})
	e.reserveWant(e.q, short, "rs") // reserved again after its timeout
	want("Held after short's second reserve", held(e.q), map[queue.ID]time.Duration{short: 5 * time.Second, long: time.Minute})
	e.ok("Delete", e.q.Delete(e.ctx, short))
	e.ok("Release", e.q.Release(e.ctx, long, 0, 0))
	want("Held after delete and release", held(e.q), map[queue.ID]time.Duration{})
	want("Held of the other owner at the end", held(e.q2), map[queue.ID]time.Duration{theirs: 56 * time.Second})
}

// testDueTransitions: once a deadline has passed, no method sees the job in
// the state it left, whatever method it is.
func testDueTransitions(t *testing.T, s *suite) {
	t.Run("delayed job due", func(t *testing.T) {
		e := s.env(t)
		id := e.put("due", queue.NewJob{Body: []byte("d"), Delay: 5 * time.Second})
		e.advance(5 * time.Second)
		wantErr(t, "KickJob of a due job", e.q.KickJob(e.ctx, id), queue.ErrNotKickable)
		n, err := e.q.Kick(e.ctx, "due", 10)
		if err != nil || n != 0 {
			t.Errorf("Kick with only a due job = %d, %v; want 0", n, err)
		}
		ts := e.statsTube("due")
		if ts.Ready != 1 || ts.Delayed != 0 || ts.Urgent != 1 {
			t.Errorf("StatsTube after the delay: %+v, want 1 ready (urgent), 0 delayed", ts)
		}
		if js := e.statsJob(id); js.Kicks != 0 || js.State != queue.Ready {
			t.Errorf("StatsJob: %+v, want ready and no kicks", js)
		}
	})
	t.Run("reservation expired", func(t *testing.T) {
		e := s.env(t)
		id := e.reserved(e.q2, "due", queue.NewJob{Body: []byte("r"), TTR: time.Second})
		e.advance(time.Second)
		if ts := e.statsTube("due"); ts.Ready != 1 || ts.Reserved != 0 {
			t.Errorf("StatsTube after expiry: %+v, want 1 ready, 0 reserved", ts)
		}
		j, err := e.q.ReserveJob(e.ctx, id)
		if err != nil || j.Reserves != 2 {
			t.Errorf("ReserveJob of a job whose reservation expired = %+v, %v; want it with Reserves 2", j, err)
		}
		n, err := e.q2.Abandon(e.ctx)
		if err != nil || n != 0 {
			t.Errorf("Abandon by the expired owner = %d, %v; want 0", n, err)
		}
		if st := e.stats(); st.Timeouts != 1 {
			t.Errorf("Stats.Timeouts = %d, want 1", st.Timeouts)
		}
	})
	t.Run("pause ended", func(t *testing.T) {
		e := s.env(t)
		id := e.putPri("due", 1, "p")
		e.ok("PauseTube", e.q.PauseTube(e.ctx, "due", 3*time.Second))
		e.advance(3 * time.Second)
		ts := e.statsTube("due")
		if ts.Pause != 0 || ts.PauseTimeLeft != 0 || ts.Pauses != 1 {
			t.Errorf("StatsTube after the pause: %+v, want Pause 0, PauseTimeLeft 0, Pauses 1", ts)
		}
		e.reserveWant(e.q, id, "due")
	})
}

// testStatsJob: every field of StatsJob through a job's life, with exact
// durations from the injected clock.
func testStatsJob(t *testing.T, s *suite) {
	e := s.env(t)
	id := e.put("sj", queue.NewJob{Body: []byte("stats"), Priority: 7, Delay: 2 * time.Second, TTR: 30 * time.Second})
	want := queue.JobStats{Tube: "sj", State: queue.Delayed, Priority: 7, Delay: 2 * time.Second, TTR: 30 * time.Second, TimeLeft: 2 * time.Second,
		PutAt: epoch}
	at := func(d time.Duration) time.Time { return epoch.Add(d) }
	e.wantStatsJob("put", id, want)

	e.advance(500 * time.Millisecond)
	want.Age, want.TimeLeft = 500*time.Millisecond, 1500*time.Millisecond
	e.wantStatsJob("delayed, 500ms in", id, want)

	e.advance(1500 * time.Millisecond)
	want.State, want.Age, want.TimeLeft, want.ReservedBy = queue.Ready, 2*time.Second, 0, ""
	e.wantStatsJob("ready", id, want)

	e.reserveWant(e.q, id, "sj")
	e.advance(10 * time.Second)
	want.State, want.Age, want.TimeLeft, want.Reserves = queue.Reserved, 12*time.Second, 20*time.Second, 1
	want.ReservedAt, want.ReservedBy = at(2*time.Second), e.q.Owner()
	e.wantStatsJob("reserved, 10s in", id, want)

	e.ok("Release", e.q.Release(e.ctx, id, 9, 0))
	want.State, want.Priority, want.Delay, want.TimeLeft, want.Releases, want.ReservedBy = queue.Ready, 9, 0, 0, 1, ""
	want.ReleasedAt = at(12 * time.Second)
	e.wantStatsJob("released", id, want)

	e.advance(time.Second)
	e.reserveJob(e.q, id)
	e.ok("Bury", e.q.Bury(e.ctx, id, 4))
	want.State, want.Priority, want.Age, want.Reserves, want.Buries = queue.Buried, 4, 13*time.Second, 2, 1
	want.ReservedAt, want.BuriedAt = at(13*time.Second), at(13*time.Second)
	e.wantStatsJob("buried", id, want)

	if n, err := e.q.Kick(e.ctx, "sj", 1); err != nil || n != 1 {
		t.Fatalf("Kick = %d, %v; want 1", n, err)
	}
	want.State, want.Kicks = queue.Ready, 1
	want.KickedAt = at(13 * time.Second)
	e.wantStatsJob("kicked", id, want)

	e.reserveWant(e.q, id, "sj")
	e.advance(30 * time.Second)
	want.Age, want.Reserves, want.Timeouts = 43*time.Second, 3, 1
	want.ReservedAt, want.TimedOutAt = at(13*time.Second), at(43*time.Second)
	e.wantStatsJob("timed out", id, want)

	e.reserveWant(e.q, id, "sj")
	e.ok("Release with delay", e.q.Release(e.ctx, id, 9, 4*time.Second))
	want.State, want.Priority, want.Delay, want.TimeLeft = queue.Delayed, 9, 4*time.Second, 4*time.Second
	want.Reserves, want.Releases = 4, 2
	want.ReservedAt, want.ReleasedAt = at(43*time.Second), at(43*time.Second)
	e.wantStatsJob("released with a delay", id, want)

	e.advance(time.Second)
	e.ok("KickJob", e.q.KickJob(e.ctx, id))
	want.State, want.Age, want.TimeLeft, want.Kicks = queue.Ready, 44*time.Second, 0, 2
	want.KickedAt = at(44 * time.Second)
	e.wantStatsJob("kicked from delayed", id, want)
}
