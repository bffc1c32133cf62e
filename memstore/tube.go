package memstore

import (
	"math"

	"github.com/hourglass-io/hourglass/queue"
)

// never is the deadline of a tube with nothing scheduled.
const never = math.MaxInt64

// tube holds the jobs of one tube, one heap per state.
type tube struct {
	name     string
	seq      uint64 // creation order
	ready    jobHeap
	delayed  jobHeap
	reserved jobHeap
	buried   jobHeap
	kept     jobHeap // kept jobs (keep.go), by the time they are dropped
	urgent   int64   // ready jobs with a priority below queue.UrgentPriority
	keys     map[string]*job

	totalJobs, deletes, pauses int64
	// reserves, buries and timeouts of the tube's jobs while the engine
	// runs (not logged: they start at 0 when it opens)
	reserves, buries, timeouts int64
	cancels                    int64 // jobs cancelled while the engine runs (not counted by a replay)
	refs                       int64 // references held (Hold), by every session
	limitHolds                 int64 // reserves its limits held back (not logged)

	paused     bool
	pauseLen   int64 // nanoseconds
	pauseUntil int64 // Unix nanoseconds

	// next is the earliest of the due time of the first delayed job, the
	// end of the first reservation and the end of the pause; never when
	// there is none. sidx is the tube's index in Store.sched, -1 when it
	// is not there (next == never).
	next int64
	sidx int

	// fam is the family of a tube with groups or of a group (groups.go),
	// nil for other tubes; rprev and rnext link it in the family's
	// rotation while inRot.
	fam          *family
	rprev, rnext *tube
	inRot        bool
}

func newTube(name string, seq uint64) *tube {
	return &tube{
		name:     name,
		seq:      seq,
		ready:    jobHeap{less: readyLess, byPri: true},
		delayed:  jobHeap{less: atLess},
		reserved: jobHeap{less: atLess},
		buried:   jobHeap{less: atLess},
		kept:     jobHeap{less: atLess},
		next:     never,
		sidx:     -1,
	}
}

func (t *tube) heap(s queue.State) *jobHeap {
	switch s {
	case queue.Ready:
		return &t.ready
	case queue.Delayed:
		return &t.delayed
	case queue.Reserved:
		return &t.reserved
	case queue.Buried:
		return &t.buried
	}
	panic("memstore: no heap for state " + s.String())
}

// holder returns the live job of t (nil: none) that holds unique key k; a
// kept job's key does not make a put a duplicate. t may be nil.
func (t *tube) holder(k string) *job {
	if t == nil || k == "" {
		return nil
	}
	if j := t.keys[k]; j != nil && j.state != queue.Finished {
		return j
	}
	return nil
}

// dupOf returns the job of t (nil: none) of which a put of nj at now is a
// duplicate: the live job holding its key, or the kept one holding it
// while its window holds or when nj asks UniqueKept. t may be nil.
func (t *tube) dupOf(nj queue.NewJob, now int64) *job {
	if t == nil || nj.UniqueKey == "" {
		return nil
	}
	j := t.keys[nj.UniqueKey]
	if j == nil || j.state == queue.Finished && !nj.UniqueKept && now >= j.window() {
		return nil
	}
	return j
}

func (t *tube) jobs() int {
	return t.ready.len() + t.delayed.len() + t.reserved.len() + t.buried.len()
}

// deadline computes next: liveDue, or the drop of a kept job when sooner.
func (t *tube) deadline() int64 {
	d := t.liveDue()
	if j := t.kept.top(); j != nil && j.at < d {
		d = j.at
	}
	return d
}

// liveDue is the earliest time a job of t may become ready (a delay, a
// TTR or a pause running out), or never: what a reserve that found
// nothing waits for. A kept job's drop is not one.
func (t *tube) liveDue() int64 {
	d := int64(never)
	if j := t.delayed.top(); j != nil {
		d = j.at
	}
	if j := t.reserved.top(); j != nil && j.at < d {
		d = j.at
	}
	if t.paused && t.pauseUntil < d {
		d = t.pauseUntil
	}
	return d
}

// tubeHeap orders the tubes that have a deadline by it, so that the store
// finds what is due, and when to wake, in O(log tubes).
type tubeHeap []*tube

func (h *tubeHeap) less(i, k int) bool { return (*h)[i].next < (*h)[k].next }

func (h *tubeHeap) swap(i, k int) {
	s := *h
	s[i], s[k] = s[k], s[i]
	s[i].sidx = i
	s[k].sidx = k
}

func (h *tubeHeap) top() *tube {
	if len(*h) == 0 {
		return nil
	}
	return (*h)[0]
}

// set moves t to its place for deadline next, adding or removing it.
func (h *tubeHeap) set(t *tube, next int64) {
	old := t.next
	t.next = next
	switch {
	case t.sidx < 0 && next == never:
	case t.sidx < 0:
		t.sidx = len(*h)
		*h = append(*h, t)
		h.up(t.sidx)
	case next == never:
		i, n := t.sidx, len(*h)-1
		if i != n {
			h.swap(i, n)
		}
		(*h)[n] = nil
		*h = (*h)[:n]
		t.sidx = -1
		if i != n {
			h.down(i)
			h.up(i)
		}
	case next < old:
		h.up(t.sidx)
	case next > old:
		h.down(t.sidx)
	}
}

func (h *tubeHeap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(i, p) {
			return
		}
		h.swap(i, p)
		i = p
	}
}

func (h *tubeHeap) down(i int) {
	n := len(*h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && h.less(r, l) {
			m = r
		}
		if !h.less(m, i) {
			return
		}
		h.swap(i, m)
		i = m
	}
}
