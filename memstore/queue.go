package memstore

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/hourglass-io/hourglass/internal/wal"
	"github.com/hourglass-io/hourglass/queue"
)

// durationOf converts nanoseconds to a Duration.
func durationOf(ns int64) time.Duration { return time.Duration(ns) }

// timeOf converts Unix nanoseconds to a Time in UTC; 0 is the zero Time
// (never).
func timeOf(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns).UTC()
}

// addHistory fills in the history fields of out.
func (j *job) addHistory(out *queue.JobStats) {
	out.ReservedAt = timeOf(j.reserved)
	if j.more != nil {
		h := &j.more.history
		out.ReleasedAt, out.BuriedAt, out.KickedAt = timeOf(h.released), timeOf(h.buried), timeOf(h.kicked)
		out.TimedOutAt, out.LastErrorAt, out.LastError = timeOf(h.timedOut), timeOf(h.errAt), h.lastErr
		out.Errors = slices.Clone(j.more.errs)
	}
}

// Put is the part's side of Store.Put (queuestore.go).
func (q *jobQueue) Put(ctx context.Context, tube string, jobs []queue.NewJob) ([]queue.PutResult, error) {
	need := int64(smallRecord)
	for _, nj := range jobs {
		need += putRecordSize + int64(len(nj.Body)+len(nj.UniqueKey)+len(nj.TraceContext))
	}
	return update(ctx, q.tx().sized(need), func(now int64) ([]queue.PutResult, wal.Ticket, error) {
		return q.putLocked(tube, jobs, now)
	})
}

// putLocked is Put at now, under the Store's lock.
func (q *jobQueue) putLocked(tube string, jobs []queue.NewJob, now int64) ([]queue.PutResult, wal.Ticket, error) {
	t := q.tubes[tube]
	// How many jobs are new, for the cap and the ID space.
	n := 0
	var batch map[string]*job // unique keys of new jobs earlier in this batch, as they would be
	for _, nj := range jobs {
		if k := nj.UniqueKey; k != "" {
			h := batch[k]
			if h == nil && t != nil {
				h = t.keys[k]
			}
			a := decide(h, nj, now)
			if a == putDup {
				continue
			}
			if batch == nil {
				batch = map[string]*job{}
			}
			if a == putDebounce {
				// the job stays, ready once its due time has passed
				st := queue.Delayed
				if nj.Debounce&queue.DebounceExtend != 0 && debounceAt(h, nj, now) <= now {
					st = queue.Ready
				}
				batch[k] = &job{state: st, created: h.created, more: &jobMore{ufor: h.more.ufor}}
				continue
			}
			st := queue.Ready
			if nj.Delay > 0 {
				st = queue.Delayed
			}
			batch[k] = &job{state: st, created: now, more: &jobMore{ufor: int64(nj.UniqueFor)}}
		}
		n++
	}
	if q.maxJobs > 0 && len(q.jobs)+n > q.maxJobs {
		return nil, 0, fmt.Errorf("%w: %d jobs stored, %d more would pass the cap of %d", queue.ErrFull, len(q.jobs), n, q.maxJobs)
	}
	if uint64(q.lastID)+uint64(n) > uint64(queue.MaxID) {
		return nil, 0, fmt.Errorf("memstore: job IDs exhausted (the last issued is %d)", q.lastID)
	}
	res := make([]queue.PutResult, len(jobs))
	var tk wal.Ticket
	for i, nj := range jobs {
		if t == nil {
			t = q.tubeFor(tube)
		}
		if k := nj.UniqueKey; k != "" {
			switch h := t.keys[k]; decide(h, nj, now) {
			case putDup:
				res[i] = queue.PutResult{ID: h.id, Duplicate: true, State: h.state}
				if h.more != nil && h.more.kept != nil && len(h.more.kept.result) > 0 {
					res[i].Result = slices.Clone(h.more.kept.result)
				}
				continue
			case putDebounce:
				tk = q.debounceLocked(h, nj, now)
				res[i] = queue.PutResult{ID: h.id, Duplicate: true, State: h.state, Debounced: true}
				continue
			case putTakeOver:
				q.giveUpKeyLocked(h)
			}
		}
		var j *job
		j, tk = q.putJobLocked(t, nj, now)
		res[i] = queue.PutResult{ID: j.id}
	}
	if n > 0 {
		q.wakeLocked(tube)
	}
	return res, tk, nil
}

// putRecordSize bounds a put record's bytes beside the job's body, unique
// key and tube name: the record's header and the job's numbers.
const putRecordSize = 128 + queue.MaxTubeName

// putJobLocked stores a new job in t, counts it, and logs it; the caller
// has checked the cap, the ID space and the unique key.
func (q *jobQueue) putJobLocked(t *tube, nj queue.NewJob, now int64) (*job, wal.Ticket) {
	q.lastID++
	j := &job{
		id:      q.lastID,
		tube:    t,
		pri:     nj.Priority,
		hidx:    -1,
		ttr:     int64(nj.TTR),
		delay:   int64(nj.Delay),
		created: now,
		body:    append(make([]byte, 0, len(nj.Body)), nj.Body...),
	}
	j.setKey(nj.UniqueKey)
	j.setTrace(nj.TraceContext)
	if j.ttr <= 0 {
		j.ttr = int64(queue.DefaultTTR)
	}
	st := queue.Ready
	if j.delay > 0 {
		st, j.at = queue.Delayed, now+j.delay
	}
	q.addJob(j, st)
	t.totalJobs++
	q.totalJobs++
	var tk wal.Ticket
	if q.e.log != nil { // in memory alone the record is not made
		kind := byte(kindPut)
		if nj.TraceContext != "" {
			kind = kindPutT
		}
		b := q.encodeJob(j, false)
		if kind == kindPutT {
			b = appendString(b, nj.TraceContext)
			q.e.scratch = b
		}
		tk = q.e.append(kind, b, j.body)
	}
	if nj.UniqueFor > 0 {
		j.more.ufor = int64(nj.UniqueFor)
		tk = q.e.append(kindKeyX, q.encodeKeyX(j), nil)
	}
	return j, tk
}

// putOnce puts nj in tube within an operation of another part (a
// schedule's fire), unless a live job of the tube holds its unique key: it
// returns the ID of the job put, or of the one found, and the ticket of
// the put's record (0 when none). Given behind, a reserved job of the
// tube, the job put is held behind it (behind.go). It fails as Put does
// at the cap (queue.ErrFull) and when job IDs are exhausted.
func (q *jobQueue) putOnce(tube string, nj queue.NewJob, now int64, behind *job) (queue.ID, wal.Ticket, error) {
	t := q.tubes[tube]
	if old := t.dupOf(nj, now); old != nil {
		return old.id, 0, nil
	}
	if q.maxJobs > 0 && len(q.jobs)+1 > q.maxJobs {
		return 0, 0, fmt.Errorf("%w: tube %q: %d jobs stored, the cap is %d", queue.ErrFull, tube, len(q.jobs), q.maxJobs)
	}
	if q.lastID >= queue.MaxID {
		return 0, 0, fmt.Errorf("memstore: job IDs exhausted (the last issued is %d)", q.lastID)
	}
	if t == nil {
		t = q.tubeFor(tube)
	}
	j, tk := q.putJobLocked(t, nj, now)
	if behind != nil {
		return j.id, max(tk, q.holdBehindLocked(behind, j)), nil
	}
	q.wakeLocked(tube)
	return j.id, tk, nil
}

// Reserve is the part's side of Store.Reserve (queuestore.go).
func (q *jobQueue) Reserve(ctx context.Context, req queue.ReserveRequest) (queue.ReserveResult, error) {
	return update(ctx, q.tx(), func(now int64) (queue.ReserveResult, wal.Ticket, error) {
		res, tk := q.reserveAt(req, now)
		return res, tk, nil
	})
}

// reserveAt is Reserve at now, under the Store's lock.
func (q *jobQueue) reserveAt(req queue.ReserveRequest, now int64) (queue.ReserveResult, wal.Ticket) {
	res := queue.ReserveResult{Next: -1}
	var tk wal.Ticket
	if len(req.Delete) > 0 {
		res.Deleted = make([]error, len(req.Delete))
		for i, id := range req.Delete {
			var t wal.Ticket
			t, res.Deleted[i] = q.endLocked(req.Owner, id, nil, now)
			tk = max(tk, t)
		}
	}
	limited := len(q.tubeLimits) > 0
	for len(res.Jobs) < req.Max {
		var best *job
		for _, name := range req.Tubes {
			if f := q.families[name]; f != nil {
				// a tube with groups: the member whose turn it is
				if t, _, _ := q.familyScan(f, now); t != nil {
					if j := t.ready.top(); best == nil || readyLess(j, best) {
						best = j
					}
				}
				continue
			}
			t := q.tubes[name]
			if t == nil || t.paused {
				continue
			}
			j := t.ready.top()
			if j == nil || (best != nil && !readyLess(j, best)) {
				continue
			}
			if limited && q.limitWait(t, now) != 0 {
				continue
			}
			best = j
		}
		if best == nil {
			break
		}
		t := best.tube
		q.reserveLocked(best, req.Owner, now)
		if limited {
			q.chargeLocked(t, now)
		}
		if t.fam != nil {
			t.fam.served(t)
		}
		res.Jobs = append(res.Jobs, best.exportHeld(now))
	}
	var held map[string]int64
	if len(res.Jobs) < req.Max && limited {
		held = q.heldLocked(req.Tubes, now)
	}
	if len(res.Jobs) > 0 {
		q.drainedLocked(req.Tubes, now, &res)
	}
	if len(res.Jobs) == 0 {
		for _, name := range req.Tubes {
			next := int64(never)
			if f := q.families[name]; f != nil {
				next = f.next()
			} else if t := q.tubes[name]; t != nil {
				next = t.liveDue()
			}
			// The engine's timer, if it has one, wakes the tube's
			// listeners when what is due in it falls due; nothing wakes
			// them when a rate frees a job.
			selfWaking := q.e.timed
			if w := held[name]; w > 0 && now+w < next {
				next, selfWaking = now+w, false
			}
			if next == never {
				continue
			}
			if d := durationOf(next - now); res.Next < 0 || d < res.Next {
				res.Next, res.NextTube, res.SelfWaking = d, name, selfWaking
			}
		}
	}
	return res, tk
}

// reserveLocked reserves j for owner.
func (q *jobQueue) reserveLocked(j *job, owner string, now int64) {
	q.unlink(j)
	j.owner = owner
	j.reserves++
	j.tube.reserves++
	j.reserved = now
	j.at = now + j.ttr
	q.link(j, queue.Reserved)
}

// ReserveJob is the part's side of Store.ReserveJob (queuestore.go).
func (q *jobQueue) ReserveJob(ctx context.Context, owner string, id queue.ID) (queue.Job, error) {
	return update(ctx, q.tx(), func(now int64) (queue.Job, wal.Ticket, error) {
		j := q.jobs[id]
		switch {
		case j == nil:
			return queue.Job{}, 0, queue.ErrNotFound
		case j.state == queue.Reserved:
			return queue.Job{}, 0, queue.ErrReserved
		}
		was := j.state
		q.reserveLocked(j, owner, now)
		var tk wal.Ticket
		if was != queue.Ready {
			tk = q.e.append(kindUpdateH, q.encodeUpdate(j), nil)
		}
		return j.exportHeld(now), tk, nil
	})
}

// Delete is the part's side of Store.Delete (queuestore.go).
func (q *jobQueue) Delete(ctx context.Context, owner string, ids []queue.ID) ([]error, error) {
	return update(ctx, q.tx(), func(now int64) ([]error, wal.Ticket, error) {
		errs := make([]error, len(ids))
		var tk wal.Ticket
		for i, id := range ids {
			var t wal.Ticket
			t, errs[i] = q.endLocked(owner, id, nil, now)
			tk = max(tk, t)
		}
		return errs, tk, nil
	})
}

// endable returns job id if owner may end it (delete or finish it): not
// when there is none (ErrNotFound) or another owner holds it
// (ErrReserved).
func (q *jobQueue) endable(owner string, id queue.ID) (*job, error) {
	j := q.jobs[id]
	switch {
	case j == nil:
		return nil, queue.ErrNotFound
	case j.state == queue.Reserved && j.owner != owner:
		return nil, queue.ErrReserved
	}
	return j, nil
}

// deleteLocked deletes live job j; the ticket is that of its record.
func (q *jobQueue) deleteLocked(j *job) wal.Ticket {
	id, t := j.id, j.tube
	q.freeSlotLocked(j)
	q.removeJob(j)
	tk := q.e.append(kindDelete, q.encodeDelete(id), nil)
	if t.jobs() == 0 {
		tk = max(tk, q.freeLocked(t))
	}
	return tk
}

// heldBy returns the job id if owner has it reserved, or the error for
// Release, Bury and Touch.
func (q *jobQueue) heldBy(owner string, id queue.ID) (*job, error) {
	j := q.jobs[id]
	switch {
	case j == nil:
		return nil, queue.ErrNotFound
	case j.state != queue.Reserved || j.owner != owner:
		return nil, queue.ErrNotReserved
	}
	return j, nil
}

// onHeld runs f, as one operation, on a job that owner holds; f returns
// the ticket of what it logged (0 for nothing).
func (q *jobQueue) onHeld(ctx context.Context, owner string, id queue.ID, f func(now int64, j *job) wal.Ticket) error {
	return write(ctx, q.tx(), func(now int64) (wal.Ticket, error) {
		j, err := q.heldBy(owner, id)
		if err != nil {
			return 0, err
		}
		return f(now, j), nil
	})
}

// Release is the part's side of Store.Release (queuestore.go).
func (q *jobQueue) Release(ctx context.Context, owner string, id queue.ID, pri int64, delay time.Duration, reason string) error {
	return q.onHeld(ctx, owner, id, func(now int64, j *job) wal.Ticket {
		q.unlink(j)
		if pri != queue.KeepPriority {
			j.pri = uint32(pri)
		}
		j.releases++
		j.history().released = now
		j.noteAttemptError(reason, now)
		j.delay = int64(delay)
		st := queue.Ready
		j.at = 0
		if delay > 0 {
			st, j.at = queue.Delayed, now+int64(delay)
		}
		q.link(j, st)
		q.wakeLocked(j.tube.name)
		return q.e.append(updateKind(reason), q.encodeUpdate(j), nil)
	})
}

// Bury is the part's side of Store.Bury (queuestore.go).
func (q *jobQueue) Bury(ctx context.Context, owner string, id queue.ID, pri int64, reason string) error {
	return q.onHeld(ctx, owner, id, func(now int64, j *job) wal.Ticket {
		q.freeSlotLocked(j)
		q.unlink(j)
		if pri != queue.KeepPriority {
			j.pri = uint32(pri)
		}
		j.buries++
		j.tube.buries++
		j.history().buried = now
		j.noteAttemptError(reason, now)
		q.burySeq++
		j.at = q.burySeq
		q.link(j, queue.Buried)
		q.endedBehind(j)
		return q.e.append(updateKind(reason), q.encodeUpdate(j), nil)
	})
}

// Touch is the part's side of Store.Touch (queuestore.go).
func (q *jobQueue) Touch(ctx context.Context, owner string, id queue.ID) (time.Duration, error) {
	var left time.Duration
	err := q.onHeld(ctx, owner, id, func(now int64, j *job) wal.Ticket {
		q.unlink(j) // clears the owner
		j.owner = owner
		j.at = now + j.ttr
		q.link(j, queue.Reserved)
		left = durationOf(j.at - now)
		return 0
	})
	return left, err
}

// Reservations is the part's side of Store.Reservations (queuestore.go).
func (q *jobQueue) Reservations(ctx context.Context, owner string) ([]queue.Reservation, error) {
	return read(ctx, q.tx(), func(now int64) ([]queue.Reservation, error) {
		out := make([]queue.Reservation, 0, len(q.byOwner[owner]))
		for j := range q.byOwner[owner] {
			out = append(out, queue.Reservation{ID: j.id, Left: durationOf(j.at - now)})
		}
		return out, nil
	})
}

// Unreserve is the part's side of Store.Unreserve (queuestore.go).
func (q *jobQueue) Unreserve(ctx context.Context, owner string, ids []queue.ID) (int, error) {
	return update(ctx, q.tx(), func(int64) (int, wal.Ticket, error) {
		n := 0
		for _, id := range ids {
			j := q.jobs[id]
			if j == nil || j.state != queue.Reserved || j.owner != owner {
				continue
			}
			q.unlink(j)
			j.at = 0
			q.link(j, queue.Ready)
			q.wakeLocked(j.tube.name)
			n++
		}
		return n, 0, nil
	})
}

// kickLocked moves a buried or delayed job to ready at now.
func (q *jobQueue) kickLocked(j *job, now int64) wal.Ticket {
	q.unlink(j)
	j.kicks++
	j.history().kicked = now
	j.at = 0
	q.link(j, queue.Ready)
	return q.e.append(kindUpdateH, q.encodeUpdate(j), nil)
}

// Kick is the part's side of Store.Kick (queuestore.go).
func (q *jobQueue) Kick(ctx context.Context, tube string, n int) (int, error) {
	return update(ctx, q.tx(), func(now int64) (int, wal.Ticket, error) {
		t := q.tubes[tube]
		if t == nil {
			return 0, 0, nil
		}
		h := &t.buried
		if h.len() == 0 {
			h = &t.delayed
		}
		k := 0
		var tk wal.Ticket
		for ; k < n && h.len() > 0; k++ {
			tk = q.kickLocked(h.top(), now)
		}
		if k > 0 {
			q.wakeLocked(tube)
		}
		return k, tk, nil
	})
}

// KickJob is the part's side of Store.KickJob (queuestore.go).
func (q *jobQueue) KickJob(ctx context.Context, id queue.ID) error {
	return write(ctx, q.tx(), func(now int64) (wal.Ticket, error) {
		j := q.jobs[id]
		switch {
		case j == nil:
			return 0, queue.ErrNotFound
		case j.state != queue.Buried && j.state != queue.Delayed:
			return 0, queue.ErrNotKickable
		}
		tk := q.kickLocked(j, now)
		q.wakeLocked(j.tube.name)
		return tk, nil
	})
}

// PeekStateN is the part's side of Store.PeekStateN (queuestore.go).
func (q *jobQueue) PeekStateN(ctx context.Context, tube string, st queue.State, n int) ([]queue.Job, error) {
	if st < queue.Ready || st > queue.Buried {
		return nil, fmt.Errorf("%w: PeekStateN of state %v", queue.ErrInvalid, st)
	}
	if n < 1 {
		return nil, fmt.Errorf("%w: PeekStateN of %d jobs", queue.ErrInvalid, n)
	}
	return read(ctx, q.tx(), func(int64) ([]queue.Job, error) {
		out := []queue.Job{}
		if t := q.tubes[tube]; t != nil {
			t.heap(st).first(n, func(j *job) { out = append(out, j.export()) })
		}
		return out, nil
	})
}

// StatsJob is the part's side of Store.StatsJob (queuestore.go).
func (q *jobQueue) StatsJob(ctx context.Context, id queue.ID) (queue.JobStats, error) {
	return read(ctx, q.tx(), func(now int64) (queue.JobStats, error) {
		j := q.jobs[id]
		if j == nil {
			return queue.JobStats{}, queue.ErrNotFound
		}
		return j.stats(now), nil
	})
}

// stats describes j at now, as StatsJob does.
func (j *job) stats(now int64) queue.JobStats {
	out := queue.JobStats{
		ID:       j.id,
		Tube:     j.tube.name,
		State:    j.state,
		Priority: j.pri,
		Age:      durationOf(now - j.created),
		Delay:    durationOf(j.delay),
		TTR:      durationOf(j.ttr),
		Reserves: j.reserves,
		Timeouts: j.timeouts,
		Releases: j.releases,
		Buries:   j.buries,
		Kicks:    j.kicks,
		PutAt:    timeOf(j.created),

		UniqueKey: j.key(),
		Body:      append(make([]byte, 0, len(j.body)), j.body...),

		TraceContext: j.traceContext(),
	}
	j.addHistory(&out)
	if (j.state == queue.Delayed && !isHeld(j)) || j.state == queue.Reserved {
		out.TimeLeft = durationOf(max(j.at-now, 0))
	}
	if j.state == queue.Reserved {
		out.ReservedBy = j.owner
	}
	return out

}

// StatsTube is the part's side of Store.StatsTube (queuestore.go).
func (q *jobQueue) StatsTube(ctx context.Context, tube string) (queue.TubeStats, error) {
	return read(ctx, q.tx(), func(now int64) (queue.TubeStats, error) { return q.statsTube(tube, now) })
}

// statsTube is StatsTube at now, under the Store's lock.
func (q *jobQueue) statsTube(tube string, now int64) (queue.TubeStats, error) {
	var out queue.TubeStats
	var err error
	f := q.families[tube]
	if t := q.tubes[tube]; t == nil && f != nil {
		out.Name = tube
		if tl := q.tubeLimits[tube]; tl != nil {
			out.Limits = tl.l
		}
		q.familyStats(f, &out)
	} else if t != nil {
		out = queue.TubeStats{
			Name:      t.name,
			Urgent:    t.urgent,
			Ready:     int64(t.ready.len()),
			Reserved:  int64(t.reserved.len()),
			Delayed:   int64(t.delayed.len()),
			Buried:    int64(t.buried.len()),
			TotalJobs: t.totalJobs,
			Deletes:   t.deletes,
			Pauses:    t.pauses,
			Reserves:  t.reserves,
			Buries:    t.buries,
			Timeouts:  t.timeouts,
			Cancels:   t.cancels,

			LimitHolds: t.limitHolds,
		}
		if tl := q.tubeLimits[tube]; tl != nil {
			out.Limits = tl.l
		}
		if t.paused {
			out.Pause = durationOf(t.pauseLen)
			out.PauseTimeLeft = durationOf(max(t.pauseUntil-now, 0))
		}
		if f != nil {
			q.familyStats(f, &out)
		}
	} else {
		err = queue.ErrNotFound
	}
	return out, err
}

// Stats is the part's side of Store.Stats (queuestore.go).
func (q *jobQueue) Stats(ctx context.Context) (queue.Stats, error) {
	return read(ctx, q.tx(), func(int64) (queue.Stats, error) {
		return queue.Stats{
			Urgent:    q.urgent,
			Ready:     q.ready,
			Reserved:  q.reserved,
			Delayed:   q.delayed,
			Buried:    q.buried,
			TotalJobs: q.totalJobs,
			Timeouts:  q.timeouts,
			Tubes:     int64(len(q.tubes)),
		}, nil
	})
}

// PauseTube is the part's side of Store.PauseTube (queuestore.go).
func (q *jobQueue) PauseTube(ctx context.Context, tube string, d time.Duration) error {
	return write(ctx, q.tx(), func(now int64) (wal.Ticket, error) {
		t := q.tubeFor(tube)
		var until int64
		if d > 0 {
			until = now + int64(d)
		}
		q.setPause(t, int64(d), until)
		tk := q.e.append(kindPause, q.encodePause(t), nil)
		q.wakeLocked(tube)
		return tk, nil
	})
}

// holdKey names the references of one session to one tube.
type holdKey struct{ session, tube string }

// Hold is the part's side of Store.Hold (queuestore.go).
func (q *jobQueue) Hold(ctx context.Context, owner, tube string, n int) error {
	return write(ctx, q.tx(), func(now int64) (wal.Ticket, error) {
		return q.holdLocked(owner, tube, n, now), nil
	})
}

// holdLocked is Hold at now, under the Store's lock.
func (q *jobQueue) holdLocked(owner, tube string, n int, now int64) wal.Ticket {
	k := holdKey{queue.SessionOf(owner), tube}
	had := q.holds[k]
	d := max(int64(n), -had)
	var tk wal.Ticket
	switch {
	case d > 0:
		q.holds[k] = had + d
		t := q.tubeFor(tube)
		t.refs += d
		if t.refs == d {
			tk = q.e.append(kindHold, q.encodeHold(t, now), nil)
		}
	case d < 0:
		if had+d == 0 {
			delete(q.holds, k)
		} else {
			q.holds[k] = had + d
		}
		t := q.tubes[tube]
		t.refs += d
		if t.refs == 0 {
			tk = q.e.append(kindHold, q.encodeHold(t, now), nil)
			tk = max(tk, q.freeLocked(t))
		}
	}
	return tk
}

// releaseAllLocked ends every reference, as when the process that held
// them is gone (at Open, after the replay), logging it.
func (q *jobQueue) releaseAllLocked(now int64) {
	clear(q.holds)
	for _, t := range q.tubesInOrder() {
		if t.refs > 0 {
			t.refs = 0
			q.e.append(kindHold, q.encodeHold(t, now), nil)
			q.freeLocked(t)
		}
	}
}

// Tubes is the part's side of Store.Tubes (queuestore.go).
func (q *jobQueue) Tubes(ctx context.Context) ([]string, error) {
	return read(ctx, q.tx(), func(int64) ([]string, error) {
		ts := q.tubesInOrder()
		names := make([]string, len(ts))
		for i, t := range ts {
			names[i] = t.name
		}
		return names, nil
	})
}
