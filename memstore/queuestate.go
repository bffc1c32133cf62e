package memstore

import (
	"context"
	"maps"

	"github.com/hourglass-io/hourglass/internal/wal"
	"github.com/hourglass-io/hourglass/queue"
)

// jobQueue is the job queue's part of a Store: its tubes and jobs, and
// the queue.Store methods (queue.go) and queue.LimitStore's (tubelimits.go;
// the groups they serve in turn, groups.go), which the Store forwards to
// (queuestore.go). Its records are in queuelog.go. Its state is guarded
// by the engine's mutex.
type jobQueue struct {
	e       *engine
	maxJobs int

	jobs    map[queue.ID]*job
	jobsMax int // the most entries jobs has held since it was made (shrinkIDs)
	tubes   map[string]*tube
	sched   tubeHeap // tubes with a deadline, earliest first
	lastID  queue.ID // the last ID issued; IDs are never reused
	tubeSeq uint64
	burySeq int64

	ready, delayed, reserved, buried, urgent int64
	totalJobs, timeouts                      int64 // since Open or New
	live                                     int64 // bytes a snapshot of the jobs would take

	tubeListeners listeners // by tube (Listen)
	// cancelListeners by tube, a group's under its tube (ListenCancel)
	cancelListeners map[string][]*cancelListener

	// byOwner indexes the reserved jobs by owner (Reservations): link and
	// unlink keep it.
	byOwner map[string]map[*job]struct{}
	// spares are emptied entries of byOwner kept for the next owners, at
	// most maxSpares: a connection that reserves and deletes one job at a
	// time empties its entry every time, and a map made anew each time is
	// two allocations a reserve. A spare keeps the room of the most jobs
	// its owner held at once, which the store held then.
	spares []map[*job]struct{}

	// holds counts the references of each session to each tube (Hold);
	// each tube's refs is their sum. Not logged: a store opened again
	// holds none.
	holds map[holdKey]int64

	replayTubes map[uint64]*tube // by sequence number, while a snapshot is read

	tubeLimits map[string]*tubeLimit // by tube name (tubelimits.go); nil when none was ever set
	families   map[string]*family    // tubes with groups, by name (groups.go); nil when none ever had
	// gwhole is when every group's rate is whole again (the latest
	// theoretical arrival time charged to a group), 0 when no group's rate
	// state is kept: the timer then forgets them all (groups.go).
	gwhole int64

	// Kept jobs (keep.go): each tube's retention (ns) by name, outliving
	// the tube; the kept jobs by ID (each also in its tube's kept heap
	// and, while it holds its key, in its tube's keys); their bytes.
	retain    map[string]int64
	kept      map[queue.ID]*job
	keptMax   int // the most entries kept has held since it was made (shrinkIDs)
	keptBytes int64

	// behind links a running job to the job held behind it (behind.go);
	// nil when there is none.
	behind map[queue.ID]queue.ID
}

func (q *jobQueue) init(e *engine, maxJobs int) {
	q.e = e
	q.maxJobs = maxJobs
	q.jobs = map[queue.ID]*job{}
	q.tubes = map[string]*tube{}
	q.holds = map[holdKey]int64{}
	q.byOwner = map[string]map[*job]struct{}{}
	q.replayTubes = map[uint64]*tube{}
}

// tx is the terms of the queue's operations (see update): a full disk is
// also the queue's ErrFull.
func (q *jobQueue) tx() tx { return tx{e: q.e, closed: queue.ErrClosed, full: queue.ErrFull} }

func (q *jobQueue) next() int64 {
	n := int64(never)
	if t := q.sched.top(); t != nil {
		n = t.next
	}
	if q.gwhole > 0 {
		n = min(n, q.gwhole)
	}
	return n
}

// advance applies every transition due at now: delayed jobs become ready,
// reservations whose TTR ran out end (counting a timeout), pauses end,
// kept jobs are dropped. Only the drops are logged.
func (q *jobQueue) advance(now int64) wal.Ticket {
	if q.gwhole > 0 && q.gwhole <= now {
		q.forgetGroupRates()
	}
	var tk wal.Ticket
	for {
		t := q.sched.top()
		if t == nil || t.next > now {
			return tk
		}
		tk = max(tk, q.advanceTube(t, now))
	}
}

// recovered ends every reference after a replay (see releaseAllLocked).
func (q *jobQueue) recovered(now int64) {
	q.replayTubes = nil
	q.recoveredLimits(now)
	q.releaseAllLocked(now)
}

func (q *jobQueue) size() int64 { return q.live + q.keptBytes }

func (q *jobQueue) close() {
	clear(q.tubeListeners.byKey)
	clear(q.cancelListeners)
}

func (q *jobQueue) advanceTube(t *tube, now int64) wal.Ticket {
	tk := q.dropDueLocked(t, now)
	n := 0
	for j := t.delayed.top(); j != nil && j.at <= now; j = t.delayed.top() {
		q.unlink(j)
		j.at = 0
		q.link(j, queue.Ready)
		n++
	}
	for j := t.reserved.top(); j != nil && j.at <= now; j = t.reserved.top() {
		q.unlink(j)
		j.timeouts++
		j.history().timedOut = j.at // when the TTR ran out, not when it was seen
		q.timeouts++
		t.timeouts++
		j.at = 0
		q.link(j, queue.Ready)
		n++
	}
	if t.paused && t.pauseUntil <= now {
		t.paused, t.pauseLen, t.pauseUntil = false, 0, 0
		n++
	}
	q.resched(t)
	if n > 0 {
		q.wakeLocked(t.name)
	}
	q.gcTube(t)
	return tk
}

// tubeFor returns the tube named name, creating it.
func (q *jobQueue) tubeFor(name string) *tube {
	t := q.tubes[name]
	if t == nil {
		q.tubeSeq++
		t = newTube(name, q.tubeSeq)
		q.tubes[name] = t
		if f := q.familyOf(name); f != nil {
			q.attach(t, f)
		}
	}
	return t
}

// gcTube forgets t when it holds no job, no kept job, no reference and no
// pause.
func (q *jobQueue) gcTube(t *tube) {
	if t.paused || t.jobs() > 0 || t.refs > 0 || t.kept.len() > 0 || q.tubes[t.name] != t {
		return
	}
	q.sched.set(t, never)
	delete(q.tubes, t.name)
	q.detach(t)
}

// freeLocked is called when the last job or the last reference of t has
// gone: a tube that holds neither is gone, its pause with it, as
// beanstalkd frees a tube. Ending the pause is logged, so that a replay,
// which knows no references, frees the tube at the same point; the ticket
// is that record's (0 when there is none).
func (q *jobQueue) freeLocked(t *tube) wal.Ticket {
	if t.jobs() > 0 || t.refs > 0 || t.kept.len() > 0 || !t.paused || q.tubes[t.name] != t {
		q.gcTube(t)
		return 0
	}
	q.setPause(t, 0, 0)
	return q.e.append(kindPause, q.encodePause(t), nil)
}

// resched updates t's place in the schedule after its deadline may have
// changed.
func (q *jobQueue) resched(t *tube) { q.sched.set(t, t.deadline()) }

// unlink takes j out of its state heap and the counts.
func (q *jobQueue) unlink(j *job) {
	t := j.tube
	t.heap(j.state).remove(j)
	if t.fam != nil {
		t.unlinkedFamily(j.state)
	}
	switch j.state {
	case queue.Ready:
		q.ready--
		if j.pri < queue.UrgentPriority {
			t.urgent--
			q.urgent--
		}
	case queue.Delayed:
		q.delayed--
		q.resched(t)
	case queue.Reserved:
		q.reserved--
		m := q.byOwner[j.owner]
		delete(m, j)
		if len(m) == 0 {
			delete(q.byOwner, j.owner)
			if len(q.spares) < maxSpares {
				q.spares = append(q.spares, m)
			}
		}
		j.owner = ""
		q.resched(t)
	case queue.Buried:
		q.buried--
	}
	j.state = 0
}

// maxSpares bounds jobQueue.spares.
const maxSpares = 64

// link puts j, with its fields set for st, into the heap of st.
func (q *jobQueue) link(j *job, st queue.State) {
	t := j.tube
	j.state = st
	t.heap(st).push(j)
	if t.fam != nil {
		t.linkedFamily(st)
	}
	switch st {
	case queue.Ready:
		q.ready++
		if j.pri < queue.UrgentPriority {
			t.urgent++
			q.urgent++
		}
	case queue.Delayed:
		q.delayed++
		q.resched(t)
	case queue.Reserved:
		q.reserved++
		m := q.byOwner[j.owner]
		if m == nil {
			if n := len(q.spares); n > 0 {
				m = q.spares[n-1]
				q.spares[n-1] = nil
				q.spares = q.spares[:n-1]
			} else {
				m = map[*job]struct{}{}
			}
			q.byOwner[j.owner] = m
		}
		m[j] = struct{}{}
		q.resched(t)
	case queue.Buried:
		q.buried++
	}
}

// jobSize estimates the bytes of j's record in a snapshot.
func jobSize(j *job) int64 { return int64(64 + len(j.key()) + len(j.body)) }

// addJob stores a new job in state st.
func (q *jobQueue) addJob(j *job, st queue.State) {
	q.jobs[j.id] = j
	q.jobsMax = max(q.jobsMax, len(q.jobs))
	if k := j.key(); k != "" {
		if j.tube.keys == nil {
			j.tube.keys = map[string]*job{}
		}
		j.tube.keys[k] = j
	}
	q.live += jobSize(j)
	q.link(j, st)
}

// shrinkMin is the fewest entries a job table must have held for
// shrinkIDs to copy it into a smaller one.
const shrinkMin = 4096

// shrinkIDs deletes id from m, a table of jobs by ID that has held up to
// most entries, and returns the table and its new most. A Go map keeps the
// memory of the most entries it ever held until it is dropped (100,000
// jobs put and deleted leave about 4 MB behind), so once m holds under an
// eighth of most (and most is at least shrinkMin) its entries are copied
// into a table of their size. The copy costs one pass over the entries
// left, after seven times as many deletes: O(1) a delete, amortized.
func shrinkIDs(m map[queue.ID]*job, id queue.ID, most int) (map[queue.ID]*job, int) {
	delete(m, id)
	n := len(m)
	if most < shrinkMin || n >= most/8 {
		return m, most
	}
	c := make(map[queue.ID]*job, n)
	maps.Copy(c, m)
	return c, n
}

// removeJob deletes j, counting a delete in its tube.
func (q *jobQueue) removeJob(j *job) {
	j.tube.deletes++
	q.dropJob(j)
}

// dropJob takes j out of the store, counting nothing (a delete or a
// cancel counts itself).
func (q *jobQueue) dropJob(j *job) {
	t := j.tube
	q.endedBehind(j)
	q.unlink(j)
	q.jobs, q.jobsMax = shrinkIDs(q.jobs, j.id, q.jobsMax)
	if k := j.key(); k != "" {
		delete(t.keys, k)
	}
	q.live -= jobSize(j)
	q.gcTube(t)
}

// Listen is the part's side of Store.Listen (queuestore.go).
func (q *jobQueue) Listen(ctx context.Context, tube string, wake func(tube string)) (func(), error) {
	return q.e.listen(ctx, &q.tubeListeners, tube, wake, queue.ErrClosed)
}

// wakeLocked notes that the listeners of tube are to be woken when the
// current operation ends.
// A wake-up of a group's tube wakes its tube's waiters too, whose
// reserves serve the group (groups.go).
func (q *jobQueue) wakeLocked(tube string) {
	q.e.wake(&q.tubeListeners, tube)
	if p, g := queue.SplitGroup(tube); g != "" {
		q.e.wake(&q.tubeListeners, p)
	}
}
