package memstore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/hourglass-io/hourglass/internal/wal"
	"github.com/hourglass-io/hourglass/queue"
)

// Kept jobs (queue.KeepStore): the record kinds 12–17 of the queue's range.
// A kind's layout never changes once released: a new layout is a new kind.
const (
	// kindRetain: a tube's retention set (log and snapshot): s tube name,
	// v retention (ns; 0 clears it).
	kindRetain = 12
	// kindFinish: a live job ended and kept (log): u id, byte how (1
	// finished), v ended at (Unix ns), v dropped at (Unix ns), s result.
	kindFinish = 13
	// kindKept: a kept job (snapshot): the fields of a jobH record (its
	// tube by sequence number, state byte 5), then byte how, v ended at,
	// v dropped at, s result; then the body.
	kindKept = 14
	// kindDrop: a kept job dropped at its deadline (log): u id.
	kindDrop = 15
	// kindKeyX: what a job has of the keys in time, after the record that
	// puts or holds it (log and snapshot): u id, v UniqueFor (ns), then
	// two varints written 0 and not read (a debounce needs only the job's
	// put time: debounce.go, kind 17).
	kindKeyX = 16
)

// How a kept job ended (kept.how).
const (
	keptFinished  = 1
	keptCancelled = 2 // cancel.go
)

func (q *jobQueue) encodeKeyX(j *job) []byte {
	b := binary.AppendUvarint(q.e.scratch[:0], uint64(j.id))
	b = binary.AppendVarint(b, j.more.ufor)
	b = binary.AppendVarint(b, 0)
	b = binary.AppendVarint(b, 0)
	q.e.scratch = b
	return b
}

// kept is what a kept job has beyond a live one.
type kept struct {
	how     byte  // keptFinished, keptCancelled
	endedAt int64 // Unix ns
	result  []byte
}

// keptSize estimates the bytes a kept job takes in a snapshot.
func keptSize(j *job) int64 { return jobSize(j) + 16 + int64(len(j.more.kept.result)) }

// SetRetention is the part's side of Store.SetRetention (queuestore.go).
func (q *jobQueue) SetRetention(ctx context.Context, tube string, d time.Duration) error {
	return write(ctx, q.tx(), func(int64) (wal.Ticket, error) {
		q.setRetentionLocked(tube, int64(d))
		b := appendString(q.e.scratch[:0], tube)
		b = binary.AppendVarint(b, int64(d))
		q.e.scratch = b
		return q.e.append(kindRetain, b, nil), nil
	})
}

func (q *jobQueue) setRetentionLocked(tube string, d int64) {
	if d <= 0 {
		delete(q.retain, tube)
		return
	}
	if q.retain == nil {
		q.retain = map[string]int64{}
	}
	q.retain[tube] = d
}

// Retention is the part's side of Store.Retention (queuestore.go).
func (q *jobQueue) Retention(ctx context.Context, tube string) (time.Duration, error) {
	return read(ctx, q.tx(), func(int64) (time.Duration, error) { return durationOf(q.retain[tube]), nil })
}

// Finish is the part's side of Store.Finish (queuestore.go).
func (q *jobQueue) Finish(ctx context.Context, owner string, id queue.ID, result []byte) error {
	return write(ctx, q.tx().sized(smallRecord+int64(len(result))), func(now int64) (wal.Ticket, error) {
		return q.endLocked(owner, id, result, now)
	})
}

// endLocked ends job id for owner, as a delete: it keeps the job with
// result when its tube has a retention, and deletes it otherwise.
func (q *jobQueue) endLocked(owner string, id queue.ID, result []byte, now int64) (wal.Ticket, error) {
	j, err := q.endable(owner, id)
	if err != nil {
		return 0, err
	}
	r, w := q.retain[j.tube.name], j.window()
	if r <= 0 && w <= now {
		return q.deleteLocked(j), nil
	}
	drop := now + r
	if r <= 0 {
		drop = w // kept while its key's window holds, not beyond
	}
	drop = max(drop, w)
	k := &kept{how: keptFinished, endedAt: now, result: slices.Clone(result)}
	q.keepLocked(j, k, drop)
	b := binary.AppendUvarint(q.e.scratch[:0], uint64(id))
	b = append(b, k.how)
	b = binary.AppendVarint(b, k.endedAt)
	b = binary.AppendVarint(b, j.at)
	b = appendString(b, string(k.result))
	q.e.scratch = b
	return q.e.append(kindFinish, b, nil), nil
}

// keepLocked takes the live job j out of its tube's states, counting a
// delete when it was finished (a cancel counts itself), and keeps it as k
// until drop.
func (q *jobQueue) keepLocked(j *job, k *kept, drop int64) {
	t := j.tube
	q.endedBehind(j)
	q.freeSlotLocked(j)
	q.unlink(j)
	q.jobs, q.jobsMax = shrinkIDs(q.jobs, j.id, q.jobsMax)
	q.live -= jobSize(j)
	if k.how == keptFinished {
		t.deletes++
	}
	q.addKept(t, j, k, drop)
}

// addKept keeps j, ended as k says, in its tube t until drop.
func (q *jobQueue) addKept(t *tube, j *job, k *kept, drop int64) {
	j.setKept(k)
	j.state, j.at = queue.Finished, drop
	t.kept.push(j)
	if q.kept == nil {
		q.kept = map[queue.ID]*job{}
	}
	q.kept[j.id] = j
	q.keptMax = max(q.keptMax, len(q.kept))
	q.keptBytes += keptSize(j)
	q.resched(t)
}

// dropDueLocked drops the kept jobs of t whose deadline is not after now,
// logging each; the ticket is the last record's.
func (q *jobQueue) dropDueLocked(t *tube, now int64) wal.Ticket {
	var tk wal.Ticket
	for j := t.kept.top(); j != nil && j.at <= now; j = t.kept.top() {
		q.dropLocked(j)
		tk = q.e.append(kindDrop, binary.AppendUvarint(q.e.scratch[:0], uint64(j.id)), nil)
	}
	return tk
}

// dropLocked forgets the kept job j.
func (q *jobQueue) dropLocked(j *job) {
	t := j.tube
	t.kept.remove(j)
	q.kept, q.keptMax = shrinkIDs(q.kept, j.id, q.keptMax)
	if len(q.kept) == 0 {
		q.kept, q.keptMax = nil, 0 // a map keeps its buckets: give them back
	}
	if k := j.key(); k != "" && t.keys[k] == j {
		delete(t.keys, k)
	}
	q.keptBytes -= keptSize(j)
	q.resched(t)
	q.gcTube(t)
}

// Lookup is the part's side of Store.Lookup (queuestore.go).
func (q *jobQueue) Lookup(ctx context.Context, id queue.ID) (queue.JobStats, error) {
	return read(ctx, q.tx(), func(now int64) (queue.JobStats, error) {
		j := q.jobs[id]
		if j == nil {
			j = q.kept[id]
		}
		return q.lookupLocked(j, now)
	})
}

// LookupKey is the part's side of Store.LookupKey (queuestore.go).
func (q *jobQueue) LookupKey(ctx context.Context, tube, key string) (queue.JobStats, error) {
	return read(ctx, q.tx(), func(now int64) (queue.JobStats, error) {
		var j *job
		if t := q.tubes[tube]; t != nil {
			j = t.keys[key]
		}
		return q.lookupLocked(j, now)
	})
}

func (q *jobQueue) lookupLocked(j *job, now int64) (queue.JobStats, error) {
	if j == nil || j.state == queue.Finished && j.at <= now {
		return queue.JobStats{}, queue.ErrNotFound
	}
	out := j.stats(now)
	if j.state == queue.Finished {
		out.Result = slices.Clone(j.more.kept.result)
		out.FinishedAt = timeOf(j.more.kept.endedAt)
		out.KeptUntil = timeOf(j.at)
		out.Cancelled = j.more.kept.how == keptCancelled
		out.Age = durationOf(now - j.created)
	}
	return out, nil
}

// replayKeep applies a record of the kinds of kept jobs at Open.
func (q *jobQueue) replayKeep(kind byte, d *decoder) error {
	switch kind {
	case kindRetain:
		name := d.string()
		r := d.varint()
		if err := d.end(); err != nil {
			return err
		}
		q.setRetentionLocked(name, r)
		return nil
	case kindFinish:
		id := queue.ID(d.uvarint())
		k := &kept{how: d.byte(), endedAt: d.varint()}
		drop := d.varint()
		k.result = []byte(d.string())
		j, err := loggedJob(d, "finish", id, q.jobs)
		if err != nil {
			return err
		}
		q.keepLocked(j, k, drop)
		return nil
	case kindKeyX:
		id := queue.ID(d.uvarint())
		ufor := d.varint()
		d.varint()
		d.varint()
		j, err := loggedJob(d, "keys in time", id, q.jobs, q.kept)
		if err != nil {
			return err
		}
		if j.more == nil {
			return fmt.Errorf("keys in time of job %d, which has no unique key", id)
		}
		j.more.ufor = ufor
		return nil
	case kindDrop:
		id := queue.ID(d.uvarint())
		j, err := loggedJob(d, "drop", id, q.kept)
		if err != nil {
			return err
		}
		q.dropLocked(j)
		return nil
	case kindKept:
		j := &job{id: queue.ID(d.uvarint()), hidx: -1}
		seq := d.uvarint()
		if st := d.byte(); st != byte(queue.Finished) && d.err == nil {
			return fmt.Errorf("kept job %d in state %d", j.id, st)
		}
		j.pri = d.u32()
		j.at, j.ttr, j.delay, j.created = d.varint(), d.varint(), d.varint(), d.varint()
		d.counters(j)
		j.setKey(d.string())
		d.history(j)
		k := &kept{how: d.byte(), endedAt: d.varint()}
		drop := d.varint()
		k.result = []byte(d.string())
		if d.err != nil {
			return d.err
		}
		t := q.replayTubes[seq]
		if t == nil {
			return errors.New("kept job of an unknown tube")
		}
		if j.id == 0 || j.id > queue.MaxID || q.jobs[j.id] != nil || q.kept[j.id] != nil {
			return fmt.Errorf("job %d kept twice", j.id)
		}
		j.tube = t
		j.body = slices.Clone(d.b)
		if j.body == nil {
			j.body = []byte{}
		}
		q.lastID = max(q.lastID, j.id)
		if key := j.key(); key != "" && t.keys[key] == nil {
			if t.keys == nil {
				t.keys = map[string]*job{}
			}
			t.keys[key] = j
		}
		q.addKept(t, j, k, drop)
		return nil
	}
	return fmt.Errorf("unknown record kind %d", kind)
}

// snapshotKept adds t's kept jobs to w, and snapshotRetain the tubes'
// retentions.
func (q *jobQueue) snapshotKept(t *tube, w *wal.SnapshotWriter) {
	for _, j := range t.kept.s {
		b := q.encodeJob(j, true)
		b = append(b, j.more.kept.how)
		b = binary.AppendVarint(b, j.more.kept.endedAt)
		b = binary.AppendVarint(b, j.at)
		b = appendString(b, string(j.more.kept.result))
		q.e.scratch = b
		w.Add(kindKept, b, j.body)
		if j.more.ufor > 0 {
			w.Add(kindKeyX, q.encodeKeyX(j), nil)
		}
		if len(j.more.errs) > 0 {
			w.Add(kindErrors, q.encodeErrors(j), nil)
		}
	}
}

func (q *jobQueue) snapshotRetain(w *wal.SnapshotWriter) {
	for _, name := range sortedKeys(q.retain) {
		b := appendString(q.e.scratch[:0], name)
		b = binary.AppendVarint(b, q.retain[name])
		q.e.scratch = b
		w.Add(kindRetain, b, nil)
	}
}

// ListKept is the part's side of Store.ListKept (queuestore.go): a scan
// of the tube's kept jobs under the engine's lock, keeping the first limit
// of the list's order in a bounded heap (O(n log limit) for a tube keeping
// n jobs).
func (q *jobQueue) ListKept(ctx context.Context, tube string, from queue.KeptCursor, limit int) ([]queue.KeptJob, error) {
	return read(ctx, q.tx(), func(now int64) ([]queue.KeptJob, error) {
		return q.listKeptLocked(tube, from, limit, now), nil
	})
}

func (q *jobQueue) listKeptLocked(tube string, from queue.KeptCursor, limit int, now int64) []queue.KeptJob {
	t := q.tubes[tube]
	if t == nil || limit <= 0 {
		return nil
	}
	// before: a comes before b in the list (dropped later, or at the same
	// time with a higher ID).
	before := func(a, b *job) bool { return a.at > b.at || a.at == b.at && a.id > b.id }
	var fromAt int64
	if !from.IsZero() {
		fromAt = from.Until.UnixNano()
	}
	top := make([]*job, 0, min(limit, len(t.kept.s))) // a heap whose root is the last of the list
	for _, j := range t.kept.s {
		if j.at <= now || !from.IsZero() && (j.at > fromAt || j.at == fromAt && j.id >= from.ID) {
			continue
		}
		if len(top) < limit {
			top = append(top, j)
			for i := len(top) - 1; i > 0; {
				p := (i - 1) / 2
				if !before(top[p], top[i]) {
					break
				}
				top[p], top[i] = top[i], top[p]
				i = p
			}
			continue
		}
		if !before(j, top[0]) {
			continue
		}
		top[0] = j
		for i := 0; ; {
			l, m := 2*i+1, i
			if l < len(top) && before(top[m], top[l]) {
				m = l
			}
			if r := l + 1; r < len(top) && before(top[m], top[r]) {
				m = r
			}
			if m == i {
				break
			}
			top[m], top[i] = top[i], top[m]
			i = m
		}
	}
	slices.SortFunc(top, func(a, b *job) int {
		if before(a, b) {
			return -1
		}
		return 1
	})
	out := make([]queue.KeptJob, len(top))
	for i, j := range top {
		k := j.more.kept
		out[i] = queue.KeptJob{ID: j.id, UniqueKey: j.key(), Cancelled: k.how == keptCancelled,
			FinishedAt: timeOf(k.endedAt), KeptUntil: timeOf(j.at), ResultLen: len(k.result)}
		if len(k.result) > 0 {
			out[i].Result = slices.Clone(k.result[:min(len(k.result), queue.KeptPreviewLen)])
		}
		if j.more != nil {
			out[i].LastError = j.more.history.lastErr
		}
	}
	return out
}
