package storetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/hourglass-io/hourglass/queue"
)

// testRelease: Release to ready with a new priority, or to delayed with a
// due time; only the owner may release.
func testRelease(t *testing.T, s *suite) {
	for _, c := range []struct {
		name  string
		pri   uint32
		delay time.Duration
	}{
		{"ready same priority", 5, 0},
		{"ready new priority", 2000, 0},
		{"ready priority 0", 0, 0},
		{"delayed 1ms", 5, time.Millisecond},
		{"delayed 3s", 7, 3 * time.Second},
		{"delayed 1h", 5, time.Hour},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := s.env(t)
			id := e.put("rel", queue.NewJob{Body: []byte("r"), Priority: 5, TTR: 10 * time.Second})
			e.reserveWant(e.q, id, "rel")
			e.advance(time.Second)
			e.ok("Release", e.q.Release(e.ctx, id, c.pri, c.delay))
			want := queue.JobStats{Tube: "rel", State: queue.Ready, Priority: c.pri, Age: time.Second, Delay: c.delay,
				TTR: 10 * time.Second, Reserves: 1, Releases: 1, PutAt: epoch, ReservedAt: epoch, ReleasedAt: epoch.Add(time.Second)}
			if c.delay > 0 {
				want.State, want.TimeLeft = queue.Delayed, c.delay
				e.wantStatsJob("released", id, want)
				if j, err := e.q.PeekDelayed(e.ctx, "rel"); err != nil || j.ID != id {
					t.Errorf("PeekDelayed = %d, %v; want job %d", j.ID, err, id)
				}
				e.noReserve(e.q, "rel")
				e.advance(c.delay - time.Millisecond)
				e.wantState(id, queue.Delayed)
				e.noReserve(e.q, "rel")
				e.advance(time.Millisecond)
				want.State, want.TimeLeft, want.Age = queue.Ready, 0, time.Second+c.delay
			}
			e.wantStatsJob("ready again", id, want)
			wantErr(t, "Release of a ready job", e.q.Release(e.ctx, id, 0, 0), queue.ErrNotReserved)
			j := e.reserveWant(e.q, id, "rel")
			if j.Priority != c.pri || j.Reserves != 2 {
				t.Errorf("reserved again: priority %d, reserves %d; want %d and 2", j.Priority, j.Reserves, c.pri)
			}
		})
	}
	t.Run("errors", func(t *testing.T) {
		e := s.env(t)
		id := e.reserved(e.q2, "rel", queue.NewJob{Body: []byte("theirs")})
		wantErr(t, "Release of another owner's job", e.q.Release(e.ctx, id, 0, 0), queue.ErrNotReserved)
		wantErr(t, "Release of an unknown job", e.q.Release(e.ctx, e.unknownID(), 0, 0), queue.ErrNotFound)
		delayed := e.put("rel", queue.NewJob{Body: []byte("d"), Delay: time.Minute})
		wantErr(t, "Release of a delayed job", e.q.Release(e.ctx, delayed, 0, 0), queue.ErrNotReserved)
		buried := e.buried(e.q, "rel", 1, "b")
		wantErr(t, "Release of a buried job", e.q.Release(e.ctx, buried, 0, 0), queue.ErrNotReserved)
		if js := e.statsJob(id); js.State != queue.Reserved || js.Releases != 0 {
			t.Errorf("after failed releases: %+v, want reserved with no releases", js)
		}
		e.ok("Release by the owner", e.q2.Release(e.ctx, id, 0, 0))
		e.ok("Delete", e.q.Delete(e.ctx, id))
		wantErr(t, "Release of a deleted job", e.q2.Release(e.ctx, id, 0, 0), queue.ErrNotFound)
	})
	t.Run("new priority reorders", func(t *testing.T) {
		e := s.env(t)
		a := e.putPri("rel", 1, "a")
		b := e.putPri("rel", 2, "b")
		e.reserveWant(e.q, a, "rel")
		e.ok("Release", e.q.Release(e.ctx, a, 3, 0))
		e.reserveWant(e.q, b, "rel")
		e.reserveWant(e.q, a, "rel")
	})
}

// testBury: buried jobs form a FIFO list per tube; Bury sets the priority
// and counts a bury; only the owner may bury.
func testBury(t *testing.T, s *suite) {
	e := s.env(t)
	var jobs []queue.ID
	for i := range 3 {
		jobs = append(jobs, e.putPri("bury", uint32(i), fmt.Sprint("job ", i)))
	}
	for range jobs {
		e.reserve(e.q, "bury")
	}
	order := []struct {
		id  queue.ID
		pri uint32
	}{{jobs[2], 100}, {jobs[0], 5000}, {jobs[1], 7}}
	for _, b := range order {
		e.ok("Bury", e.q.Bury(e.ctx, b.id, b.pri))
		js := e.statsJob(b.id)
		if js.State != queue.Buried || js.Priority != b.pri || js.Buries != 1 || js.TimeLeft != 0 {
			t.Errorf("job %d after Bury(pri %d): %+v", b.id, b.pri, js)
		}
	}
	if ts := e.statsTube("bury"); ts.Buried != 3 || ts.Reserved != 0 || ts.Urgent != 0 {
		t.Errorf("StatsTube: %+v, want 3 buried, none urgent", ts)
	}
	e.noReserve(e.q, "bury")
	for _, b := range order {
		j, err := e.q.PeekBuried(e.ctx, "bury")
		if err != nil || j.ID != b.id || j.Priority != b.pri {
			t.Fatalf("PeekBuried = job %d pri %d, %v; want job %d pri %d (buried first)", j.ID, j.Priority, err, b.id, b.pri)
		}
		if n, err := e.q.Kick(e.ctx, "bury", 1); err != nil || n != 1 {
			t.Fatalf("Kick(1) = %d, %v; want 1", n, err)
		}
		if js := e.statsJob(b.id); js.State != queue.Ready || js.Kicks != 1 || js.Priority != b.pri {
			t.Errorf("job %d after Kick: %+v, want ready with 1 kick and priority %d", b.id, js, b.pri)
		}
	}
	if _, err := e.q.PeekBuried(e.ctx, "bury"); !errors.Is(err, queue.ErrNotFound) {
		t.Errorf("PeekBuried with none buried: %v, want ErrNotFound", err)
	}
	// Kicked jobs are reserved by their new priority.
	for _, want := range []queue.ID{jobs[1], jobs[2], jobs[0]} {
		e.reserveWant(e.q, want, "bury")
	}

	id := e.reserved(e.q2, "bury", queue.NewJob{Body: []byte("theirs")})
	wantErr(t, "Bury of another owner's job", e.q.Bury(e.ctx, id, 0), queue.ErrNotReserved)
	ready := e.putPri("bury", 0, "ready")
	wantErr(t, "Bury of a ready job", e.q.Bury(e.ctx, ready, 0), queue.ErrNotReserved)
	wantErr(t, "Bury by the owner", e.q.Bury(e.ctx, jobs[0], 0), nil)
	wantErr(t, "Bury of a buried job", e.q.Bury(e.ctx, jobs[0], 0), queue.ErrNotReserved)
	wantErr(t, "Bury of an unknown job", e.q.Bury(e.ctx, e.unknownID(), 0), queue.ErrNotFound)
	if js := e.statsJob(id); js.State != queue.Reserved || js.Buries != 0 {
		t.Errorf("after another owner's Bury: %+v", js)
	}
	if js := e.statsJob(jobs[0]); js.Buries != 2 {
		t.Errorf("job buried twice: Buries = %d, want 2", js.Buries)
	}
}

// testKick: Kick takes buried jobs first, oldest first; only when there are
// none, delayed jobs, soonest first; at most n.
func testKick(t *testing.T, s *suite) {
	e := s.env(t)
	d30 := e.put("kick", queue.NewJob{Body: []byte("d30"), Delay: 30 * time.Second})
	d10 := e.put("kick", queue.NewJob{Body: []byte("d10"), Delay: 10 * time.Second})
	d20 := e.put("kick", queue.NewJob{Body: []byte("d20"), Delay: 20 * time.Second})
	b1 := e.buried(e.q, "kick", 1, "b1")
	b2 := e.buried(e.q, "kick", 1, "b2")
	b3 := e.buried(e.q, "kick", 1, "b3")

	kick := func(n, want int) {
		t.Helper()
		got, err := e.q.Kick(e.ctx, "kick", n)
		if err != nil || got != want {
			t.Fatalf("Kick(%d) = %d, %v; want %d", n, got, err, want)
		}
	}
	kick(2, 2)
	e.wantState(b1, queue.Ready)
	e.wantState(b2, queue.Ready)
	e.wantState(b3, queue.Buried)
	kick(10, 1) // buried ones only, although delayed jobs wait
	e.wantState(b3, queue.Ready)
	for _, id := range []queue.ID{d10, d20, d30} {
		e.wantState(id, queue.Delayed)
	}
	kick(1, 1)
	if js := e.statsJob(d10); js.State != queue.Ready || js.Kicks != 1 || js.TimeLeft != 0 {
		t.Errorf("kicked delayed job: %+v, want ready, 1 kick, no time left", js)
	}
	e.wantState(d20, queue.Delayed)
	kick(5, 2)
	e.wantState(d20, queue.Ready)
	e.wantState(d30, queue.Ready)
	kick(5, 0)
	for _, id := range []queue.ID{b1, b2, b3, d10, d20, d30} {
		if js := e.statsJob(id); js.Kicks != 1 {
			t.Errorf("job %d: Kicks = %d, want 1", id, js.Kicks)
		}
	}
	if n, err := e.q.Kick(e.ctx, "kick-unknown-tube", 3); err != nil || n != 0 {
		t.Errorf("Kick of a tube the store does not know = %d, %v; want 0, nil", n, err)
	}
	if n, err := e.q.Kick(e.ctx, "kick", 0); err != nil || n != 0 {
		t.Errorf("Kick(0) = %d, %v; want 0, nil", n, err)
	}

	// Delayed jobs that are due soonest go first; a kicked job keeps its priority.
	e2 := s.env(t)
	late := e2.put("kick2", queue.NewJob{Body: []byte("late"), Priority: 1, Delay: time.Hour})
	early := e2.put("kick2", queue.NewJob{Body: []byte("early"), Priority: 2, Delay: time.Minute})
	if n, err := e2.q.Kick(e2.ctx, "kick2", 1); err != nil || n != 1 {
		t.Fatalf("Kick(1) = %d, %v", n, err)
	}
	e2.wantState(early, queue.Ready)
	e2.wantState(late, queue.Delayed)
}

// testKickJob: KickJob moves one buried or delayed job to ready.
func testKickJob(t *testing.T, s *suite) {
	for _, c := range []struct {
		name  string
		setup func(e *env) queue.ID
		want  error
	}{
		{"buried", func(e *env) queue.ID { return e.buried(e.q, "kj", 3, "b") }, nil},
		{"delayed", func(e *env) queue.ID {
			return e.put("kj", queue.NewJob{Body: []byte("d"), Priority: 3, Delay: time.Hour})
		}, nil},
		{"buried in a paused tube", func(e *env) queue.ID {
			id := e.buried(e.q, "kj", 3, "b")
			e.ok("PauseTube", e.q.PauseTube(e.ctx, "kj", time.Hour))
			return id
		}, nil},
		{"ready", func(e *env) queue.ID { return e.putPri("kj", 3, "r") }, queue.ErrNotKickable},
		{"reserved", func(e *env) queue.ID { return e.reserved(e.q2, "kj", queue.NewJob{Body: []byte("x")}) }, queue.ErrNotKickable},
		{"unknown", func(e *env) queue.ID { return e.unknownID() }, queue.ErrNotFound},
		{"deleted", func(e *env) queue.ID { return e.deleted("kj") }, queue.ErrNotFound},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := s.env(t)
			id := c.setup(e)
			var before queue.JobStats
			if c.want != queue.ErrNotFound {
				before = e.statsJob(id)
			}
			wantErr(t, "KickJob", e.q.KickJob(e.ctx, id), c.want)
			if c.want == queue.ErrNotFound {
				return
			}
			after := e.statsJob(id)
			if c.want != nil {
				if diff := gocmp.Diff(before, after); diff != "" {
					t.Errorf("a failed KickJob changed the job (-before +after):\n%s", diff)
				}
				return
			}
			if after.State != queue.Ready || after.Kicks != before.Kicks+1 || after.TimeLeft != 0 || after.Priority != 3 {
				t.Errorf("after KickJob: %+v, want ready, priority 3, one more kick", after)
			}
		})
	}
}

// testReserveJob: reserve by ID works on ready, delayed and buried jobs,
// even in a paused tube, and not on reserved ones.
func testReserveJob(t *testing.T, s *suite) {
	for _, c := range []struct {
		name     string
		setup    func(e *env) queue.ID
		want     error
		reserves uint32 // of the reserved job, when want is nil
	}{
		{"ready", func(e *env) queue.ID { return e.putPri("rj", 2, "r") }, nil, 1},
		{"delayed", func(e *env) queue.ID {
			return e.put("rj", queue.NewJob{Body: []byte("d"), Priority: 2, Delay: time.Hour})
		}, nil, 1},
		{"buried", func(e *env) queue.ID { return e.buried(e.q2, "rj", 2, "b") }, nil, 2},
		{"ready in a paused tube", func(e *env) queue.ID {
			id := e.putPri("rj", 2, "p")
			e.ok("PauseTube", e.q.PauseTube(e.ctx, "rj", time.Hour))
			return id
		}, nil, 1},
		{"delayed in a paused tube", func(e *env) queue.ID {
			e.ok("PauseTube", e.q.PauseTube(e.ctx, "rj", time.Hour))
			return e.put("rj", queue.NewJob{Body: []byte("pd"), Priority: 2, Delay: time.Minute})
		}, nil, 1},
		{"reserved by another owner", func(e *env) queue.ID { return e.reserved(e.q2, "rj", queue.NewJob{Body: []byte("x")}) }, queue.ErrReserved, 0},
		{"reserved by the caller", func(e *env) queue.ID { return e.reserved(e.q, "rj", queue.NewJob{Body: []byte("x")}) }, queue.ErrReserved, 0},
		{"unknown", func(e *env) queue.ID { return e.unknownID() }, queue.ErrNotFound, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := s.env(t)
			id := c.setup(e)
			e.advance(time.Second)
			j, err := e.q.ReserveJob(e.ctx, id)
			wantErr(t, "ReserveJob", err, c.want)
			if c.want != nil {
				if c.want == queue.ErrReserved {
					if js := e.statsJob(id); js.State != queue.Reserved || js.Reserves != 1 {
						t.Errorf("after a failed ReserveJob: %+v, want reserved once", js)
					}
				}
				return
			}
			if j.ID != id || j.Tube != "rj" || j.Priority != 2 || j.Reserves != c.reserves {
				t.Errorf("ReserveJob = %+v, want job %d of rj, priority 2, Reserves %d", j, id, c.reserves)
			}
			if js := e.statsJob(id); js.State != queue.Reserved || js.TimeLeft != js.TTR {
				t.Errorf("after ReserveJob: %+v, want reserved with a full TTR left", js)
			}
			e.ok("Touch by the new owner", e.touch(e.q, id))
			wantErr(t, "Release by another owner", e.q2.Release(e.ctx, id, 0, 0), queue.ErrNotReserved)
			e.ok("Release by the new owner", e.q.Release(e.ctx, id, 2, 0))
		})
	}
}

// testDelete: Delete works on ready, delayed and buried jobs and on the
// caller's reserved jobs, and counts a delete in the tube.
func testDelete(t *testing.T, s *suite) {
	for _, c := range []struct {
		name  string
		setup func(e *env) queue.ID
		want  error
	}{
		{"ready", func(e *env) queue.ID { return e.putPri("del", 0, "r") }, nil},
		{"delayed", func(e *env) queue.ID { return e.put("del", queue.NewJob{Body: []byte("d"), Delay: time.Hour}) }, nil},
		{"buried", func(e *env) queue.ID { return e.buried(e.q2, "del", 0, "b") }, nil},
		{"reserved by the caller", func(e *env) queue.ID { return e.reserved(e.q, "del", queue.NewJob{Body: []byte("mine")}) }, nil},
		{"reserved by another owner", func(e *env) queue.ID { return e.reserved(e.q2, "del", queue.NewJob{Body: []byte("theirs")}) }, queue.ErrReserved},
		{"another owner's reservation expired", func(e *env) queue.ID {
			id := e.reserved(e.q2, "del", queue.NewJob{Body: []byte("expired"), TTR: time.Second})
			e.advance(time.Second)
			return id
		}, nil},
		{"ready in a paused tube", func(e *env) queue.ID {
			e.ok("PauseTube", e.q.PauseTube(e.ctx, "del", time.Hour))
			return e.putPri("del", 0, "p")
		}, nil},
		{"unknown", func(e *env) queue.ID { return e.unknownID() }, queue.ErrNotFound},
		{"deleted", func(e *env) queue.ID { return e.deleted("del") }, queue.ErrNotFound},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := s.env(t)
			keep := e.put("del", queue.NewJob{Body: []byte("keeps the tube"), Delay: 24 * time.Hour})
			id := c.setup(e)
			before := e.statsTube("del")
			wantErr(t, "Delete", e.q.Delete(e.ctx, id), c.want)
			after := e.statsTube("del")
			switch c.want {
			case nil:
				e.wantGone(id)
				if after.Deletes != before.Deletes+1 {
					t.Errorf("tube Deletes went from %d to %d, want one more", before.Deletes, after.Deletes)
				}
			case queue.ErrReserved:
				if js := e.statsJob(id); js.State != queue.Reserved {
					t.Errorf("after a refused Delete: %v, want reserved", js.State)
				}
				e.ok("Delete by the owner", e.q2.Delete(e.ctx, id))
				fallthrough
			default:
				if diff := gocmp.Diff(before, after); diff != "" {
					t.Errorf("a failed Delete changed StatsTube (-before +after):\n%s", diff)
				}
			}
			e.wantState(keep, queue.Delayed)
		})
	}
}

// testDeleteMany: one outcome per ID.
func testDeleteMany(t *testing.T, s *suite) {
	e := s.env(t)
	ready := e.putPri("dm", 0, "ready")
	delayed := e.put("dm", queue.NewJob{Body: []byte("delayed"), Delay: time.Minute})
	buried := e.buried(e.q2, "dm", 0, "buried")
	mine := e.reserved(e.q, "dm", queue.NewJob{Body: []byte("mine")})
	theirs := e.reserved(e.q2, "dm", queue.NewJob{Body: []byte("theirs")})
	other := e.putPri("dm-other", 0, "other tube")
	unknown := e.unknownID()
	idsIn := []queue.ID{ready, unknown, theirs, mine, delayed, buried, other}
	want := []error{nil, queue.ErrNotFound, queue.ErrReserved, nil, nil, nil, nil}
	errs, err := e.q.DeleteMany(e.ctx, idsIn)
	e.ok("DeleteMany", err)
	if !errsMatch(errs, want) {
		t.Errorf("DeleteMany(%v) = %v, want %v", idsIn, errs, want)
	}
	for i, id := range idsIn {
		if want[i] == nil {
			e.wantGone(id)
		}
	}
	e.wantState(theirs, queue.Reserved)
	if ts := e.statsTube("dm"); ts.Deletes != 4 || ts.Reserved != 1 {
		t.Errorf("StatsTube(dm): %+v, want 4 deletes and 1 reserved", ts)
	}
	errs, err = e.q.DeleteMany(e.ctx, []queue.ID{ready, theirs})
	e.ok("DeleteMany again", err)
	if !errsMatch(errs, []error{queue.ErrNotFound, queue.ErrReserved}) {
		t.Errorf("DeleteMany of a deleted and a foreign job = %v", errs)
	}
}

// testPeekByID: Peek finds a job in every state without changing it.
func testPeekByID(t *testing.T, s *suite) {
	for _, c := range []struct {
		name     string
		setup    func(e *env) queue.ID
		state    queue.State
		reserves uint32
	}{
		{"ready", func(e *env) queue.ID { return e.putPri("peek", 9, "body") }, queue.Ready, 0},
		{"delayed", func(e *env) queue.ID {
			return e.put("peek", queue.NewJob{Body: []byte("body"), Priority: 9, Delay: time.Minute})
		}, queue.Delayed, 0},
		{"reserved", func(e *env) queue.ID {
			return e.reserved(e.q2, "peek", queue.NewJob{Body: []byte("body"), Priority: 9})
		}, queue.Reserved, 1},
		{"buried", func(e *env) queue.ID { return e.buried(e.q2, "peek", 9, "body") }, queue.Buried, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := s.env(t)
			id := c.setup(e)
			before := e.statsJob(id)
			want := queue.Job{ID: id, Tube: "peek", Priority: 9, TTR: queue.DefaultTTR, Reserves: c.reserves, Body: []byte("body")}
			e.wantPeek(id, want)
			e.wantPeek(id, want)
			if diff := gocmp.Diff(before, e.statsJob(id)); diff != "" {
				t.Errorf("Peek changed the job (-before +after):\n%s", diff)
			}
			if before.State != c.state {
				t.Errorf("state %v, want %v", before.State, c.state)
			}
		})
	}
	t.Run("unknown", func(t *testing.T) {
		e := s.env(t)
		if j, err := e.q.Peek(e.ctx, e.unknownID()); !errors.Is(err, queue.ErrNotFound) {
			t.Errorf("Peek of an unknown ID = %+v, %v; want ErrNotFound", j, err)
		}
	})
}

// testPeekState: PeekReady, PeekDelayed and PeekBuried, and ErrNotFound when
// the tube has no job in that state.
func testPeekState(t *testing.T, s *suite) {
	e := s.env(t)
	peeks := []struct {
		name string
		fn   func(tube string) (queue.Job, error)
	}{
		{"PeekReady", func(tube string) (queue.Job, error) { return e.q.PeekReady(e.ctx, tube) }},
		{"PeekDelayed", func(tube string) (queue.Job, error) { return e.q.PeekDelayed(e.ctx, tube) }},
		{"PeekBuried", func(tube string) (queue.Job, error) { return e.q.PeekBuried(e.ctx, tube) }},
	}
	none := func(tube, why string) {
		t.Helper()
		for _, p := range peeks {
			if j, err := p.fn(tube); !errors.Is(err, queue.ErrNotFound) {
				t.Errorf("%s(%q) %s = job %d, %v; want ErrNotFound", p.name, tube, why, j.ID, err)
			}
		}
	}
	none("ps-unknown", "of an unknown tube")
	e.reserved(e.q, "ps", queue.NewJob{Body: []byte("reserved")})
	none("ps", "with only a reserved job")

	e.putPri("ps", 5, "r1")
	r2 := e.putPri("ps", 3, "r2")
	e.putPri("ps", 3, "r3")
	e.put("ps", queue.NewJob{Body: []byte("d1"), Delay: 20 * time.Second})
	d2 := e.put("ps", queue.NewJob{Body: []byte("d2"), Priority: 8, Delay: 10 * time.Second})
	b1 := e.buried(e.q, "ps", 9, "b1")
	e.buried(e.q, "ps", 0, "b2")

	check := func(name string, fn func(string) (queue.Job, error), want queue.Job) {
		t.Helper()
		got, err := fn("ps")
		if err != nil {
			t.Errorf("%s: %v", name, err)
			return
		}
		wantJob(t, name, got, want)
	}
	check("PeekReady", peeks[0].fn, queue.Job{ID: r2, Tube: "ps", Priority: 3, TTR: queue.DefaultTTR, Body: []byte("r2")})
	check("PeekDelayed", peeks[1].fn, queue.Job{ID: d2, Tube: "ps", Priority: 8, TTR: queue.DefaultTTR, Body: []byte("d2")})
	check("PeekBuried", peeks[2].fn, queue.Job{ID: b1, Tube: "ps", Priority: 9, TTR: queue.DefaultTTR, Reserves: 1, Body: []byte("b1")})
	// Peeking reserves nothing.
	e.wantState(r2, queue.Ready)
	e.reserveWant(e.q2, r2, "ps")
	none("ps-other", "of a tube with no jobs while another tube has some")
}

// testPeekStateN: PeekStateN lists the next jobs of a state in PeekState's
// order (reserved ones by the end of their TTR), stops at n, gives an
// empty list for none, and refuses bad input.
func testPeekStateN(t *testing.T, s *suite) {
	e := s.env(t)
	ids := func(jobs []queue.Job) []queue.ID {
		out := []queue.ID{}
		for _, j := range jobs {
			out = append(out, j.ID)
		}
		return out
	}
	list := func(st queue.State, n int) []queue.ID {
		t.Helper()
		jobs, err := e.q.PeekStateN(e.ctx, "psn", st, n)
		e.ok("PeekStateN", err)
		return ids(jobs)
	}
	want := func(name string, got, want []queue.ID) {
		t.Helper()
		if diff := gocmp.Diff(want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}
	want("ready of an unknown tube", list(queue.Ready, 5), []queue.ID{})
	r5 := e.putPri("psn", 5, "r5")
	r3a := e.putPri("psn", 3, "r3a")
	r3b := e.putPri("psn", 3, "r3b")
	r1 := e.putPri("psn", 1, "r1")
	d30 := e.put("psn", queue.NewJob{Body: []byte("d30"), Delay: 30 * time.Second})
	d10 := e.put("psn", queue.NewJob{Body: []byte("d10"), Priority: 9, Delay: 10 * time.Second})
	d20 := e.put("psn", queue.NewJob{Body: []byte("d20"), Delay: 20 * time.Second})
	b1 := e.buried(e.q, "psn", 9, "b1")
	b2 := e.buried(e.q, "psn", 0, "b2")
	x30 := e.reserved(e.q, "psn", queue.NewJob{Body: []byte("x30"), TTR: 30 * time.Second})
	x10 := e.reserved(e.q, "psn", queue.NewJob{Body: []byte("x10"), TTR: 10 * time.Second})
	x20 := e.reserved(e.q, "psn", queue.NewJob{Body: []byte("x20"), TTR: 20 * time.Second})

	want("ready, all", list(queue.Ready, 10), []queue.ID{r1, r3a, r3b, r5})
	want("ready, first 2", list(queue.Ready, 2), []queue.ID{r1, r3a})
	want("delayed", list(queue.Delayed, 10), []queue.ID{d10, d20, d30})
	want("buried", list(queue.Buried, 10), []queue.ID{b1, b2})
	want("reserved, by the end of their TTR", list(queue.Reserved, 10), []queue.ID{x10, x20, x30})
	jobs, err := e.q.PeekStateN(e.ctx, "psn", queue.Delayed, 1)
	e.ok("PeekStateN", err)
	if len(jobs) == 1 {
		wantJob(t, "PeekStateN's job", jobs[0], queue.Job{ID: d10, Tube: "psn", Priority: 9, TTR: queue.DefaultTTR, Body: []byte("d10")})
	}
	for _, c := range []struct {
		name  string
		state queue.State
		n     int
	}{{"state 0", 0, 1}, {"state 5", 5, 1}, {"n=0", queue.Ready, 0}, {"n too large", queue.Ready, queue.MaxPeekN + 1}} {
		if _, err := e.q.PeekStateN(e.ctx, "psn", c.state, c.n); !errors.Is(err, queue.ErrInvalid) {
			t.Errorf("PeekStateN %s: %v, want ErrInvalid", c.name, err)
		}
	}
	e.wantState(r1, queue.Ready)
}

// testAbandon: Queue.Abandon returns the owner's reserved jobs to ready
// without counting releases or timeouts.
func testAbandon(t *testing.T, s *suite) {
	e := s.env(t)
	a := e.putPri("ab", 1, "a")
	b := e.putPri("ab", 2, "b")
	c := e.putPri("ab-2", 3, "c")
	x := e.put("ab", queue.NewJob{Body: []byte("expires"), Priority: 4, TTR: time.Second})
	theirs := e.reserved(e.q2, "ab", queue.NewJob{Body: []byte("theirs")})
	e.reserveWant(e.q, a, "ab")
	e.reserveWant(e.q, b, "ab")
	e.reserveJob(e.q, c)
	e.reserveJob(e.q, x)
	e.advance(time.Second) // x times out and goes to q2
	e.reserveWant(e.q2, x, "ab")

	n, err := e.q.Abandon(e.ctx)
	e.ok("Abandon", err)
	if n != 3 {
		t.Errorf("Abandon = %d, want 3 (a, b and c; x went to another owner)", n)
	}
	for _, id := range []queue.ID{a, b, c} {
		js := e.statsJob(id)
		if js.State != queue.Ready || js.Releases != 0 || js.Timeouts != 0 || js.Reserves != 1 {
			t.Errorf("job %d after Abandon: %+v, want ready, reserved once, no release, no timeout", id, js)
		}
	}
	e.wantState(theirs, queue.Reserved)
	e.wantState(x, queue.Reserved)
	if st := e.stats(); st.Timeouts != 1 {
		t.Errorf("Stats.Timeouts = %d, want 1 (x's only)", st.Timeouts)
	}
	if held, err := e.q.Held(e.ctx); err != nil || len(held) != 0 {
		t.Errorf("Held after Abandon = %v, %v", held, err)
	}
	if n, err := e.q.Abandon(e.ctx); err != nil || n != 0 {
		t.Errorf("second Abandon = %d, %v; want 0", n, err)
	}
	// Abandoned jobs keep their place.
	e.reserveWant(e.q, a, "ab", "ab-2")
}

// testUnreserve: Store.Unreserve returns only the jobs the owner holds.
func testUnreserve(t *testing.T, s *suite) {
	e := s.env(t)
	owner := e.q.Owner()
	mine := e.reserved(e.q, "un", queue.NewJob{Body: []byte("mine"), Priority: 5})
	theirs := e.reserved(e.q2, "un", queue.NewJob{Body: []byte("theirs")})
	ready := e.putPri("un", 0, "ready")
	buried := e.buried(e.q, "un", 0, "buried")
	delayed := e.put("un", queue.NewJob{Body: []byte("delayed"), Delay: time.Minute})
	n, err := e.store.Unreserve(e.ctx, owner, []queue.ID{mine, theirs, ready, buried, delayed, e.unknownID()})
	e.ok("Unreserve", err)
	if n != 1 {
		t.Errorf("Unreserve = %d, want 1", n)
	}
	want := map[queue.ID]queue.State{mine: queue.Ready, theirs: queue.Reserved, ready: queue.Ready, buried: queue.Buried, delayed: queue.Delayed}
	for id, st := range want {
		e.wantState(id, st)
	}
	if js := e.statsJob(mine); js.Releases != 0 || js.Timeouts != 0 || js.Priority != 5 || js.Reserves != 1 {
		t.Errorf("unreserved job: %+v, want priority 5, no release, no timeout", js)
	}
	if n, err := e.store.Unreserve(e.ctx, owner, []queue.ID{mine}); err != nil || n != 0 {
		t.Errorf("Unreserve of a ready job = %d, %v; want 0", n, err)
	}
}
