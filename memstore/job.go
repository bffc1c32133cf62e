package memstore

import (
	"container/heap"

	"github.com/hourglass-io/hourglass/queue"
)

// job is one job. It is in exactly one of its tube's four state heaps, the
// one its state names, at index hidx.
type job struct {
	id    queue.ID
	tube  *tube
	state queue.State
	pri   uint32
	hidx  int32 // index in the heap of state
	// at orders the job in its state heap after pri (ready) or before id:
	// delayed, the due time; reserved, the end of the TTR; buried, the bury
	// sequence number (FIFO). Times are Unix nanoseconds of the store clock.
	at      int64
	ttr     int64 // nanoseconds
	delay   int64 // of the last put or release, nanoseconds
	created int64 // Unix nanoseconds

	reserves, timeouts, releases, buries, kicks uint32

	reserved int64    // the last reserve, Unix nanoseconds; 0 for never
	more     *jobMore // nil unless the job has a unique key or a history

	owner string // who holds the reservation; "" unless reserved
	body  []byte // never modified once stored
}

// jobMore is what most jobs do not have: a unique key, and a history
// beyond the put and the last reserve. A job gets one when it is put with
// a key or at its first release, bury, kick or timeout, so a job that is
// put without a key, reserved and deleted costs no more than the job
// struct (whose key field this replaced).
type jobMore struct {
	key   string // the UniqueKey; "" for none
	trace string // the trace context (queue.NewJob.TraceContext); "" for none
	history
	kept *kept // a kept job's end and result (keep.go); nil while live
	ufor int64 // NewJob.UniqueFor, ns; 0 for none
	// errs is the error history (queue.JobStats.Errors), oldest first,
	// within queue.MaxErrors and MaxErrorBytes (queue.AppendError).
	errs []queue.AttemptError
}

// window is the end (Unix ns) of the window j's put opened on its key,
// 0 for none.
func (j *job) window() int64 {
	if j.more == nil || j.more.ufor == 0 {
		return 0
	}
	return j.created + j.more.ufor
}

// setKept marks j as kept with k.
func (j *job) setKept(k *kept) {
	if j.more == nil {
		j.more = &jobMore{}
	}
	j.more.kept = k
}

// history is what a job keeps of its transitions beyond its put and its
// last reserve. Times are Unix nanoseconds of the store clock, 0 for never.
type history struct {
	released, buried, kicked, timedOut int64
	errAt                              int64  // when lastErr was given
	lastErr                            string // at most queue.MaxReasonLen bytes
}

// key returns j's UniqueKey, "" for none.
func (j *job) key() string {
	if j.more == nil {
		return ""
	}
	return j.more.key
}

// setKey gives j the UniqueKey k (a new job, or one being replayed).
func (j *job) setKey(k string) {
	if k != "" {
		j.more = &jobMore{key: k}
	}
}

// traceContext returns j's trace context, "" for none.
func (j *job) traceContext() string {
	if j.more == nil {
		return ""
	}
	return j.more.trace
}

// setTrace gives j the trace context tc (a new job, or one being replayed).
func (j *job) setTrace(tc string) {
	if tc != "" {
		if j.more == nil {
			j.more = &jobMore{}
		}
		j.more.trace = tc
	}
}

// history returns j's history, making room for it if j has none.
func (j *job) history() *history {
	if j.more == nil {
		j.more = &jobMore{}
	}
	return &j.more.history
}

// setHistory replaces j's history (a replayed record's).
func (j *job) setHistory(h history) {
	if j.more != nil || h != (history{}) {
		*j.history() = h
	}
}

// noteError records a release's or a bury's reason at now; an empty reason
// changes nothing.
func (j *job) noteError(reason string, now int64) {
	if reason != "" {
		h := j.history()
		h.lastErr, h.errAt = reason, now
	}
}

// noteAttemptError records the reason a release or a bury gave at now:
// the last error, and an entry of the error history for the reservation
// it ended. An empty reason changes nothing.
func (j *job) noteAttemptError(reason string, now int64) {
	if reason != "" {
		j.noteError(reason, now)
		j.appendError(queue.AttemptError{At: timeOf(now), Attempt: j.reserves, Reason: reason})
	}
}

// appendError adds e to j's error history.
func (j *job) appendError(e queue.AttemptError) {
	if j.more == nil {
		j.more = &jobMore{}
	}
	j.more.errs = queue.AppendError(j.more.errs, e)
}

// errors returns j's error history (nil for none); the caller must not
// modify it.
func (j *job) errors() []queue.AttemptError {
	if j.more == nil {
		return nil
	}
	return j.more.errs
}

// export returns the job as Reserve and Peek return it, with its own copy of
// the body.
func (j *job) export() queue.Job {
	return queue.Job{
		ID:        j.id,
		Tube:      j.tube.name,
		Priority:  j.pri,
		TTR:       durationOf(j.ttr),
		Reserves:  j.reserves,
		Body:      append(make([]byte, 0, len(j.body)), j.body...),
		UniqueKey: j.key(),

		TraceContext: j.traceContext(),
	}
}

// exportHeld is export for a job just reserved or touched at now, with the
// time left on its reservation.
func (j *job) exportHeld(now int64) queue.Job {
	out := j.export()
	out.Left = durationOf(j.at - now)
	return out
}

// The orders of the state heaps. Ties go by ID, so every order is total.
func readyLess(a, b *job) bool {
	if a.pri != b.pri {
		return a.pri < b.pri
	}
	return a.id < b.id
}

func atLess(a, b *job) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	return a.id < b.id
}

// heapKey is what a jobHeap orders a job by: (pri, id) in the ready heap,
// (at, id) in the others. The heap keeps each job's key beside it, so that
// a sift compares keys in one array and reads no job but those it moves.
type heapKey struct {
	k  int64 // pri or at
	id queue.ID
}

func (a heapKey) less(b heapKey) bool { return a.k < b.k || a.k == b.k && a.id < b.id }

// jobHeap is a 4-ary min-heap of jobs that keeps each job's index in it,
// so that any job can be removed in O(log n). Four children a node halve
// the levels a sift passes through beside a binary heap: a reserve takes
// the least of 20,000 ready jobs through 7 levels rather than 14, and
// each level moves one job, whose index is written in the job itself (a
// cache miss in a large heap) once, not twice as a swap would.
type jobHeap struct {
	s []*job
	// k holds the key of each job of s, taken as it was pushed: a job's pri
	// and at do not change while it is in a heap (it is taken out, changed
	// and put back).
	k     []heapKey
	less  func(a, b *job) bool // the order of the keys, for first and check
	byPri bool                 // keys are (pri, id) (readyLess), else (at, id) (atLess)
}

// heapArity is the number of children of a node of a jobHeap.
const heapArity = 4

func heapParent(i int) int { return (i - 1) / heapArity }

func heapChild(i int) int { return heapArity*i + 1 } // the first

func (h *jobHeap) key(j *job) heapKey {
	if h.byPri {
		return heapKey{int64(j.pri), j.id}
	}
	return heapKey{j.at, j.id}
}

func (h *jobHeap) len() int { return len(h.s) }

// top returns the least job, or nil.
func (h *jobHeap) top() *job {
	if len(h.s) == 0 {
		return nil
	}
	return h.s[0]
}

func (h *jobHeap) push(j *job) {
	h.s = append(h.s, j)
	h.k = append(h.k, h.key(j))
	h.up(len(h.s) - 1)
}

// remove takes j out of the heap.
func (h *jobHeap) remove(j *job) {
	i := int(j.hidx)
	n := len(h.s) - 1
	last, lastKey := h.s[n], h.k[n]
	h.s[n] = nil
	h.s, h.k = h.s[:n], h.k[:n]
	if i != n {
		// The last job fills the hole and sifts to its place.
		h.s[i], h.k[i] = last, lastKey
		if !h.down(i) {
			h.up(i)
		}
	}
	j.hidx = -1
	// Give memory back after a burst.
	if c := cap(h.s); c > 1024 && len(h.s) < c/4 {
		h.s = append(make([]*job, 0, c/2), h.s...)
		h.k = append(make([]heapKey, 0, c/2), h.k...)
	}
}

// up sifts the job at i up: the parents greater than it move down one
// level each, and it takes the place they leave.
func (h *jobHeap) up(i int) {
	j, k := h.s[i], h.k[i]
	for i > 0 {
		p := heapParent(i)
		if !k.less(h.k[p]) {
			break
		}
		h.s[i], h.k[i] = h.s[p], h.k[p]
		h.s[i].hidx = int32(i)
		i = p
	}
	h.s[i], h.k[i] = j, k
	j.hidx = int32(i)
}

// down sifts the job at i0 down, the least child moving up each level,
// and reports whether it moved.
func (h *jobHeap) down(i0 int) bool {
	i, n := i0, len(h.s)
	j, k := h.s[i], h.k[i]
	for {
		c := heapChild(i)
		if c >= n {
			break
		}
		m := c
		for x := c + 1; x < min(c+heapArity, n); x++ {
			if h.k[x].less(h.k[m]) {
				m = x
			}
		}
		if !h.k[m].less(k) {
			break
		}
		h.s[i], h.k[i] = h.s[m], h.k[m]
		h.s[i].hidx = int32(i)
		i = m
	}
	h.s[i], h.k[i] = j, k
	j.hidx = int32(i)
	return i > i0
}

// check verifies the heap property, the indexes and the keys.
func (h *jobHeap) check() (bad *job, ok bool) {
	for i, j := range h.s {
		if int(j.hidx) != i || h.k[i] != h.key(j) {
			return j, false
		}
		if i > 0 && h.less(j, h.s[heapParent(i)]) {
			return j, false
		}
	}
	return nil, true
}

// first calls f with the n least jobs of the heap, least first, without
// changing the heap: a second heap of the candidates (the children of the
// jobs taken so far) yields them in order in O(n log n).
func (h *jobHeap) first(n int, f func(*job)) {
	if len(h.s) == 0 {
		return
	}
	front := indexHeap{h: h, i: []int{0}}
	for taken := 0; taken < n && len(front.i) > 0; taken++ {
		i := heap.Pop(&front).(int)
		f(h.s[i])
		for c := heapChild(i); c < min(heapChild(i)+heapArity, len(h.s)); c++ {
			heap.Push(&front, c)
		}
	}
}

// indexHeap orders positions of a jobHeap by their jobs.
type indexHeap struct {
	h *jobHeap
	i []int
}

func (x *indexHeap) Len() int           { return len(x.i) }
func (x *indexHeap) Less(a, b int) bool { return x.h.less(x.h.s[x.i[a]], x.h.s[x.i[b]]) }
func (x *indexHeap) Swap(a, b int)      { x.i[a], x.i[b] = x.i[b], x.i[a] }
func (x *indexHeap) Push(v any)         { x.i = append(x.i, v.(int)) }
func (x *indexHeap) Pop() any {
	v := x.i[len(x.i)-1]
	x.i = x.i[:len(x.i)-1]
	return v
}
