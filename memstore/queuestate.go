package memstore

import (
	"github.com/hourglass-io/hourglass/internal/wal"
	"github.com/hourglass-io/hourglass/queue"
)

// jobQueue is the job queue's part of a Store: its tubes and jobs. The
// Store embeds it, so the queue.Store methods (queue.go) reach its fields
// directly. Its records are in queuelog.go.
type jobQueue struct {
	store   *Store
	maxJobs int

	jobs    map[queue.ID]*job
	tubes   map[string]*tube
	sched   tubeHeap // tubes with a deadline, earliest first
	lastID  queue.ID // the last ID issued; IDs are never reused
	tubeSeq uint64
	burySeq int64

	ready, delayed, reserved, buried, urgent int64
	totalJobs, timeouts                      int64 // since Open or New
	live                                     int64 // bytes a snapshot of the jobs would take

	tubeListeners listeners // by tube (Listen)

	// byOwner indexes the reserved jobs by owner (Reservations): link and
	// unlink keep it.
	byOwner map[string]map[*job]struct{}
	spare   map[*job]struct{} // an empty entry of byOwner kept for the next owner

	// holds counts the references of each session to each tube (Hold);
	// each tube's refs is their sum. Not logged: a store opened again
	// holds none.
	holds map[holdKey]int64

	replayTubes map[uint64]*tube // by sequence number, while a snapshot is read

	tubeLimits map[string]*tubeLimit // by tube name (limits.go); nil when none was ever set
	families   map[string]*family    // tubes with groups, by name (groups.go); nil when none ever had
}

func (q *jobQueue) init(s *Store, maxJobs int) {
	q.store = s
	q.maxJobs = maxJobs
	q.jobs = map[queue.ID]*job{}
	q.tubes = map[string]*tube{}
	q.holds = map[holdKey]int64{}
	q.byOwner = map[string]map[*job]struct{}{}
	q.replayTubes = map[uint64]*tube{}
}

func (q *jobQueue) next() int64 {
	if t := q.sched.top(); t != nil {
		return t.next
	}
	return never
}

// advance applies every transition due at now: delayed jobs become ready,
// reservations whose TTR ran out end (counting a timeout), pauses end.
// None is logged.
func (q *jobQueue) advance(now int64) wal.Ticket {
	s := q.store
	for {
		t := s.sched.top()
		if t == nil || t.next > now {
			return 0
		}
		s.advanceTube(t, now)
	}
}

// recovered ends every reference after a replay (see releaseAllLocked).
func (q *jobQueue) recovered(now int64) {
	q.replayTubes = nil
	q.store.recoveredLimits(now)
	q.store.releaseAllLocked(now)
}

func (q *jobQueue) size() int64 { return q.live }

func (q *jobQueue) close() { clear(q.tubeListeners.byKey) }

func (s *Store) advanceTube(t *tube, now int64) {
	n := 0
	for j := t.delayed.top(); j != nil && j.at <= now; j = t.delayed.top() {
		s.unlink(j)
		j.at = 0
		s.link(j, queue.Ready)
		n++
	}
	for j := t.reserved.top(); j != nil && j.at <= now; j = t.reserved.top() {
		s.unlink(j)
		j.timeouts++
		j.history().timedOut = j.at // when the TTR ran out, not when it was seen
		s.timeouts++
		t.timeouts++
		j.at = 0
		s.link(j, queue.Ready)
		n++
	}
	if t.paused && t.pauseUntil <= now {
		t.paused, t.pauseLen, t.pauseUntil = false, 0, 0
		n++
	}
	s.resched(t)
	if n > 0 {
		s.wakeLocked(t.name)
	}
	s.gcTube(t)
}

// tubeFor returns the tube named name, creating it.
func (s *Store) tubeFor(name string) *tube {
	t := s.tubes[name]
	if t == nil {
		s.tubeSeq++
		t = newTube(name, s.tubeSeq)
		s.tubes[name] = t
		if f := s.familyOf(name); f != nil {
			s.attach(t, f)
		}
	}
	return t
}

// gcTube forgets t when it holds no job, no reference and no pause.
func (s *Store) gcTube(t *tube) {
	if t.paused || t.jobs() > 0 || t.refs > 0 || s.tubes[t.name] != t {
		return
	}
	s.sched.set(t, never)
	delete(s.tubes, t.name)
	s.detach(t)
}

// freeLocked is called when the last job or the last reference of t has
// gone: a tube that holds neither is gone, its pause with it, as
// beanstalkd frees a tube. Ending the pause is logged, so that a replay,
// which knows no references, frees the tube at the same point; the ticket
// is that record's (0 when there is none).
func (s *Store) freeLocked(t *tube) wal.Ticket {
	if t.jobs() > 0 || t.refs > 0 || !t.paused || s.tubes[t.name] != t {
		s.gcTube(t)
		return 0
	}
	s.setPause(t, 0, 0)
	return s.append(kindPause, s.encodePause(t), nil)
}

// resched updates t's place in the schedule after its deadline may have
// changed.
func (s *Store) resched(t *tube) { s.sched.set(t, t.deadline()) }

// unlink takes j out of its state heap and the counts.
func (s *Store) unlink(j *job) {
	t := j.tube
	t.heap(j.state).remove(j)
	if t.fam != nil {
		t.unlinkedFamily(j.state)
	}
	switch j.state {
	case queue.Ready:
		s.ready--
		if j.pri < queue.UrgentPriority {
			t.urgent--
			s.urgent--
		}
	case queue.Delayed:
		s.delayed--
		s.resched(t)
	case queue.Reserved:
		s.reserved--
		m := s.byOwner[j.owner]
		delete(m, j)
		if len(m) == 0 {
			delete(s.byOwner, j.owner)
			s.spare = m
		}
		j.owner = ""
		s.resched(t)
	case queue.Buried:
		s.buried--
	}
	j.state = 0
}

// link puts j, with its fields set for st, into the heap of st.
func (s *Store) link(j *job, st queue.State) {
	t := j.tube
	j.state = st
	t.heap(st).push(j)
	if t.fam != nil {
		t.linkedFamily(st)
	}
	switch st {
	case queue.Ready:
		s.ready++
		if j.pri < queue.UrgentPriority {
			t.urgent++
			s.urgent++
		}
	case queue.Delayed:
		s.delayed++
		s.resched(t)
	case queue.Reserved:
		s.reserved++
		m := s.byOwner[j.owner]
		if m == nil {
			m, s.spare = s.spare, nil
			if m == nil {
				m = map[*job]struct{}{}
			}
			s.byOwner[j.owner] = m
		}
		m[j] = struct{}{}
		s.resched(t)
	case queue.Buried:
		s.buried++
	}
}

// jobSize estimates the bytes of j's record in a snapshot.
func jobSize(j *job) int64 { return int64(64 + len(j.key()) + len(j.body)) }

// addJob stores a new job in state st.
func (s *Store) addJob(j *job, st queue.State) {
	s.jobs[j.id] = j
	if k := j.key(); k != "" {
		if j.tube.keys == nil {
			j.tube.keys = map[string]*job{}
		}
		j.tube.keys[k] = j
	}
	s.live += jobSize(j)
	s.link(j, st)
}

// removeJob deletes j, counting a delete in its tube.
func (s *Store) removeJob(j *job) {
	t := j.tube
	s.unlink(j)
	delete(s.jobs, j.id)
	if k := j.key(); k != "" {
		delete(t.keys, k)
	}
	s.live -= jobSize(j)
	t.deletes++
	s.gcTube(t)
}
