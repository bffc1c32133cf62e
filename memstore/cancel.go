package memstore

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/hourglass-io/hourglass/internal/wal"
	"github.com/hourglass-io/hourglass/queue"
)

// Record kinds of cancels: 18–21 of the queue's range. A kind's layout
// never changes once released: a new layout is a new kind.
const (
	kindCancel = 18 // log: a job cancelled: u id, s reason
	// kindCancelKept: a job cancelled and kept by its tube's retention
	// (log): u id, s reason, v ended at (Unix ns), v dropped at (Unix ns).
	// A snapshot writes it as any kept job (kindKept, how 2).
	kindCancelKept = 19
)

// Cancel implements queue.CancelStore: the job is removed whatever its
// state and a cancel counted in its tube (as its reserves are: since the
// Store was opened); the listeners of a reserved job's tube
// (ListenCancel) are called once the cancel is on disk.
func (s *Store) Cancel(ctx context.Context, id queue.ID, reason string) (queue.State, error) {
	return s.queue.Cancel(ctx, id, reason)
}

// ListenCancel implements queue.CancelStore: cancelled is called, without
// the Store's lock held, after a reserved job of tube or of one of its
// groups is cancelled.
func (s *Store) ListenCancel(ctx context.Context, tube string, cancelled func(id queue.ID, reason string)) (func(), error) {
	return s.queue.ListenCancel(ctx, tube, cancelled)
}

// cancelListener is one ListenCancel.
type cancelListener struct {
	tube string
	f    func(queue.ID, string)
}

// Cancel is the part's side of Store.Cancel.
func (q *jobQueue) Cancel(ctx context.Context, id queue.ID, reason string) (queue.State, error) {
	var tell []*cancelListener
	was, err := update(ctx, q.tx(), func(now int64) (queue.State, wal.Ticket, error) {
		j := q.jobs[id]
		if j == nil {
			return 0, 0, fmt.Errorf("%w: %d", queue.ErrNotFound, id)
		}
		was := j.state
		var tk wal.Ticket
		tk, tell = q.cancelLocked(j, reason, now)
		return was, tk, nil
	})
	if err != nil {
		return 0, err
	}
	for _, l := range tell {
		l.f(id, reason)
	}
	return was, nil
}

// cancelLocked cancels live job j: the log record's ticket, and the
// listeners to tell (after the engine's end) when j was reserved.
func (q *jobQueue) cancelLocked(j *job, reason string, now int64) (wal.Ticket, []*cancelListener) {
	id, was, t := j.id, j.state, j.tube
	var tk wal.Ticket
	if r := q.retain[t.name]; r > 0 {
		// Kept like a finished job, its reason as its last error.
		j.noteError(reason, now)
		q.keepLocked(j, &kept{how: keptCancelled, endedAt: now}, now+r)
		b := q.encodeCancel(id, reason)
		b = binary.AppendVarint(b, now)
		b = binary.AppendVarint(b, j.at)
		q.e.scratch = b
		tk = q.e.append(kindCancelKept, b, nil)
	} else {
		q.freeSlotLocked(j)
		q.dropJob(j)
		tk = q.e.append(kindCancel, q.encodeCancel(id, reason), nil)
	}
	t.cancels++
	if t.jobs() == 0 {
		tk = max(tk, q.freeLocked(t))
	}
	var tell []*cancelListener
	if was == queue.Reserved {
		root, _ := queue.SplitGroup(t.name)
		tell = slices.Clone(q.cancelListeners[root])
	}
	return tk, tell
}

// ListenCancel is the part's side of Store.ListenCancel: listeners by the
// tube that holds a group (a group's cancels tell its tube's listeners).
func (q *jobQueue) ListenCancel(ctx context.Context, tube string, f func(queue.ID, string)) (func(), error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	root, _ := queue.SplitGroup(tube)
	l := &cancelListener{tube: root, f: f}
	q.e.mu.Lock()
	defer q.e.mu.Unlock()
	if q.e.closed {
		return nil, queue.ErrClosed
	}
	if q.cancelListeners == nil {
		q.cancelListeners = map[string][]*cancelListener{}
	}
	q.cancelListeners[root] = append(q.cancelListeners[root], l)
	stopped := false
	return func() {
		q.e.mu.Lock()
		defer q.e.mu.Unlock()
		if stopped {
			return
		}
		stopped = true
		all := slices.DeleteFunc(q.cancelListeners[root], func(x *cancelListener) bool { return x == l })
		if len(all) == 0 {
			delete(q.cancelListeners, root)
		} else {
			q.cancelListeners[root] = all
		}
	}, nil
}

func (q *jobQueue) encodeCancel(id queue.ID, reason string) []byte {
	b := binary.AppendUvarint(q.e.scratch[:0], uint64(id))
	b = appendString(b, reason)
	q.e.scratch = b
	return b
}

// replayCancel applies a cancel record at Open.
func (q *jobQueue) replayCancel(kind byte, d *decoder) error {
	id := queue.ID(d.uvarint())
	reason := d.string()
	var ended, drop int64
	if kind == kindCancelKept {
		ended, drop = d.varint(), d.varint()
	}
	if len(reason) > queue.MaxReasonLen {
		d.err = errBadRecord
	}
	j, err := loggedJob(d, "cancel", id, q.jobs)
	if err != nil {
		return err
	}
	if kind == kindCancelKept {
		j.noteError(reason, ended)
		q.keepLocked(j, &kept{how: keptCancelled, endedAt: ended}, drop)
		return nil
	}
	q.dropJob(j)
	return nil
}
