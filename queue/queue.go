package queue

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"time"

	"github.com/hourglass-io/hourglass/internal/tracing"
	"github.com/hourglass-io/hourglass/internal/wait"
	"go.opentelemetry.io/otel/trace"
)

// Queue is the job queue over a Store. It validates arguments and waits for
// jobs without polling; which jobs an owner holds, the store knows (Held,
// Abandon). A Queue is safe for concurrent use; the values WithOwner
// returns share its waiting machinery.
type Queue struct {
	store Store
	opts  Options
	owner string
	hub   *hub            // shared with the WithOwner views
	trace *tracing.Source // the tracer of Options.TracerProvider
	clock wait.Clock      // Options.Clock, or the machine's
}

// New returns a Queue over store. It does not take ownership of the store:
// Close the Queue, then the store.
func New(store Store, opts *Options) (*Queue, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	q := &Queue{store: store}
	if opts != nil {
		q.opts = *opts
	}
	q.trace = tracing.New(q.opts.TracerProvider)
	q.clock = wait.Or(q.opts.Clock)
	q.owner = q.opts.Owner
	if q.owner == "" {
		q.owner = randomOwner()
	}
	n, _ := store.(Notifier)
	q.hub = newHub(n, q.opts.pollInterval(), q.clock)
	return q, nil
}

func randomOwner() string {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return hex.EncodeToString(b[:])
}

// WithOwner returns a view of q whose reservations belong to owner. Views
// share q's store, options and waiting machinery; closing q closes them.
func (q *Queue) WithOwner(owner string) *Queue {
	v := *q
	v.owner = owner
	return &v
}

// Owner returns the name that owns the reservations made through q.
func (q *Queue) Owner() string { return q.owner }

// Store returns the store q runs on.
func (q *Queue) Store() Store { return q.store }

// MaxJobSize returns the largest body q accepts.
func (q *Queue) MaxJobSize() int { return q.opts.maxJobSize() }

// Close wakes every waiting reserver with ErrClosed and ends the store
// subscriptions of q and its views. It does not close the store.
func (q *Queue) Close() error {
	q.hub.close()
	return nil
}

// Put stores a job in tube and returns its ID. A job with a UniqueKey that a
// live job of the tube already holds is not stored: Put returns that job's ID
// (with Debounce, a delayed one is changed instead: NewJob.Debounce).
// Put keeps no hold of job.Body once it returns.
func (q *Queue) Put(ctx context.Context, tube string, job NewJob) (ID, error) {
	// Its own slice of one, which putMany may change in place.
	r, err := q.putJobs(ctx, tube, []NewJob{job}, true)
	if err != nil {
		return 0, err
	}
	return r[0].ID, nil
}

// PutMany stores jobs in tube in one call to the store, in order.
func (q *Queue) PutMany(ctx context.Context, tube string, jobs []NewJob) ([]PutResult, error) {
	return q.putJobs(ctx, tube, jobs, false)
}

// putJobs is PutMany; own says that jobs is the Queue's own, to change in
// place.
func (q *Queue) putJobs(ctx context.Context, tube string, jobs []NewJob, own bool) ([]PutResult, error) {
	if err := CheckTube(tube); err != nil {
		return nil, err
	}
	if len(jobs) == 0 {
		return nil, invalid("jobs", "is empty")
	}
	ctx, span := q.startPut(ctx, tube, jobs)
	res, err := q.putMany(ctx, tube, jobs, own)
	endPut(span, res, err)
	return res, err
}

func (q *Queue) putMany(ctx context.Context, tube string, jobs []NewJob, own bool) ([]PutResult, error) {
	// The jobs as the store gets them: jobs itself while none needs a
	// change (a default TTR, the trace context of ctx, times in whole
	// milliseconds, an empty body for none), else a copy, made at the
	// first change: the caller's jobs are never written (unless they are
	// the Queue's own).
	norm := jobs
	copied := own
	tc, tcRead := "", false // the trace context of ctx, read once
	grouped := false
	for i, j := range jobs {
		grouped = grouped || j.Group != ""
		if len(j.Body) > q.opts.maxJobSize() {
			return nil, fmt.Errorf("%w: %d bytes (at most %d)", ErrJobTooBig, len(j.Body), q.opts.maxJobSize())
		}
		if err := checkDuration("Delay", j.Delay); err != nil {
			return nil, err
		}
		changed := false
		if j.TTR == 0 {
			j.TTR, changed = q.opts.defaultTTR(), true
		} else if err := checkTTR(j.TTR); err != nil {
			return nil, err
		}
		if len(j.UniqueKey) > MaxUniqueKey {
			return nil, invalid("UniqueKey", "is %d bytes, want at most %d", len(j.UniqueKey), MaxUniqueKey)
		}
		if err := checkGroup(tube, j.Group); err != nil {
			return nil, err
		}
		if err := checkKeyOptions(j); err != nil {
			return nil, err
		}
		if j.TraceContext == "" {
			if !tcRead {
				tc, tcRead = TraceContextOf(ctx), true
			}
			if tc != "" {
				j.TraceContext, changed = tc, true
			}
		} else if err := CheckTraceContext(j.TraceContext); err != nil {
			return nil, err
		}
		if d, t, w := truncMS(j.Delay), truncMS(j.TTR), truncMS(j.MaxWait); d != j.Delay || t != j.TTR || w != j.MaxWait {
			j.Delay, j.TTR, j.MaxWait, changed = d, t, w, true
		}
		if j.Body == nil {
			j.Body, changed = []byte{}, true
		}
		if changed {
			if !copied {
				norm, copied = slices.Clone(jobs), true
			}
			norm[i] = j
		}
	}
	if grouped && !copied {
		norm = slices.Clone(jobs) // the runs below write their jobs' Group
	}
	if !grouped {
		res, err := q.store.Put(ctx, tube, norm)
		if err == nil {
			q.selfWake(tube)
		}
		return res, err
	}
	// Jobs of groups: one call to the store per run of one group.
	res := make([]PutResult, 0, len(norm))
	for _, run := range groupRuns(norm) {
		name := GroupTube(tube, run[0].Group)
		for i := range run {
			run[i].Group = ""
		}
		r, err := q.store.Put(ctx, name, run)
		if err != nil {
			return res, err
		}
		res = append(res, r...)
		q.selfWake(name)
		if name != tube {
			q.selfWake(tube)
		}
	}
	return res, nil
}

// selfWake wakes this Queue's own waiters on tube after a change made
// through it, when the store cannot notify (the poll covers other
// processes' changes).
func (q *Queue) selfWake(tube string) {
	if q.hub.notifier == nil {
		q.hub.wake(tube)
		return
	}
	q.hub.bump(tube) // the store's own wake-up will follow
}

// Reserve waits for a ready job in one of opts.Tubes (default "default"),
// reserves it for q's owner and returns it. Among the ready jobs of the
// tubes, the lowest priority number is taken first, ties by ID; across tubes
// that a store keeps on different nodes (Redis Cluster) that order is best
// effort. Paused tubes are skipped.
//
// Reserve returns ErrTimeout when opts.Timeout passes, ctx.Err() when ctx
// ends first, and ErrClosed when q is closed.
func (q *Queue) Reserve(ctx context.Context, opts ReserveOptions) (Job, error) {
	jobs, _, err := q.reserve(ctx, opts, 1, nil)
	if err != nil {
		return Job{}, err
	}
	return jobs[0], nil
}

// ReserveN is Reserve for up to n jobs in one call to the store: it waits
// for at least one and returns as many as were ready, at most n.
func (q *Queue) ReserveN(ctx context.Context, n int, opts ReserveOptions) ([]Job, error) {
	if n < 1 || n > 1000 {
		return nil, invalid("n", "is %d, want 1 to 1000", n)
	}
	jobs, _, err := q.reserve(ctx, opts, n, nil)
	return jobs, err
}

// reserve deletes del and reserves up to max jobs, waiting as opts say.
// The outcomes of the deletes come back even when the reserve fails.
// drainedWakeAfter: when a reserve leaves only jobs a rate holds back, and
// the rate frees one sooner than this, the other waiters are woken at once
// as after any reserve, so that one is already asking when it frees; a
// wake-up at the rate's time would come a round trip late, and at high
// rates those round trips, one waiter of a Queue at a time, cap the rate.
const drainedWakeAfter = 5 * time.Millisecond

func (q *Queue) reserve(ctx context.Context, opts ReserveOptions, max int, del []ID) ([]Job, []error, error) {
	tubes, err := checkTubes(opts.Tubes)
	if err != nil {
		return nil, nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	// The store calls run to the end even if ctx ends meanwhile: a reserve
	// cut short could have reserved a job this Queue never hears of, which
	// would then wait out its TTR. Store calls are bounded by the store's
	// own timeouts.
	sctx := ctx
	if ctx.Done() != nil { // a context that never ends needs no wrapping
		sctx = context.WithoutCancel(ctx)
	}
	req := ReserveRequest{Owner: q.owner, Tubes: tubes, Max: max, Delete: del}
	var deleted []error
	if q.hub.empty(tubes) {
		// The store told this process that the tubes have nothing to take
		// and no wake-up has come since: asking again would find nothing.
		// The deletes go alone.
		if len(del) > 0 {
			if deleted, err = q.store.Delete(sctx, q.owner, del); err != nil {
				return nil, nil, err
			}
		}
	} else {
		jobs, res, err := q.ask(sctx, req)
		if err != nil {
			return nil, nil, err
		}
		deleted = res.Deleted
		if len(jobs) > 0 {
			return jobs, deleted, nil
		}
	}
	if opts.Timeout < 0 {
		return nil, deleted, ErrTimeout
	}
	req.Delete = nil

	var deadline time.Time
	if opts.Timeout > 0 {
		deadline = q.clock.Now().Add(opts.Timeout)
	}
	w, err := q.hub.enter(ctx, tubes)
	if err != nil {
		return nil, deleted, err
	}
	defer q.hub.leave(w)
	for {
		// Registered first, then asked: a job that arrives in between wakes
		// us. A tube known to have nothing since the last answer is not
		// asked again until a wake-up.
		if !q.hub.empty(tubes) {
			jobs, _, err := q.ask(sctx, req)
			if err != nil {
				return nil, deleted, err
			}
			if len(jobs) > 0 {
				return jobs, deleted, nil
			}
		}
		r, err := w.Wait(ctx, deadline, 0) // the hub's one timer polls, if at all
		if err != nil {
			return nil, deleted, err
		}
		select {
		case <-q.hub.done:
			return nil, deleted, ErrClosed
		default:
		}
		if r == wait.Deadline {
			return nil, deleted, ErrTimeout
		}
	}
}

// ask makes one Reserve call and passes on what it learnt: when a job is
// left for another waiter, a wake-up for it; when nothing is (no job, or
// Drained), that the tubes are empty until the store's Next, and a
// wake-up then. Next is counted from the call's start: the store measured
// it at an instant of the call, and counting it from the reply would add
// the reply's way back (milliseconds, on a loaded machine) to every wait
// for a delayed job. Counted from the start, the wake-up comes no later
// than the store's time; when it comes early the reserve finds nothing
// and asks again.
func (q *Queue) ask(ctx context.Context, req ReserveRequest) ([]Job, ReserveResult, error) {
	e, known := q.hub.epoch(req.Tubes)
	asked := q.clock.Now()
	res, err := q.store.Reserve(ctx, req)
	if err != nil {
		return nil, res, err
	}
	if len(res.Jobs) > 0 && !(res.Drained && (res.Next < 0 || res.Next >= drainedWakeAfter)) {
		// Someone else may be waiting for what is left.
		for _, t := range req.Tubes {
			q.hub.wake(t)
		}
		return res.Jobs, res, nil
	}
	// Nothing it could take is left (none, or limits hold back the rest):
	// wake a waiter when one may be.
	if known {
		q.hub.found(req.Tubes, e, asked, res.Next)
	}
	if res.Next >= 0 && !res.SelfWaking {
		q.hub.schedule(res.NextTube, asked.Add(res.Next))
	}
	return res.Jobs, res, nil
}

// ReserveJob reserves the job with the given ID, if it is ready, delayed or
// buried, whatever its tube and even if the tube is paused. It returns
// ErrNotFound when there is no such job and ErrReserved when the job is
// reserved (by anyone).
func (q *Queue) ReserveJob(ctx context.Context, id ID) (Job, error) {
	if err := checkID(id); err != nil {
		return Job{}, err
	}
	return q.store.ReserveJob(ctx, q.owner, id)
}

// Delete deletes a job that is ready, delayed, buried, or reserved by q's
// owner. It returns ErrNotFound when there is no such job and ErrReserved when
// another owner has reserved it.
func (q *Queue) Delete(ctx context.Context, id ID) error {
	if err := checkID(id); err != nil {
		return err
	}
	// DeleteMany of one valid ID, without its tables of outcomes.
	errs, err := q.store.Delete(ctx, q.owner, []ID{id})
	if err != nil {
		return err
	}
	if trace.SpanFromContext(ctx).IsRecording() {
		settled(ctx, "delete", id, "", 0, errs[0])
	}
	return errs[0]
}

// DeleteMany deletes jobs as Delete does, in one call to the store, and
// returns one outcome per ID.
func (q *Queue) DeleteMany(ctx context.Context, ids []ID) ([]error, error) {
	out := make([]error, len(ids))
	valid := make([]ID, 0, len(ids))
	for i, id := range ids {
		if err := checkID(id); err != nil {
			out[i] = err
		} else {
			valid = append(valid, id)
		}
	}
	if len(valid) == 0 {
		return out, nil
	}
	errs, err := q.store.Delete(ctx, q.owner, valid)
	if err != nil {
		return nil, err
	}
	k := 0
	for i := range out {
		if out[i] == nil {
			out[i] = errs[k]
			k++
		}
	}
	if trace.SpanFromContext(ctx).IsRecording() {
		for i, id := range ids {
			settled(ctx, "delete", id, "", 0, out[i])
		}
	}
	return out, nil
}

// Release returns a job reserved by q's owner to ready with priority pri, or
// to delayed when delay > 0. ErrNotFound when there is no such job,
// ErrNotReserved when q's owner does not hold it. It records no reason:
// the job keeps the last error it had (see ReleaseWithReason).
func (q *Queue) Release(ctx context.Context, id ID, pri uint32, delay time.Duration) error {
	return q.ReleaseWithReason(ctx, id, pri, delay, "")
}

// ReleaseWithReason is Release that also records why the job is given back
// (a worker's error text) as the job's last error, with the time, in
// JobStats.LastError and LastErrorAt. The reason is cut to MaxReasonLen
// bytes (see CutReason); an empty reason records nothing and the job keeps
// the last error it had.
func (q *Queue) ReleaseWithReason(ctx context.Context, id ID, pri uint32, delay time.Duration, reason string) error {
	return q.ReleaseWith(ctx, id, ReleaseOptions{Priority: &pri, Delay: delay, Reason: reason})
}

// ReleaseOptions say how ReleaseWith gives a job back.
type ReleaseOptions struct {
	// Priority is the job's new priority; nil keeps the one it has.
	Priority *uint32
	// Delay, when > 0, makes the job delayed for that long.
	Delay time.Duration
	// Reason, when not empty, becomes the job's last error, as in
	// ReleaseWithReason.
	Reason string
}

// ReleaseWith is ReleaseWithReason with its arguments in opts, where the
// priority may be left out: the job then keeps its own, read and written
// in the store's one atomic operation.
func (q *Queue) ReleaseWith(ctx context.Context, id ID, opts ReleaseOptions) error {
	if err := checkID(id); err != nil {
		return err
	}
	if err := checkDuration("delay", opts.Delay); err != nil {
		return err
	}
	reason := CutReason(opts.Reason)
	err := q.store.Release(ctx, q.owner, id, storePriority(opts.Priority), truncMS(opts.Delay), reason)
	q.hub.forget() // its tube may have a job, or a place under a cap, now
	settled(ctx, "release", id, reason, opts.Delay, err)
	return err
}

// storePriority is p as the Store takes it: KeepPriority for nil.
func storePriority(p *uint32) int64 {
	if p == nil {
		return KeepPriority
	}
	return int64(*p)
}

// Bury moves a job reserved by q's owner to the end of its tube's buried
// list with priority pri. Errors as for Release. It records no reason (see
// BuryWithReason).
func (q *Queue) Bury(ctx context.Context, id ID, pri uint32) error {
	return q.BuryWithReason(ctx, id, pri, "")
}

// BuryWithReason is Bury that also records why the job is set aside as its
// last error, as ReleaseWithReason does.
func (q *Queue) BuryWithReason(ctx context.Context, id ID, pri uint32, reason string) error {
	return q.BuryWith(ctx, id, BuryOptions{Priority: &pri, Reason: reason})
}

// BuryOptions say how BuryWith sets a job aside.
type BuryOptions struct {
	// Priority is the job's new priority; nil keeps the one it has.
	Priority *uint32
	// Reason, when not empty, becomes the job's last error.
	Reason string
}

// BuryWith is BuryWithReason with its arguments in opts, where the
// priority may be left out as in ReleaseWith.
func (q *Queue) BuryWith(ctx context.Context, id ID, opts BuryOptions) error {
	if err := checkID(id); err != nil {
		return err
	}
	reason := CutReason(opts.Reason)
	err := q.store.Bury(ctx, q.owner, id, storePriority(opts.Priority), reason)
	q.hub.forget() // a place under its tube's cap may be free now
	settled(ctx, "bury", id, reason, 0, err)
	return err
}

// Touch gives a job reserved by q's owner a fresh TTR counted from now and
// returns the time left on the reservation, measured on the store's clock
// (see Job.Left). Errors as for Release.
func (q *Queue) Touch(ctx context.Context, id ID) (time.Duration, error) {
	if err := checkID(id); err != nil {
		return 0, err
	}
	return q.store.Touch(ctx, q.owner, id)
}

// Abandon returns every job that q's owner holds to ready at once, without
// counting releases, and reports how many it returned. A connection that
// closes, or a worker that stops, calls it. It asks the store which jobs the
// owner holds (Store.Reservations), so it returns those reserved through
// any Queue with the same owner.
func (q *Queue) Abandon(ctx context.Context) (int, error) {
	held, err := q.store.Reservations(ctx, q.owner)
	if err != nil || len(held) == 0 {
		return 0, err
	}
	ids := make([]ID, len(held))
	for i, r := range held {
		ids[i] = r.ID
	}
	n, err := q.store.Unreserve(ctx, q.owner, ids)
	q.hub.forget()
	return n, err
}

// Held returns the jobs that q's owner has reserved, as the store sees them
// (Store.Reservations): a reservation whose TTR has run out is not listed.
func (q *Queue) Held(ctx context.Context) ([]Reservation, error) {
	return q.store.Reservations(ctx, q.owner)
}

// Kick moves up to n jobs of tube to ready: its buried jobs, oldest first,
// if it has any, else its delayed jobs, soonest first. It returns how many
// it moved.
func (q *Queue) Kick(ctx context.Context, tube string, n int) (int, error) {
	if err := CheckTube(tube); err != nil {
		return 0, err
	}
	if n < 0 {
		return 0, invalid("n", "is %d, want >= 0", n)
	}
	if n == 0 {
		return 0, nil
	}
	k, err := q.store.Kick(ctx, tube, n)
	q.hub.bump(tube)
	return k, err
}

// KickJob moves one buried or delayed job to ready. ErrNotFound when there
// is no such job, ErrNotKickable when it is ready or reserved.
func (q *Queue) KickJob(ctx context.Context, id ID) error {
	if err := checkID(id); err != nil {
		return err
	}
	err := q.store.KickJob(ctx, id)
	q.hub.forget()
	return err
}

// Peek returns the job with the given ID, in whatever state, or ErrNotFound.
func (q *Queue) Peek(ctx context.Context, id ID) (Job, error) {
	st, err := q.StatsJob(ctx, id)
	if err != nil {
		return Job{}, err
	}
	return st.Job(), nil
}

// PeekReady returns the ready job of tube that a reserve would take next.
func (q *Queue) PeekReady(ctx context.Context, tube string) (Job, error) {
	return q.peekState(ctx, tube, Ready)
}

// PeekDelayed returns the delayed job of tube that is due soonest.
func (q *Queue) PeekDelayed(ctx context.Context, tube string) (Job, error) {
	return q.peekState(ctx, tube, Delayed)
}

// PeekBuried returns the job buried longest ago in tube.
func (q *Queue) PeekBuried(ctx context.Context, tube string) (Job, error) {
	return q.peekState(ctx, tube, Buried)
}

// MaxPeekN is the most jobs one PeekStateN call returns.
const MaxPeekN = 1000

// PeekStateN returns up to n of the next jobs of tube in state s: Ready,
// Delayed and Buried in the order PeekReady, PeekDelayed and PeekBuried
// name them, Reserved by the soonest end of TTR (a listing the beanstalkd
// protocol has no command for): for listings such as a dashboard's. n must
// be from 1 to MaxPeekN. A tube with no such job gives an empty slice.
func (q *Queue) PeekStateN(ctx context.Context, tube string, s State, n int) ([]Job, error) {
	if err := CheckTube(tube); err != nil {
		return nil, err
	}
	if s < Ready || s > Buried {
		return nil, fmt.Errorf("%w: PeekStateN of state %v", ErrInvalid, s)
	}
	if n < 1 || n > MaxPeekN {
		return nil, fmt.Errorf("%w: PeekStateN of %d jobs (want 1 to %d)", ErrInvalid, n, MaxPeekN)
	}
	return q.store.PeekStateN(ctx, tube, s, n)
}

func (q *Queue) peekState(ctx context.Context, tube string, s State) (Job, error) {
	jobs, err := q.PeekStateN(ctx, tube, s, 1)
	if err != nil {
		return Job{}, err
	}
	if len(jobs) == 0 {
		return Job{}, fmt.Errorf("%w: no %v job in tube %q", ErrNotFound, s, tube)
	}
	return jobs[0], nil
}

// StatsJob describes the job with the given ID, body included (so
// StatsJob(…).Job() is what Peek returns), or returns ErrNotFound.
func (q *Queue) StatsJob(ctx context.Context, id ID) (JobStats, error) {
	if err := checkID(id); err != nil {
		return JobStats{}, err
	}
	return q.store.StatsJob(ctx, id)
}

// StatsTube describes tube, or returns ErrNotFound when the store does not
// know it (see Store.Tubes).
func (q *Queue) StatsTube(ctx context.Context, tube string) (TubeStats, error) {
	if err := CheckTube(tube); err != nil {
		return TubeStats{}, err
	}
	return q.store.StatsTube(ctx, tube)
}

// Stats describes the whole store.
func (q *Queue) Stats(ctx context.Context) (Stats, error) { return q.store.Stats(ctx) }

// PauseTube keeps reserves from taking jobs of tube for d; d == 0 ends a pause.
func (q *Queue) PauseTube(ctx context.Context, tube string, d time.Duration) error {
	if err := CheckTube(tube); err != nil {
		return err
	}
	if err := checkDuration("pause", d); err != nil {
		return err
	}
	err := q.store.PauseTube(ctx, tube, truncMS(d))
	q.hub.bump(tube)
	return err
}

// Tubes lists the tubes the store knows (see Store.Tubes), oldest first.
func (q *Queue) Tubes(ctx context.Context) ([]string, error) { return q.store.Tubes(ctx) }

// Hold adds n references of q's owner to tube, or takes back -n of them
// when n < 0: a tube lives, with its counters, while it holds a job or a
// reference (see Store.Tubes and Store.Hold). It returns ErrInvalidTube for a
// bad name and ErrInvalid when n is 0.
func (q *Queue) Hold(ctx context.Context, tube string, n int) error {
	if err := CheckTube(tube); err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("%w: hold of 0 references", ErrInvalid)
	}
	return q.store.Hold(ctx, q.owner, tube, n)
}
