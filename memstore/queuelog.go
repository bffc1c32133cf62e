package memstore

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/hourglass-io/hourglass/internal/wal"
	"github.com/hourglass-io/hourglass/queue"
)

// Record kinds of the job queue: the range 1–31 (see register in part.go).
// A kind's layout never changes once released: a new layout is a new kind.
const (
	// Snapshot records: the state at the snapshot's cut.
	kindQueueMeta = 1 // lastID, tubeSeq, burySeq
	kindTube      = 2 // a tube, its counters and its pause
	kindJob       = 3 // a job, its tube named by sequence number
	// Log records: one per change.
	kindPut    = 4 // a job put; its tube named
	kindDelete = 5 // a job deleted
	kindUpdate = 6 // a job's new state, priority, delay, due time and counters
	kindPause  = 7 // a tube paused or unpaused
	kindHold   = 8 // a tube's references began or ended (log and snapshot)
	// Since job history: kindJob and kindUpdate followed by the history.
	// The engine writes these; it still reads the two older kinds (a job
	// without history).
	kindJobH    = 9  // snapshot: a job with its history
	kindUpdateH = 10 // log: an update with the job's history
	// kindLimit = 11: a tube's limits (tubelimits.go), log and snapshot.
	// 12–16: kept jobs, retentions and key windows (keep.go); 17: a
	// debounce put's change of a job (debounce.go).
	// kindCancel = 18: a job cancelled (cancel.go), log; 18–21 are the
	// cancels'.
	// Since trace contexts (docs/tracing.md): kindPut and kindJobH
	// followed by the job's trace context, for a job that carries one; a
	// job without one is still written with the older kinds.
	kindPutT  = 22 // log: a put with a trace context
	kindJobHT = 23 // snapshot: a job with its history and trace context
	// Since the error history (queue.JobStats.Errors): a release or bury
	// that gives a reason logs kindUpdateE, whose replay appends the
	// error it carries to the job's history; a snapshot writes a job's
	// history, when it has one, in a kindErrors after the job's record.
	// kindBehind = 28: a job held behind another (behind.go), log and
	// snapshot; 29 is free.
	kindErrors  = 26 // snapshot: a job's error history
	kindUpdateE = 27 // log: an update that records an error of an attempt
)

// updateKind is the kind of the update a release or bury with reason
// logs.
func updateKind(reason string) byte {
	if reason != "" {
		return kindUpdateE
	}
	return kindUpdateH
}

// Layouts (u: uvarint, v: varint, s: u length + bytes):
//
//	queueMeta  u lastID, u tubeSeq, v burySeq
//	tube       u seq, s name, v totalJobs, v deletes, v pauses, byte paused, v pauseLen, v pauseUntil
//	job/put    u id, (job: u tube seq | put: s tube name), byte state, u pri, v at, v ttr, v delay,
//	           v created, u reserves, u timeouts, u releases, u buries, u kicks, s key; then the body
//	delete     u id
//	update     u id, byte state, u pri, v at, v delay, u reserves, u timeouts, u releases, u buries, u kicks
//	jobH       job's fields, then history; then the body
//	updateH    update's fields, then history
//	history    v reserved, v released, v buried, v kicked, v timedOut, v errAt, s lastErr
//	           (times Unix ns, 0 for never)
//	putT       put's fields, then s trace context; then the body
//	jobHT      jobH's fields (history included), then s trace context; then the body
//	errors     u id, u n, then n times: v at (Unix ns), u attempt, s reason
//	           (oldest first; after the job's jobH, jobHT or kept record)
//	updateE    updateH's layout; its replay appends the error it records
//	           (the history's errAt and lastErr, the counters' reserves as
//	           the attempt) to the job's error history
//	pause      s tube name, v pauseLen, v pauseUntil (0 and 0: unpaused)
//	hold       s tube name, byte 1 held / 0 not, v time (Unix ns)
//	cancel     u id, s reason
//	behind     u running job's id, u held job's id (behind.go)
//
// References (Store.Hold) are not durable, but whether a tube has any is
// logged when it changes, so that a replay keeps a tube's counters exactly
// as long as the running store did; Open then ends every reference (no
// connection outlives the process) and logs that.
//
// A reserved job is written as ready: reservations are not logged, so a
// reserved job comes back ready after a restart, as in beanstalkd. Nor are
// timeouts: a job's reserves and timeouts counts, and the times of its last
// reserve and timeout, are as its last logged change (or a snapshot) left
// them.

// durableState is the state a job is written with.
func durableState(j *job) (queue.State, int64) {
	if j.state == queue.Reserved {
		return queue.Ready, 0
	}
	return j.state, j.at
}

// encodeJob encodes the fields of a put (inSnapshot false) or job record;
// the body follows them.
func (q *jobQueue) encodeJob(j *job, inSnapshot bool) []byte {
	b := q.e.scratch[:0]
	b = binary.AppendUvarint(b, uint64(j.id))
	if inSnapshot {
		b = binary.AppendUvarint(b, j.tube.seq)
	} else {
		b = appendString(b, j.tube.name)
	}
	st, at := durableState(j)
	b = append(b, byte(st))
	b = binary.AppendUvarint(b, uint64(j.pri))
	b = binary.AppendVarint(b, at)
	b = binary.AppendVarint(b, j.ttr)
	b = binary.AppendVarint(b, j.delay)
	b = binary.AppendVarint(b, j.created)
	b = appendCounters(b, j)
	b = appendString(b, j.key())
	if inSnapshot {
		b = appendHistory(b, j)
	}
	q.e.scratch = b
	return b
}

func (q *jobQueue) encodeUpdate(j *job) []byte {
	b := q.e.scratch[:0]
	b = binary.AppendUvarint(b, uint64(j.id))
	st, at := durableState(j)
	b = append(b, byte(st))
	b = binary.AppendUvarint(b, uint64(j.pri))
	b = binary.AppendVarint(b, at)
	b = binary.AppendVarint(b, j.delay)
	b = appendCounters(b, j)
	b = appendHistory(b, j)
	q.e.scratch = b
	return b
}

func (q *jobQueue) encodeDelete(id queue.ID) []byte {
	q.e.scratch = binary.AppendUvarint(q.e.scratch[:0], uint64(id))
	return q.e.scratch
}

func (q *jobQueue) encodeHold(t *tube, now int64) []byte {
	b := appendString(q.e.scratch[:0], t.name)
	held := byte(0)
	if t.refs > 0 {
		held = 1
	}
	b = append(b, held)
	b = binary.AppendVarint(b, now)
	q.e.scratch = b
	return b
}

func (q *jobQueue) encodePause(t *tube) []byte {
	b := appendString(q.e.scratch[:0], t.name)
	b = binary.AppendVarint(b, t.pauseLen)
	b = binary.AppendVarint(b, t.pauseUntil)
	q.e.scratch = b
	return b
}

func appendCounters(b []byte, j *job) []byte {
	for _, c := range [...]uint32{j.reserves, j.timeouts, j.releases, j.buries, j.kicks} {
		b = binary.AppendUvarint(b, uint64(c))
	}
	return b
}

// encodeErrors encodes j's error history (a kindErrors record).
func (q *jobQueue) encodeErrors(j *job) []byte {
	errs := j.errors()
	b := binary.AppendUvarint(q.e.scratch[:0], uint64(j.id))
	b = binary.AppendUvarint(b, uint64(len(errs)))
	for _, e := range errs {
		b = binary.AppendVarint(b, e.At.UnixNano())
		b = binary.AppendUvarint(b, uint64(e.Attempt))
		b = appendString(b, e.Reason)
	}
	q.e.scratch = b
	return b
}

// replayErrors applies a kindErrors record: the error history of a job
// just replayed from the snapshot, live or kept.
func (q *jobQueue) replayErrors(d *decoder) error {
	id := queue.ID(d.uvarint())
	n := d.uvarint()
	if n == 0 || n > queue.MaxErrors {
		return errBadRecord
	}
	errs := make([]queue.AttemptError, 0, n)
	size := 0
	for range n {
		e := queue.AttemptError{At: timeOf(d.varint()), Attempt: d.u32(), Reason: d.string()}
		size += len(e.Reason)
		if e.Reason == "" || len(e.Reason) > queue.MaxReasonLen || size > queue.MaxErrorBytes {
			d.err = errBadRecord
		}
		errs = append(errs, e)
	}
	j, err := loggedJob(d, "error history", id, q.jobs, q.kept)
	if err != nil {
		return err
	}
	if j.more == nil {
		j.more = &jobMore{}
	}
	j.more.errs = errs
	return nil
}

func appendHistory(b []byte, j *job) []byte {
	var h history
	if j.more != nil {
		h = j.more.history
	}
	for _, t := range [...]int64{j.reserved, h.released, h.buried, h.kicked, h.timedOut, h.errAt} {
		b = binary.AppendVarint(b, t)
	}
	return appendString(b, h.lastErr)
}

// snapshot adds the whole queue state to w.
func (q *jobQueue) snapshot(w *wal.SnapshotWriter) {
	w.Grow(1 + len(q.tubes) + len(q.jobs) + len(q.tubeLimits) + len(q.kept) + len(q.retain) + len(q.behind))
	b := binary.AppendUvarint(q.e.scratch[:0], uint64(q.lastID))
	b = binary.AppendUvarint(b, q.tubeSeq)
	b = binary.AppendVarint(b, q.burySeq)
	w.Add(kindQueueMeta, b, nil)
	for _, t := range q.tubesInOrder() {
		b = binary.AppendUvarint(b[:0], t.seq)
		b = appendString(b, t.name)
		b = binary.AppendVarint(b, t.totalJobs)
		b = binary.AppendVarint(b, t.deletes)
		b = binary.AppendVarint(b, t.pauses)
		paused := byte(0)
		if t.paused {
			paused = 1
		}
		b = append(b, paused)
		b = binary.AppendVarint(b, t.pauseLen)
		b = binary.AppendVarint(b, t.pauseUntil)
		w.Add(kindTube, b, nil)
		if t.refs > 0 {
			w.Add(kindHold, q.encodeHold(t, 0), nil)
			b = q.e.scratch[:0]
		}
		for _, h := range []*jobHeap{&t.ready, &t.delayed, &t.reserved, &t.buried} {
			for _, j := range h.s {
				b := q.encodeJob(j, true)
				kind := byte(kindJobH)
				if tc := j.traceContext(); tc != "" {
					kind, b = kindJobHT, appendString(b, tc)
					q.e.scratch = b
				}
				w.Add(kind, b, j.body)
				if j.more != nil && j.more.ufor > 0 {
					w.Add(kindKeyX, q.encodeKeyX(j), nil)
				}
				if len(j.errors()) > 0 {
					w.Add(kindErrors, q.encodeErrors(j), nil)
				}
			}
		}
		q.snapshotKept(t, w)
		b = q.e.scratch[:0]
	}
	q.e.scratch = b[:0]
	q.snapshotBehind(w)
	q.snapshotLimits(func(kind byte, head []byte) { w.Add(kind, head, nil) })
	q.snapshotRetain(w)
}

func (q *jobQueue) tubesInOrder() []*tube {
	ts := make([]*tube, 0, len(q.tubes))
	for _, t := range q.tubes {
		ts = append(ts, t)
	}
	slices.SortFunc(ts, func(a, b *tube) int { return cmp.Compare(a.seq, b.seq) })
	return ts
}

func (d *decoder) counters(j *job) {
	j.reserves, j.timeouts, j.releases, j.buries, j.kicks = d.u32(), d.u32(), d.u32(), d.u32(), d.u32()
}

// history reads the history of a jobH or updateH record into j.
func (d *decoder) history(j *job) {
	j.reserved = d.varint()
	h := history{released: d.varint(), buried: d.varint(), kicked: d.varint(), timedOut: d.varint(), errAt: d.varint()}
	h.lastErr = d.string()
	if len(h.lastErr) > queue.MaxReasonLen {
		d.err = errBadRecord
	}
	j.setHistory(h)
}

func state(b byte) (queue.State, error) {
	switch st := queue.State(b); st {
	case queue.Ready, queue.Delayed, queue.Buried:
		return st, nil
	}
	return 0, fmt.Errorf("job state %d in the log", b)
}

// replay applies one record of the queue's kinds at Open.
func (q *jobQueue) replay(kind byte, d *decoder) error {
	switch kind {
	case kindQueueMeta:
		return q.replayMeta(d)

	case kindTube:
		return q.replayTube(d)

	case kindJob, kindJobH, kindPut, kindPutT, kindJobHT:
		return q.replayJob(kind, d)

	case kindDelete:
		return q.replayDelete(d)

	case kindUpdate, kindUpdateH, kindUpdateE:
		return q.replayUpdate(kind, d)

	case kindPause:
		return q.replayPause(d)

	case kindLimit:
		return q.replayLimit(d)

	case kindRetain, kindFinish, kindKept, kindDrop, kindKeyX:
		return q.replayKeep(kind, d)

	case kindDebounce:
		return q.replayDebounce(d)

	case kindCancel, kindCancelKept:
		return q.replayCancel(kind, d)

	case kindErrors:
		return q.replayErrors(d)

	case kindBehind:
		return q.replayBehind(d)

	case kindHold:
		return q.replayHold(d)
	}
	return fmt.Errorf("unknown record kind %d", kind)
}

// replayMeta replays the queue's counters (kindQueueMeta).
func (q *jobQueue) replayMeta(d *decoder) error {
	q.lastID = queue.ID(d.uvarint())
	q.tubeSeq = d.uvarint()
	q.burySeq = d.varint()
	return d.end()
}

// replayTube replays a tube of the snapshot (kindTube).
func (q *jobQueue) replayTube(d *decoder) error {
	t := newTube("", d.uvarint())
	t.name = d.string()
	t.totalJobs, t.deletes, t.pauses = d.varint(), d.varint(), d.varint()
	t.paused = d.byte() == 1
	t.pauseLen, t.pauseUntil = d.varint(), d.varint()
	if err := d.end(); err != nil {
		return err
	}
	if q.tubes[t.name] != nil || q.replayTubes[t.seq] != nil {
		return fmt.Errorf("tube %q twice in the snapshot", t.name)
	}
	q.tubes[t.name] = t
	if f := q.familyOf(t.name); f != nil {
		q.attach(t, f)
	}
	q.replayTubes[t.seq] = t
	q.tubeSeq = max(q.tubeSeq, t.seq)
	q.resched(t)
	return nil
}

// replayJob replays a job of the snapshot or a put (kindJob, kindJobH, kindJobHT, kindPut, kindPutT).
func (q *jobQueue) replayJob(kind byte, d *decoder) error {
	put := kind == kindPut || kind == kindPutT
	j := &job{id: queue.ID(d.uvarint()), hidx: -1}
	var seq uint64
	var name string
	if !put {
		seq = d.uvarint()
	} else {
		name = d.string()
	}
	st, err := state(d.byte())
	j.pri = d.u32()
	j.at, j.ttr, j.delay, j.created = d.varint(), d.varint(), d.varint(), d.varint()
	d.counters(j)
	j.setKey(d.string())
	if kind == kindJobH || kind == kindJobHT {
		d.history(j)
	}
	if kind == kindPutT || kind == kindJobHT {
		tc := d.string()
		if tc == "" || queue.CheckTraceContext(tc) != nil {
			d.err = errBadRecord
		}
		j.setTrace(tc)
	}
	if d.err != nil {
		return d.err
	}
	if err != nil {
		return err
	}
	var t *tube
	if !put {
		t = q.replayTubes[seq]
	} else {
		q.replayPauseEnd(name, j.created)
		t = q.tubeFor(name)
	}
	if t == nil {
		return errors.New("job of an unknown tube")
	}
	if j.id == 0 || j.id > queue.MaxID || q.jobs[j.id] != nil {
		return fmt.Errorf("job %d put twice", j.id)
	}
	if k := j.key(); k != "" && t.holder(k) != nil {
		return fmt.Errorf("job %d: unique key held by job %d", j.id, t.keys[k].id)
	}
	j.tube = t
	j.body = slices.Clone(d.b)
	if j.body == nil {
		j.body = []byte{}
	}
	q.lastID = max(q.lastID, j.id)
	if st == queue.Buried {
		q.burySeq = max(q.burySeq, j.at)
	}
	if put {
		t.totalJobs++
	}
	q.addJob(j, st)
	return nil
}

// loggedJob ends the reading of a record about job id and returns the job
// from the first of in (q.jobs, q.kept) that holds it: an error when the
// record is malformed, or when no map holds the job (what names the
// record's change).
func loggedJob(d *decoder, what string, id queue.ID, in ...map[queue.ID]*job) (*job, error) {
	if err := d.end(); err != nil {
		return nil, err
	}
	for _, m := range in {
		if j := m[id]; j != nil {
			return j, nil
		}
	}
	return nil, fmt.Errorf("%s of unknown job %d", what, id)
}

// replayDelete replays a job deleted (kindDelete).
func (q *jobQueue) replayDelete(d *decoder) error {
	id := queue.ID(d.uvarint())
	j, err := loggedJob(d, "delete", id, q.jobs)
	if err != nil {
		return err
	}
	q.removeJob(j)
	return nil
}

// replayUpdate replays a job's change of state (kindUpdate, kindUpdateH).
func (q *jobQueue) replayUpdate(kind byte, d *decoder) error {
	id := queue.ID(d.uvarint())
	st, stateErr := state(d.byte())
	pri := d.u32()
	at, delay := d.varint(), d.varint()
	var c job
	d.counters(&c)
	if kind != kindUpdate {
		d.history(&c)
		if kind == kindUpdateE && (c.more == nil || c.more.lastErr == "") {
			d.err = errBadRecord
		}
	}
	j, err := loggedJob(d, "update", id, q.jobs)
	if err != nil {
		return err
	}
	if stateErr != nil {
		return stateErr
	}
	q.unlink(j)
	j.pri, j.at, j.delay = pri, at, delay
	j.reserves, j.timeouts, j.releases, j.buries, j.kicks = c.reserves, c.timeouts, c.releases, c.buries, c.kicks
	if kind != kindUpdate {
		j.reserved = c.reserved
		var h history
		if c.more != nil {
			h = c.more.history
		}
		j.setHistory(h)
	}
	if kind == kindUpdateE {
		j.appendError(queue.AttemptError{At: timeOf(j.more.errAt), Attempt: j.reserves, Reason: j.more.lastErr})
	}
	if st == queue.Buried {
		q.burySeq = max(q.burySeq, at)
	}
	q.link(j, st)
	if st == queue.Buried {
		q.endedBehind(j)
	}
	return nil
}

// replayPause replays a tube paused (kindPause).
func (q *jobQueue) replayPause(d *decoder) error {
	name := d.string()
	plen, until := d.varint(), d.varint()
	if err := d.end(); err != nil {
		return err
	}
	if plen > 0 {
		q.replayPauseEnd(name, until-plen)
	}
	q.setPause(q.tubeFor(name), plen, until)
	return nil
}

// replayHold replays whether a tube had references (kindHold).
func (q *jobQueue) replayHold(d *decoder) error {
	name := d.string()
	held := d.byte()
	now := d.varint()
	if err := d.end(); err != nil {
		return err
	}
	q.replayPauseEnd(name, now)
	t := q.tubeFor(name)
	t.refs = int64(held) // a replay knows whether a tube had references, not whose
	q.gcTube(t)
	return nil
}

// replayPauseEnd ends the pause of tube name if it had ended at now, the
// time of the record being replayed, as the operation that wrote the record
// did before it. Only puts and pauses carry their time, and only they can
// find an empty tube whose pause ended (and so a new tube, with fresh
// counters and a later place in Tubes).
func (q *jobQueue) replayPauseEnd(name string, now int64) {
	if t := q.tubes[name]; t != nil && t.paused && t.pauseUntil <= now {
		t.paused, t.pauseLen, t.pauseUntil = false, 0, 0
		q.resched(t)
		q.gcTube(t)
	}
}

// setPause pauses t for plen nanoseconds until until, or unpauses it when
// plen is 0, counting a pause.
func (q *jobQueue) setPause(t *tube, plen, until int64) {
	t.pauses++
	t.paused, t.pauseLen, t.pauseUntil = plen > 0, plen, until
	if plen == 0 {
		t.pauseUntil = 0
	}
	q.resched(t)
	q.gcTube(t)
}
