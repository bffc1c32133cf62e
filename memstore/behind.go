package memstore

import (
	"encoding/binary"
	"fmt"

	"github.com/hourglass-io/hourglass/internal/wal"
	"github.com/hourglass-io/hourglass/queue"
)

// A job held behind another: a schedule with the overlap policy
// buffer_one puts a tick's job while the previous job of the schedule is
// reserved, held until that job ends (docs/schedules.md, "Overlap"). The
// held job is delayed with no due time (at == never): counted as delayed,
// peeked last among the delayed, never made ready by the clock. The link
// is jobQueue.behind: the running job's ID to the held job's. Every end
// of the running job (a delete or finish, a bury, a cancel, kept or not)
// makes the held job ready in the same operation; a release or a timeout
// leaves it held (the running job is still live). A kick of the held job
// makes it ready at once, as any delayed job's; a held job deleted or
// cancelled leaves a link that its running job's end finds empty.
//
// Log and snapshot: kindBehind (u running id, u held id), after the held
// job's put record (the fire logs both) and, in a snapshot, after every
// job. Its replay holds the job and links it; the replays of the running
// job's end make the held job ready, as the operations did.
const kindBehind = 28

// isHeld reports whether j is held behind another job.
func isHeld(j *job) bool { return j.state == queue.Delayed && j.at == never }

// holdBehindLocked holds the job held, just put, behind the reserved job
// run, and logs the link; the ticket is its record's.
func (q *jobQueue) holdBehindLocked(run, held *job) wal.Ticket {
	q.holdBehind(run.id, held)
	return q.e.append(kindBehind, q.encodeBehind(run.id, held.id), nil)
}

// holdBehind holds job held (ready or delayed) behind the job run.
func (q *jobQueue) holdBehind(run queue.ID, held *job) {
	if !isHeld(held) {
		q.unlink(held)
		held.at = never
		q.link(held, queue.Delayed)
	}
	if q.behind == nil {
		q.behind = map[queue.ID]queue.ID{}
	}
	q.behind[run] = held.id
}

// endedBehind is called as job j ends (deleted, finished, buried or
// cancelled): the job held behind it, if it is still held, becomes ready
// and the tube's waiters are woken.
func (q *jobQueue) endedBehind(j *job) {
	if len(q.behind) == 0 {
		return
	}
	id, ok := q.behind[j.id]
	if !ok {
		return
	}
	delete(q.behind, j.id)
	if len(q.behind) == 0 {
		q.behind = nil
	}
	h := q.jobs[id]
	if h == nil || !isHeld(h) {
		return
	}
	q.unlink(h)
	h.at = 0
	q.link(h, queue.Ready)
	q.wakeLocked(h.tube.name)
}

func (q *jobQueue) encodeBehind(run, held queue.ID) []byte {
	b := binary.AppendUvarint(q.e.scratch[:0], uint64(run))
	b = binary.AppendUvarint(b, uint64(held))
	q.e.scratch = b
	return b
}

// snapshotBehind adds the links whose jobs are both live and whose held
// job is still held.
func (q *jobQueue) snapshotBehind(w *wal.SnapshotWriter) {
	for run, id := range q.behind {
		if h := q.jobs[id]; h != nil && isHeld(h) && q.jobs[run] != nil {
			w.Add(kindBehind, q.encodeBehind(run, id), nil)
		}
	}
}

// replayBehind applies a kindBehind record.
func (q *jobQueue) replayBehind(d *decoder) error {
	run, id := queue.ID(d.uvarint()), queue.ID(d.uvarint())
	if err := d.end(); err != nil {
		return err
	}
	r, h := q.jobs[run], q.jobs[id]
	if r == nil || h == nil || r == h || r.tube != h.tube {
		return fmt.Errorf("job %d held behind job %d: %w", id, run, errBadRecord)
	}
	q.holdBehind(run, h)
	return nil
}
