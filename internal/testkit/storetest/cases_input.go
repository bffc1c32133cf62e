package storetest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/hourglass-io/hourglass/queue"
)

// snapshot is everything the store reports about the jobs and tubes a case
// made, for checking that an operation changed nothing.
type snapshot struct {
	Stats     queue.Stats
	Tubes     []string
	TubeStats map[string]queue.TubeStats
	Jobs      map[queue.ID]queue.JobStats
	Bodies    map[queue.ID]string
}

func (e *env) snapshot() snapshot {
	e.t.Helper()
	ctx := context.Background()
	ids, tubes := e.rec.known()
	s := snapshot{TubeStats: map[string]queue.TubeStats{}, Jobs: map[queue.ID]queue.JobStats{}, Bodies: map[queue.ID]string{}}
	var err error
	if s.Stats, err = e.raw.Stats(ctx); err != nil {
		e.t.Fatalf("snapshot: Stats: %v", err)
	}
	if s.Tubes, err = e.raw.Tubes(ctx); err != nil {
		e.t.Fatalf("snapshot: Tubes: %v", err)
	}
	for _, name := range append(tubes, s.Tubes...) {
		ts, err := e.raw.StatsTube(ctx, name)
		if err == nil {
			s.TubeStats[name] = ts
		} else if !errors.Is(err, queue.ErrNotFound) {
			e.t.Fatalf("snapshot: StatsTube(%q): %v", name, err)
		}
	}
	for _, id := range ids {
		js, err := e.raw.StatsJob(ctx, id)
		if errors.Is(err, queue.ErrNotFound) {
			continue
		}
		if err != nil {
			e.t.Fatalf("snapshot: StatsJob(%d): %v", id, err)
		}
		s.Jobs[id] = js
		s.Bodies[id] = string(js.Body)
	}
	return s
}

// fixture is what each bad-input case starts with: a job in every state.
type fixture struct {
	ready, held, buried, delayed queue.ID
}

// testBadInput: invalid arguments given to the Queue return the typed
// error, and the store is left as it was.
func testBadInput(t *testing.T, s *suite) {
	job := queue.NewJob{Body: []byte("x")}
	with := func(f func(*queue.NewJob)) queue.NewJob {
		j := queue.NewJob{Body: []byte("x")}
		f(&j)
		return j
	}
	put := func(tube string, j queue.NewJob) func(e *env, f fixture) error {
		return func(e *env, _ fixture) error { _, err := e.q.Put(e.ctx, tube, j); return err }
	}
	type row struct {
		name string
		call func(e *env, f fixture) error
		want error
	}
	rows := []row{
		{"Put empty tube", put("", job), queue.ErrInvalidTube},
		{"Put 201-byte tube", put(strings.Repeat("t", queue.MaxTubeName+1), job), queue.ErrInvalidTube},
		{"Put tube starting with -", put("-bi", job), queue.ErrInvalidTube},
		{"Put tube with a space", put("b i", job), queue.ErrInvalidTube},
		{"Put tube with *", put("bi*", job), queue.ErrInvalidTube},
		{"Put tube with a newline", put("bi\n", job), queue.ErrInvalidTube},
		{"Put tube with a NUL", put("bi\x00", job), queue.ErrInvalidTube},
		{"Put tube with non-ASCII", put("tübe", job), queue.ErrInvalidTube},
		{"Put negative delay", put("bi", with(func(j *queue.NewJob) { j.Delay = -time.Second })), queue.ErrInvalid},
		{"Put delay over MaxDuration", put("bi", with(func(j *queue.NewJob) { j.Delay = queue.MaxDuration + time.Second })), queue.ErrInvalid},
		{"Put TTR 500ms", put("bi", with(func(j *queue.NewJob) { j.TTR = 500 * time.Millisecond })), queue.ErrInvalid},
		{"Put negative TTR", put("bi", with(func(j *queue.NewJob) { j.TTR = -time.Second })), queue.ErrInvalid},
		{"Put TTR over MaxDuration", put("bi", with(func(j *queue.NewJob) { j.TTR = queue.MaxDuration + time.Second })), queue.ErrInvalid},
		{"Put body over MaxJobSize", func(e *env, _ fixture) error {
			_, err := e.q.Put(e.ctx, "bi", queue.NewJob{Body: make([]byte, e.q.MaxJobSize()+1)})
			return err
		}, queue.ErrJobTooBig},
		{"Put UniqueKey over 1024 bytes", put("bi", with(func(j *queue.NewJob) { j.UniqueKey = strings.Repeat("k", 1025) })), queue.ErrInvalid},
		{"PutMany no jobs", func(e *env, _ fixture) error { _, err := e.q.PutMany(e.ctx, "bi", nil); return err }, queue.ErrInvalid},
		{"PutMany one body too big", func(e *env, _ fixture) error {
			_, err := e.q.PutMany(e.ctx, "bi", []queue.NewJob{job, {Body: make([]byte, e.q.MaxJobSize()+1)}, job})
			return err
		}, queue.ErrJobTooBig},
		{"PutMany one bad TTR", func(e *env, _ fixture) error {
			_, err := e.q.PutMany(e.ctx, "bi-new", []queue.NewJob{job, job, {Body: []byte("y"), TTR: time.Millisecond}})
			return err
		}, queue.ErrInvalid},
		{"Reserve bad tube", func(e *env, _ fixture) error {
			_, err := e.q.Reserve(e.ctx, queue.ReserveOptions{Tubes: []string{"bi", "-bad"}, Timeout: -1})
			return err
		}, queue.ErrInvalidTube},
		{"ReserveN 0", func(e *env, _ fixture) error {
			_, err := e.q.ReserveN(e.ctx, 0, queue.ReserveOptions{Tubes: []string{"bi"}, Timeout: -1})
			return err
		}, queue.ErrInvalid},
		{"ReserveN 1001", func(e *env, _ fixture) error {
			_, err := e.q.ReserveN(e.ctx, 1001, queue.ReserveOptions{Tubes: []string{"bi"}, Timeout: -1})
			return err
		}, queue.ErrInvalid},
		{"Release negative delay", func(e *env, f fixture) error { return e.q.Release(e.ctx, f.held, 0, -time.Second) }, queue.ErrInvalid},
		{"Release delay over MaxDuration", func(e *env, f fixture) error {
			return e.q.Release(e.ctx, f.held, 0, queue.MaxDuration+time.Second)
		}, queue.ErrInvalid},
		{"Kick negative n", func(e *env, _ fixture) error { _, err := e.q.Kick(e.ctx, "bi", -1); return err }, queue.ErrInvalid},
		{"Kick bad tube", func(e *env, _ fixture) error { _, err := e.q.Kick(e.ctx, "bi?", 1); return err }, queue.ErrInvalidTube},
		{"PauseTube negative", func(e *env, _ fixture) error { return e.q.PauseTube(e.ctx, "bi", -time.Second) }, queue.ErrInvalid},
		{"PauseTube over MaxDuration", func(e *env, _ fixture) error {
			return e.q.PauseTube(e.ctx, "bi", queue.MaxDuration+time.Second)
		}, queue.ErrInvalid},
		{"PauseTube bad tube", func(e *env, _ fixture) error { return e.q.PauseTube(e.ctx, "", time.Second) }, queue.ErrInvalidTube},
		{"Hold bad tube", func(e *env, _ fixture) error { return e.q.Hold(e.ctx, "-bi", 1) }, queue.ErrInvalidTube},
		{"Hold 0", func(e *env, _ fixture) error { return e.q.Hold(e.ctx, "bi", 0) }, queue.ErrInvalid},
		{"StatsTube bad tube", func(e *env, _ fixture) error { _, err := e.q.StatsTube(e.ctx, "-bi"); return err }, queue.ErrInvalidTube},
		{"PeekReady bad tube", func(e *env, _ fixture) error { _, err := e.q.PeekReady(e.ctx, "b i"); return err }, queue.ErrInvalidTube},
		{"PeekDelayed bad tube", func(e *env, _ fixture) error { _, err := e.q.PeekDelayed(e.ctx, ""); return err }, queue.ErrInvalidTube},
		{"PeekBuried bad tube", func(e *env, _ fixture) error {
			_, err := e.q.PeekBuried(e.ctx, strings.Repeat("t", 201))
			return err
		}, queue.ErrInvalidTube},
	}
	byID := []struct {
		name string
		call func(e *env, id queue.ID) error
	}{
		{"ReserveJob", func(e *env, id queue.ID) error { _, err := e.q.ReserveJob(e.ctx, id); return err }},
		{"Delete", func(e *env, id queue.ID) error { return e.q.Delete(e.ctx, id) }},
		{"Release", func(e *env, id queue.ID) error { return e.q.Release(e.ctx, id, 0, 0) }},
		{"Bury", func(e *env, id queue.ID) error { return e.q.Bury(e.ctx, id, 0) }},
		{"Touch", func(e *env, id queue.ID) error { _, err := e.q.Touch(e.ctx, id); return err }},
		{"KickJob", func(e *env, id queue.ID) error { return e.q.KickJob(e.ctx, id) }},
		{"Peek", func(e *env, id queue.ID) error { _, err := e.q.Peek(e.ctx, id); return err }},
		{"StatsJob", func(e *env, id queue.ID) error { _, err := e.q.StatsJob(e.ctx, id); return err }},
	}
	for _, op := range byID {
		for _, which := range []struct {
			name string
			id   func(e *env) queue.ID
		}{
			{"id 0", func(*env) queue.ID { return 0 }},
			{"unknown id", func(e *env) queue.ID { return e.unknownID() }},
			{"id above MaxID", func(*env) queue.ID { return queue.MaxID + 1 }},
		} {
			rows = append(rows, row{op.name + " " + which.name, func(e *env, _ fixture) error {
				return op.call(e, which.id(e))
			}, queue.ErrNotFound})
		}
	}

	for _, tc := range traceContextInput {
		rows = append(rows, row{"Put trace context " + tc, func(e *env, _ fixture) error {
			_, err := e.q.PutMany(e.ctx, "bi", []queue.NewJob{job, {Body: []byte("y"), TraceContext: tc}})
			return err
		}, queue.ErrInvalid})
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			e := s.env(t)
			f := fixture{
				ready:   e.putPri("bi", 1, "ready"),
				held:    e.reserved(e.q, "bi", queue.NewJob{Body: []byte("held")}),
				buried:  e.buried(e.q, "bi", 2, "buried"),
				delayed: e.put("bi", queue.NewJob{Body: []byte("delayed"), Delay: time.Minute}),
			}
			before := e.snapshot()
			err := r.call(e, f)
			if !errors.Is(err, r.want) {
				t.Errorf("got error %v, want %v", err, r.want)
			}
			if diff := gocmp.Diff(before, e.snapshot()); diff != "" {
				t.Errorf("the refused call changed the store (-before +after):\n%s", diff)
			}
			e.wantState(f.held, queue.Reserved)
			e.ok("Release of the held job", e.q.Release(e.ctx, f.held, 0, 0))
		})
	}
}

// testTubeNames: every name ValidTube accepts works as a tube.
func testTubeNames(t *testing.T, s *suite) {
	e := s.env(t)
	names := []string{
		"a",
		strings.Repeat("n", queue.MaxTubeName),
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
		"x-+/;.$_()",
		"a-",
		"()",
		"$",
		"a/b/c",
		"a;b",
		"default",
	}
	pri := map[queue.ID]uint32{}
	for i, name := range names {
		if !queue.ValidTube(name) {
			t.Fatalf("test bug: %q is not a valid tube name", name)
		}
		pri[e.putPri(name, uint32(i), name)] = uint32(i)
		e.advance(time.Millisecond) // creation order is by the store's clock
	}
	if diff := gocmp.Diff(names, e.tubes()); diff != "" {
		t.Errorf("Tubes (-want +got):\n%s", diff)
	}
	for _, name := range names {
		ts := e.statsTube(name)
		if ts.Name != name || ts.Ready != 1 {
			t.Errorf("StatsTube(%q) = %+v", name, ts)
		}
		j := e.reserve(e.q, name)
		if j.Tube != name || string(j.Body) != name {
			t.Errorf("Reserve(%q) = job of tube %q with body %q", name, j.Tube, j.Body)
		}
	}
}

// testClose: every method of a closed store returns ErrClosed.
func testClose(t *testing.T, s *suite) {
	e := s.env(t)
	id := e.putPri("cl", 0, "x")
	e.skipInvariants = true
	e.ok("Close", e.raw.Close())
	ctx := e.ctx
	st := e.raw
	calls := []struct {
		name string
		call func() error
	}{
		{"Put", func() error {
			_, err := st.Put(ctx, "cl", []queue.NewJob{{Body: []byte("y"), TTR: time.Minute}})
			return err
		}},
		{"Reserve", func() error {
			_, err := st.Reserve(ctx, queue.ReserveRequest{Owner: "o", Tubes: []string{"cl"}, Max: 1})
			return err
		}},
		{"ReserveJob", func() error { _, err := st.ReserveJob(ctx, "o", id); return err }},
		{"Delete", func() error { _, err := st.Delete(ctx, "o", []queue.ID{id}); return err }},
		{"Release", func() error { return st.Release(ctx, "o", id, 0, 0, "") }},
		{"Bury", func() error { return st.Bury(ctx, "o", id, 0, "") }},
		{"Touch", func() error { _, err := st.Touch(ctx, "o", id); return err }},
		{"Reservations", func() error { _, err := st.Reservations(ctx, "o"); return err }},
		{"Unreserve", func() error { _, err := st.Unreserve(ctx, "o", []queue.ID{id}); return err }},
		{"Kick", func() error { _, err := st.Kick(ctx, "cl", 1); return err }},
		{"KickJob", func() error { return st.KickJob(ctx, id) }},
		{"PeekStateN", func() error { _, err := st.PeekStateN(ctx, "cl", queue.Ready, 1); return err }},
		{"StatsJob", func() error { _, err := st.StatsJob(ctx, id); return err }},
		{"StatsTube", func() error { _, err := st.StatsTube(ctx, "cl"); return err }},
		{"Stats", func() error { _, err := st.Stats(ctx); return err }},
		{"PauseTube", func() error { return st.PauseTube(ctx, "cl", time.Second) }},
		{"Tubes", func() error { _, err := st.Tubes(ctx); return err }},
		{"Hold", func() error { return st.Hold(ctx, "o", "cl", 1) }},
	}
	if n, ok := st.(queue.Notifier); ok {
		calls = append(calls, struct {
			name string
			call func() error
		}{"Listen", func() error { _, err := n.Listen(ctx, "cl", func(string) {}); return err }})
	}
	for _, c := range calls {
		if err := c.call(); !errors.Is(err, queue.ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", c.name, err)
		}
	}
}
