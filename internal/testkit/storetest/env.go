package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/hourglass-io/hourglass/queue"
)

// epoch is where every store's clock starts: a whole second, so that stores
// that keep milliseconds lose nothing.
var epoch = time.Date(2030, time.January, 2, 3, 4, 5, 0, time.UTC)

// otherOwner names the second owner of every environment.
const otherOwner = "storetest-other-owner"

// env is one fresh store with its clock and the queues over it.
type env struct {
	t     *testing.T
	ctx   context.Context
	clock *Clock
	raw   queue.Store  // what newStore returned
	rec   *recorder    // records the jobs and tubes the case makes
	store queue.Store  // rec, with Listen when raw is a Notifier
	q     *queue.Queue // on clock, with a random owner
	q2    *queue.Queue // q.WithOwner(otherOwner)

	skipInvariants bool // the case closed the store
}

// env makes a fresh store and the queues over it, and arranges for the
// invariant check to run when t ends.
func (s *suite) env(t *testing.T) *env {
	t.Helper()
	clock := NewClock(epoch)
	raw := s.newStore(t, clock.Now)
	if raw == nil {
		t.Fatal("NewQueueStore returned a nil store")
	}
	rec := &recorder{passOn: passOn{raw}, ids: map[queue.ID]bool{}, tubes: map[string]bool{}, holds: map[holdKey]int{}}
	var store queue.Store = rec
	if n, ok := raw.(queue.Notifier); ok {
		store = recNotifying{rec, n}
	}
	q, err := queue.New(store, &queue.Options{Clock: clock})
	if err != nil {
		t.Fatalf("queue.New: %v", err)
	}
	e := &env{
		t:     t,
		ctx:   t.Context(),
		clock: clock,
		raw:   raw,
		rec:   rec,
		store: store,
		q:     q,
		q2:    q.WithOwner(otherOwner),
	}
	// Registered after newStore's cleanup, so it runs before the store closes.
	t.Cleanup(func() {
		q.Close()
		if !e.skipInvariants {
			e.checkInvariants()
		}
	})
	return e
}

// recorder remembers the IDs of the jobs put through it and the tubes that
// were named in a put or a pause, for the invariant check.
type recorder struct {
	passOn

	mu        sync.Mutex
	ids       map[queue.ID]bool
	idOrder   []queue.ID
	tubes     map[string]bool
	tubeOrder []string
	holds     map[holdKey]int // references held through Hold, by session and tube
}

type holdKey struct{ session, tube string }

func (r *recorder) Hold(ctx context.Context, owner, tube string, n int) error {
	err := r.Store.Hold(ctx, owner, tube, n)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.noteTubeLocked(tube)
	if err == nil {
		k := holdKey{queue.SessionOf(owner), tube}
		r.holds[k] = max(r.holds[k]+n, 0)
	}
	return err
}

// forgetSession drops the references of session, which the store took back
// (EndSession, Reap).
func (r *recorder) forgetSession(session string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k := range r.holds {
		if k.session == session {
			delete(r.holds, k)
		}
	}
}

// held returns the references held to each tube.
func (r *recorder) held() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]int{}
	for k, n := range r.holds {
		out[k.tube] += n
	}
	return out
}

func (r *recorder) Put(ctx context.Context, tube string, jobs []queue.NewJob) ([]queue.PutResult, error) {
	res, err := r.Store.Put(ctx, tube, jobs)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.noteTubeLocked(tube)
	for _, p := range res {
		if !r.ids[p.ID] {
			r.ids[p.ID] = true
			r.idOrder = append(r.idOrder, p.ID)
		}
	}
	return res, err
}

func (r *recorder) PauseTube(ctx context.Context, tube string, d time.Duration) error {
	r.mu.Lock()
	r.noteTubeLocked(tube)
	r.mu.Unlock()
	return r.Store.PauseTube(ctx, tube, d)
}

func (r *recorder) noteTubeLocked(tube string) {
	if !r.tubes[tube] {
		r.tubes[tube] = true
		r.tubeOrder = append(r.tubeOrder, tube)
	}
}

// known returns the recorded IDs and tubes.
func (r *recorder) known() ([]queue.ID, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.idOrder), slices.Clone(r.tubeOrder)
}

// notifying adds inner's Listen to a wrapping store, so that a Queue over
// the wrapper still gets wake-ups from the store.
type notifying struct {
	passOn
	n queue.Notifier
}

// passOn is a wrapping store that passes the optional abilities a Queue
// finds by a type assertion, cancels (queue.CancelStore) and tube limits
// (queue.LimitStore), through to the store it wraps, or reports that the
// store has none (queue.ErrNoCancel, queue.ErrNoLimits).
type passOn struct {
	queue.Store
}

func (p passOn) Cancel(ctx context.Context, id queue.ID, reason string) (queue.State, error) {
	cs, ok := p.Store.(queue.CancelStore)
	if !ok {
		return 0, queue.ErrNoCancel
	}
	return cs.Cancel(ctx, id, reason)
}

func (p passOn) ListenCancel(ctx context.Context, tube string, f func(queue.ID, string)) (func(), error) {
	cs, ok := p.Store.(queue.CancelStore)
	if !ok {
		return nil, queue.ErrNoCancel
	}
	return cs.ListenCancel(ctx, tube, f)
}

func (p passOn) SetLimits(ctx context.Context, tube string, l queue.Limits) error {
	ls, ok := p.Store.(queue.LimitStore)
	if !ok {
		return queue.ErrNoLimits
	}
	return ls.SetLimits(ctx, tube, l)
}

func (p passOn) TubeLimits(ctx context.Context, tube string) (queue.Limits, error) {
	ls, ok := p.Store.(queue.LimitStore)
	if !ok {
		return queue.Limits{}, queue.ErrNoLimits
	}
	return ls.TubeLimits(ctx, tube)
}

func (p passOn) LimitedTubes(ctx context.Context) (map[string]queue.Limits, error) {
	ls, ok := p.Store.(queue.LimitStore)
	if !ok {
		return nil, queue.ErrNoLimits
	}
	return ls.LimitedTubes(ctx)
}

func (x notifying) Listen(ctx context.Context, tube string, wake func(tube string)) (func(), error) {
	return x.n.Listen(ctx, tube, wake)
}

// recNotifying is a recorder with the Listen of the store it wraps.
type recNotifying struct {
	*recorder
	n queue.Notifier
}

func (x recNotifying) Listen(ctx context.Context, tube string, wake func(tube string)) (func(), error) {
	return x.n.Listen(ctx, tube, wake)
}

// The recorder passes on the methods of queue.KeepStore, which a Queue
// over it finds by a type assertion (queue.ErrNoKeep when the store has
// none).
func (r *recorder) keep() (queue.KeepStore, error) {
	if ks, ok := r.Store.(queue.KeepStore); ok {
		return ks, nil
	}
	return nil, queue.ErrNoKeep
}

func (r *recorder) SetRetention(ctx context.Context, tube string, d time.Duration) error {
	ks, err := r.keep()
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.noteTubeLocked(tube)
	r.mu.Unlock()
	return ks.SetRetention(ctx, tube, d)
}

func (r *recorder) Retention(ctx context.Context, tube string) (time.Duration, error) {
	ks, err := r.keep()
	if err != nil {
		return 0, err
	}
	return ks.Retention(ctx, tube)
}

func (r *recorder) Finish(ctx context.Context, owner string, id queue.ID, result []byte) error {
	ks, err := r.keep()
	if err != nil {
		return err
	}
	return ks.Finish(ctx, owner, id, result)
}

func (r *recorder) Lookup(ctx context.Context, id queue.ID) (queue.JobStats, error) {
	ks, err := r.keep()
	if err != nil {
		return queue.JobStats{}, err
	}
	return ks.Lookup(ctx, id)
}

func (r *recorder) LookupKey(ctx context.Context, tube, key string) (queue.JobStats, error) {
	ks, err := r.keep()
	if err != nil {
		return queue.JobStats{}, err
	}
	return ks.LookupKey(ctx, tube, key)
}

func (r *recorder) ListKept(ctx context.Context, tube string, from queue.KeptCursor, limit int) ([]queue.KeptJob, error) {
	kl, ok := r.Store.(queue.KeptLister)
	if !ok {
		return nil, queue.ErrNoKeep
	}
	return kl.ListKept(ctx, tube, from, limit)
}

// keepNotifier returns w, with Listen when inner is a queue.Notifier.
func keepNotifier(w, inner queue.Store) queue.Store {
	if n, ok := inner.(queue.Notifier); ok {
		return notifying{passOn{w}, n}
	}
	return w
}

// deleted returns the ID of a job put in tube and deleted.
func (e *env) deleted(tube string) queue.ID {
	e.t.Helper()
	id := e.putPri(tube, 0, "deleted")
	e.ok("Delete", e.q.Delete(e.ctx, id))
	return id
}

// unknownID returns an ID that no job of e has.
func (e *env) unknownID() queue.ID {
	ids, _ := e.rec.known()
	id := queue.MaxID
	for slices.Contains(ids, id) {
		id--
	}
	return id
}

func (e *env) advance(d time.Duration) { e.clock.Advance(d) }

// touch touches a job through q; when it succeeds, the time left it
// returns must be the job's TTR (the store's clock, not the caller's).
func (e *env) touch(q *queue.Queue, id queue.ID) error {
	e.t.Helper()
	left, err := q.Touch(e.ctx, id)
	if err == nil {
		if js := e.statsJob(id); left != js.TTR || js.TimeLeft != js.TTR {
			e.t.Errorf("Touch(%d) = %v left; StatsJob says TTR %v, %v left; want both the TTR", id, left, js.TTR, js.TimeLeft)
		}
	}
	return err
}

// put stores one job through e.q and returns its ID.
func (e *env) put(tube string, j queue.NewJob) queue.ID {
	e.t.Helper()
	id, err := e.q.Put(e.ctx, tube, j)
	if err != nil {
		e.t.Fatalf("Put(%q): %v", tube, err)
	}
	return id
}

// putPri stores a job with priority pri and a body naming it.
func (e *env) putPri(tube string, pri uint32, body string) queue.ID {
	e.t.Helper()
	return e.put(tube, queue.NewJob{Priority: pri, Body: []byte(body)})
}

// putMany stores jobs through e.q.
func (e *env) putMany(tube string, jobs []queue.NewJob) []queue.PutResult {
	e.t.Helper()
	res, err := e.q.PutMany(e.ctx, tube, jobs)
	if err != nil {
		e.t.Fatalf("PutMany(%q, %d jobs): %v", tube, len(jobs), err)
	}
	if len(res) != len(jobs) {
		e.t.Fatalf("PutMany(%q, %d jobs) returned %d results", tube, len(jobs), len(res))
	}
	return res
}

// reserve takes one ready job from tubes through q without waiting.
func (e *env) reserve(q *queue.Queue, tubes ...string) queue.Job {
	e.t.Helper()
	j, err := q.Reserve(e.ctx, queue.ReserveOptions{Tubes: tubes, Timeout: -1})
	if err != nil {
		e.t.Fatalf("Reserve(%q) by %s: %v", tubes, q.Owner(), err)
	}
	return j
}

// reserveWant takes one ready job from tubes through q and checks its ID.
func (e *env) reserveWant(q *queue.Queue, want queue.ID, tubes ...string) queue.Job {
	e.t.Helper()
	j := e.reserve(q, tubes...)
	if j.ID != want {
		e.t.Fatalf("Reserve(%q) = job %d, want job %d", tubes, j.ID, want)
	}
	return j
}

// noReserve checks that no job of tubes is ready for q.
func (e *env) noReserve(q *queue.Queue, tubes ...string) {
	e.t.Helper()
	j, err := q.Reserve(e.ctx, queue.ReserveOptions{Tubes: tubes, Timeout: -1})
	if err == nil {
		e.t.Fatalf("Reserve(%q) = job %d, want ErrTimeout (nothing ready)", tubes, j.ID)
	}
	if !errors.Is(err, queue.ErrTimeout) {
		e.t.Fatalf("Reserve(%q): %v, want ErrTimeout", tubes, err)
	}
}

// reserveJob reserves id for q.
func (e *env) reserveJob(q *queue.Queue, id queue.ID) queue.Job {
	e.t.Helper()
	j, err := q.ReserveJob(e.ctx, id)
	if err != nil {
		e.t.Fatalf("ReserveJob(%d) by %s: %v", id, q.Owner(), err)
	}
	return j
}

// buried puts a fresh job into tube, reserves it for q and buries it with
// pri.
func (e *env) buried(q *queue.Queue, tube string, pri uint32, body string) queue.ID {
	e.t.Helper()
	id := e.putPri(tube, pri, body)
	e.reserveJob(q, id)
	e.ok(fmt.Sprintf("Bury(%d)", id), q.Bury(e.ctx, id, pri))
	return id
}

// reserved puts a fresh job into tube and reserves it for q.
func (e *env) reserved(q *queue.Queue, tube string, j queue.NewJob) queue.ID {
	e.t.Helper()
	id := e.put(tube, j)
	e.reserveJob(q, id)
	return id
}

func (e *env) statsJob(id queue.ID) queue.JobStats {
	e.t.Helper()
	s, err := e.q.StatsJob(e.ctx, id)
	if err != nil {
		e.t.Fatalf("StatsJob(%d): %v", id, err)
	}
	return s
}

func (e *env) statsTube(name string) queue.TubeStats {
	e.t.Helper()
	s, err := e.q.StatsTube(e.ctx, name)
	if err != nil {
		e.t.Fatalf("StatsTube(%q): %v", name, err)
	}
	return s
}

func (e *env) stats() queue.Stats {
	e.t.Helper()
	s, err := e.q.Stats(e.ctx)
	if err != nil {
		e.t.Fatalf("Stats: %v", err)
	}
	return s
}

func (e *env) tubes() []string {
	e.t.Helper()
	ts, err := e.q.Tubes(e.ctx)
	if err != nil {
		e.t.Fatalf("Tubes: %v", err)
	}
	return ts
}

// wantNoTube checks that StatsTube finds no tube named tube; when says
// after what.
func (e *env) wantNoTube(tube, when string) {
	e.t.Helper()
	if ts, err := e.q.StatsTube(e.ctx, tube); !errors.Is(err, queue.ErrNotFound) {
		e.t.Errorf("StatsTube %s = %+v, %v; want ErrNotFound", when, ts, err)
	}
}

// wantListed checks that Tubes lists tube, or does not when listed is
// false; failure says what is wrong when it does not hold.
func (e *env) wantListed(tube string, listed bool, failure string) {
	e.t.Helper()
	if names := e.tubes(); slices.Contains(names, tube) != listed {
		e.t.Errorf("%s: %q", failure, names)
	}
}

// wantState checks the state of job id.
func (e *env) wantState(id queue.ID, want queue.State) {
	e.t.Helper()
	if got := e.statsJob(id).State; got != want {
		e.t.Errorf("job %d is %v, want %v", id, got, want)
	}
}

// wantStatsJob compares the whole of StatsJob(id) with want.
func (e *env) wantStatsJob(step string, id queue.ID, want queue.JobStats) {
	e.t.Helper()
	want.ID = id
	got := e.statsJob(id)
	if want.Body == nil {
		want.Body = got.Body // bodies are checked through Peek (Bodies)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		e.t.Errorf("%s: StatsJob(%d) mismatch (-want +got):\n%s", step, id, diff)
	}
}

// wantTubeStats compares the whole of StatsTube(want.Name) with want.
func (e *env) wantTubeStats(step string, want queue.TubeStats) {
	e.t.Helper()
	if diff := cmp.Diff(want, e.statsTube(want.Name)); diff != "" {
		e.t.Errorf("%s: StatsTube(%q) mismatch (-want +got):\n%s", step, want.Name, diff)
	}
}

// wantGone checks that id is not found by Peek and StatsJob.
func (e *env) wantGone(id queue.ID) {
	e.t.Helper()
	if j, err := e.q.Peek(e.ctx, id); !errors.Is(err, queue.ErrNotFound) {
		e.t.Errorf("Peek(%d) of a deleted job = %+v, %v; want ErrNotFound", id, j, err)
	}
	if s, err := e.q.StatsJob(e.ctx, id); !errors.Is(err, queue.ErrNotFound) {
		e.t.Errorf("StatsJob(%d) of a deleted job = %+v, %v; want ErrNotFound", id, s, err)
	}
}

// wantPeek compares Peek(id) with want.
func (e *env) wantPeek(id queue.ID, want queue.Job) {
	e.t.Helper()
	got, err := e.q.Peek(e.ctx, id)
	if err != nil {
		e.t.Errorf("Peek(%d): %v", id, err)
		return
	}
	wantJob(e.t, fmt.Sprintf("Peek(%d)", id), got, want)
}

// ok fails the test when err is not nil.
func (e *env) ok(what string, err error) {
	e.t.Helper()
	if err != nil {
		e.t.Fatalf("%s: %v", what, err)
	}
}

// jobOpts compares jobs with nil and empty bodies as equal.
var jobOpts = cmp.Options{cmpopts.EquateEmpty()}

// wantJob compares a job as returned by a reserve or a peek. A want
// without Left does not check it (testReservations does).
func wantJob(t *testing.T, what string, got, want queue.Job) {
	t.Helper()
	if want.Left == 0 {
		want.Left = got.Left
	}
	if diff := cmp.Diff(want, got, jobOpts); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", what, diff)
	}
}

// wantErr checks that err is target (errors.Is; nil for success).
func wantErr(t *testing.T, what string, err, target error) {
	t.Helper()
	switch {
	case target == nil && err != nil:
		t.Errorf("%s: %v, want success", what, err)
	case target != nil && !errors.Is(err, target):
		t.Errorf("%s: got error %v, want %v", what, err, target)
	}
}

// ids returns the IDs of jobs.
func ids(jobs []queue.Job) []queue.ID {
	out := make([]queue.ID, len(jobs))
	for i, j := range jobs {
		out[i] = j.ID
	}
	return out
}

// errsMatch reports whether errs has one outcome per want and each errs[i]
// is want[i] (errors.Is; nil for success).
func errsMatch(errs, want []error) bool {
	if len(errs) != len(want) {
		return false
	}
	for i := range errs {
		if want[i] == nil && errs[i] != nil || want[i] != nil && !errors.Is(errs[i], want[i]) {
			return false
		}
	}
	return true
}
