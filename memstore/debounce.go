package memstore

import (
	"encoding/binary"
	"fmt"

	"github.com/hourglass-io/hourglass/internal/wal"
	"github.com/hourglass-io/hourglass/queue"
)

// kindDebounce: a put with Debounce (queue.NewJob.Debounce) changed a
// live job (log): u id, byte what, then by what:
//   - debReplace, debExtend or both: byte its state after (ready or
//     delayed), u32 priority, v due at (Unix ns), v delay (ns); the body
//     follows as the record's tail when debReplace is set;
//   - debGiveUp: nothing more: the job gave its unique key up to the new
//     job that the put stores next.
//
// Kind 16 (kindKeyX, keep.go) carries a job's UniqueFor; a debounce needs
// nothing more of a job than its put time (the first put of its burst).
const kindDebounce = 17

// What a kindDebounce record did.
const (
	debReplace = 1 // the body and priority replaced
	debExtend  = 2 // the delay restarted
	debGiveUp  = 4 // the unique key given up
)

// putAction is what a put does with one job (decide).
type putAction uint8

const (
	putNew      putAction = iota // store it
	putDup                       // a duplicate of the job found
	putDebounce                  // change the delayed job found (debounceLocked)
	putTakeOver                  // store it, and the live job found gives its key up
)

// decide says what a put of nj at now does, given h, the job holding its
// key in the tube (nil for none; live or kept).
func decide(h *job, nj queue.NewJob, now int64) putAction {
	switch {
	case h == nil:
		return putNew
	case h.state == queue.Finished:
		if nj.UniqueKept || now < h.window() {
			return putDup
		}
		return putNew
	case nj.Debounce == 0:
		return putDup
	case h.state == queue.Delayed:
		return putDebounce
	case nj.DuplicateLive || now < h.window():
		return putDup
	}
	return putTakeOver
}

// debounceAt is the due time a put of nj at now with DebounceExtend gives
// the delayed job j: its delay restarted, never past its first put plus
// the put's MaxWait.
func debounceAt(j *job, nj queue.NewJob, now int64) int64 {
	at := now + int64(nj.Delay)
	if nj.MaxWait > 0 {
		at = min(at, j.created+int64(nj.MaxWait))
	}
	return at
}

// debounceLocked applies a put of nj at now to the delayed job j that
// holds its key (queue.NewJob.Debounce) and logs it.
func (q *jobQueue) debounceLocked(j *job, nj queue.NewJob, now int64) wal.Ticket {
	var what byte
	pri, at, delay, body := j.pri, j.at, j.delay, j.body
	if nj.Debounce&queue.DebounceReplace != 0 {
		what |= debReplace
		pri, body = nj.Priority, append(make([]byte, 0, len(nj.Body)), nj.Body...)
	}
	if nj.Debounce&queue.DebounceExtend != 0 {
		what |= debExtend
		at = debounceAt(j, nj, now)
		delay = max(at-now, 0)
	}
	st := queue.Delayed
	if at <= now {
		st, at = queue.Ready, 0
	}
	q.rewriteLocked(j, st, pri, at, delay, body)
	if st == queue.Ready {
		q.wakeLocked(j.tube.name)
	}
	b := binary.AppendUvarint(q.e.scratch[:0], uint64(j.id))
	b = append(b, what, byte(st))
	b = binary.AppendUvarint(b, uint64(pri))
	b = binary.AppendVarint(b, at)
	b = binary.AppendVarint(b, delay)
	q.e.scratch = b
	var tail []byte
	if what&debReplace != 0 {
		tail = j.body
	}
	return q.e.append(kindDebounce, b, tail)
}

// rewriteLocked moves the live job j to state st with the given
// priority, due time, delay and body.
func (q *jobQueue) rewriteLocked(j *job, st queue.State, pri uint32, at, delay int64, body []byte) {
	q.unlink(j)
	q.live -= jobSize(j)
	j.pri, j.at, j.delay, j.body = pri, at, delay, body
	q.live += jobSize(j)
	q.link(j, st)
}

// giveUpKeyLocked takes the unique key from the live job j, for a new job
// of a debounce put to hold (putTakeOver), and logs it.
func (q *jobQueue) giveUpKeyLocked(j *job) wal.Ticket {
	q.giveUpKey(j)
	b := binary.AppendUvarint(q.e.scratch[:0], uint64(j.id))
	b = append(b, debGiveUp)
	q.e.scratch = b
	return q.e.append(kindDebounce, b, nil)
}

func (q *jobQueue) giveUpKey(j *job) {
	k := j.key()
	if k == "" {
		return
	}
	if j.tube.keys[k] == j {
		delete(j.tube.keys, k)
	}
	q.live -= jobSize(j)
	j.more.key = ""
	q.live += jobSize(j)
}

// replayDebounce applies a kindDebounce record at Open.
func (q *jobQueue) replayDebounce(d *decoder) error {
	id := queue.ID(d.uvarint())
	what := d.byte()
	j := q.jobs[id]
	if d.err == nil && j == nil {
		return fmt.Errorf("debounce of unknown job %d", id)
	}
	if what == debGiveUp {
		if err := d.end(); err != nil {
			return err
		}
		q.giveUpKey(j)
		return nil
	}
	st, err := state(d.byte())
	pri := d.u32()
	at, delay := d.varint(), d.varint()
	if d.err != nil {
		return d.err
	}
	if err != nil {
		return err
	}
	if what&^(debReplace|debExtend) != 0 || what == 0 || (st != queue.Ready && st != queue.Delayed) {
		return fmt.Errorf("debounce of job %d: %w", id, errBadRecord)
	}
	body := j.body
	if what&debReplace != 0 {
		body = append(make([]byte, 0, len(d.b)), d.b...)
	} else if len(d.b) != 0 {
		return fmt.Errorf("debounce of job %d: %w", id, errBadRecord)
	}
	q.rewriteLocked(j, st, pri, at, delay, body)
	return nil
}
