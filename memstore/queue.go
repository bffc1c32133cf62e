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
	}
}

// Put implements queue.Store.
func (s *Store) Put(ctx context.Context, tube string, jobs []queue.NewJob) ([]queue.PutResult, error) {
	now, err := s.begin(ctx, queue.ErrClosed)
	if err != nil {
		return nil, err
	}
	t := s.tubes[tube]
	// How many jobs are new, for the cap and the ID space.
	n := 0
	var batch map[string]bool // unique keys earlier in this batch
	for _, nj := range jobs {
		if k := nj.UniqueKey; k != "" {
			if t != nil && t.keys[k] != nil || batch[k] {
				continue
			}
			if batch == nil {
				batch = map[string]bool{}
			}
			batch[k] = true
		}
		n++
	}
	if s.maxJobs > 0 && len(s.jobs)+n > s.maxJobs {
		err := fmt.Errorf("%w: %d jobs stored, %d more would pass the cap of %d", queue.ErrFull, len(s.jobs), n, s.maxJobs)
		s.end(now, 0)
		return nil, err
	}
	if uint64(s.lastID)+uint64(n) > uint64(queue.MaxID) {
		s.end(now, 0)
		return nil, fmt.Errorf("memstore: job IDs exhausted (the last issued is %d)", s.lastID)
	}
	res := make([]queue.PutResult, len(jobs))
	var tk wal.Ticket
	for i, nj := range jobs {
		if t == nil {
			t = s.tubeFor(tube)
		}
		if k := nj.UniqueKey; k != "" {
			if old := t.keys[k]; old != nil {
				res[i] = queue.PutResult{ID: old.id, Duplicate: true}
				continue
			}
		}
		var j *job
		j, tk = s.putJobLocked(t, nj, now)
		res[i] = queue.PutResult{ID: j.id}
	}
	if n > 0 {
		s.wakeLocked(tube)
	}
	if err := s.end(now, tk); err != nil {
		return nil, err
	}
	return res, nil
}

// putJobLocked stores a new job in t, counts it, and logs it; the caller
// has checked the cap, the ID space and the unique key.
func (s *Store) putJobLocked(t *tube, nj queue.NewJob, now int64) (*job, wal.Ticket) {
	s.lastID++
	j := &job{
		id:      s.lastID,
		tube:    t,
		pri:     nj.Priority,
		hidx:    -1,
		ttr:     int64(nj.TTR),
		delay:   int64(nj.Delay),
		created: now,
		body:    append(make([]byte, 0, len(nj.Body)), nj.Body...),
	}
	j.setKey(nj.UniqueKey)
	if j.ttr <= 0 {
		j.ttr = int64(queue.DefaultTTR)
	}
	st := queue.Ready
	if j.delay > 0 {
		st, j.at = queue.Delayed, now+j.delay
	}
	s.addJob(j, st)
	t.totalJobs++
	s.totalJobs++
	tk := s.append(kindPut, s.encodeJob(j, false), j.body)
	return j, tk
}

// Reserve implements queue.Store. When no job is ready, Next is the time
// until the earliest deadline of the asked tubes (a delay, a TTR or a pause
// running out), or -1; when jobs are returned, Next is -1 unless limits
// now hold back the rest (ReserveResult.Drained).
func (s *Store) Reserve(ctx context.Context, req queue.ReserveRequest) (queue.ReserveResult, error) {
	now, err := s.begin(ctx, queue.ErrClosed)
	if err != nil {
		return queue.ReserveResult{}, err
	}
	res := queue.ReserveResult{Next: -1}
	var tk wal.Ticket
	if len(req.Delete) > 0 {
		res.Deleted = make([]error, len(req.Delete))
		for i, id := range req.Delete {
			var t wal.Ticket
			t, res.Deleted[i] = s.deleteLocked(req.Owner, id)
			tk = max(tk, t)
		}
	}
	limited := len(s.tubeLimits) > 0
	for len(res.Jobs) < req.Max {
		var best *job
		for _, name := range req.Tubes {
			if f := s.families[name]; f != nil {
				// a tube with groups: the member whose turn it is
				if t, _, _ := s.familyScan(f, now); t != nil {
					if j := t.ready.top(); best == nil || readyLess(j, best) {
						best = j
					}
				}
				continue
			}
			t := s.tubes[name]
			if t == nil || t.paused {
				continue
			}
			j := t.ready.top()
			if j == nil || (best != nil && !readyLess(j, best)) {
				continue
			}
			if limited && s.limitWait(t, now) != 0 {
				continue
			}
			best = j
		}
		if best == nil {
			break
		}
		t := best.tube
		s.reserveLocked(best, req.Owner, now)
		if limited {
			s.chargeLocked(t, now)
		}
		if t.fam != nil {
			t.fam.served(t)
		}
		res.Jobs = append(res.Jobs, best.exportHeld(now))
	}
	var held map[string]int64
	if len(res.Jobs) < req.Max && limited {
		held = s.heldLocked(req.Tubes, now)
	}
	if len(res.Jobs) > 0 && limited {
		s.drainedLocked(req.Tubes, now, &res)
	}
	if len(res.Jobs) == 0 {
		for _, name := range req.Tubes {
			next := int64(never)
			if f := s.families[name]; f != nil {
				next = f.next()
			} else if t := s.tubes[name]; t != nil {
				next = t.next
			}
			if w := held[name]; w > 0 {
				next = min(next, now+w)
			}
			if next == never {
				continue
			}
			if d := durationOf(next - now); res.Next < 0 || d < res.Next {
				res.Next, res.NextTube = d, name
			}
		}
	}
	if err := s.end(now, tk); err != nil {
		return queue.ReserveResult{}, err
	}
	return res, nil
}

// reserveLocked reserves j for owner.
func (s *Store) reserveLocked(j *job, owner string, now int64) {
	s.unlink(j)
	j.owner = owner
	j.reserves++
	j.tube.reserves++
	j.reserved = now
	j.at = now + j.ttr
	s.link(j, queue.Reserved)
}

// ReserveJob implements queue.Store. A job reserved from the delayed or
// buried state is logged as ready, so that after a restart it is ready like
// every other job that was reserved.
func (s *Store) ReserveJob(ctx context.Context, owner string, id queue.ID) (queue.Job, error) {
	now, err := s.begin(ctx, queue.ErrClosed)
	if err != nil {
		return queue.Job{}, err
	}
	j := s.jobs[id]
	var tk wal.Ticket
	switch {
	case j == nil:
		err = queue.ErrNotFound
	case j.state == queue.Reserved:
		err = queue.ErrReserved
	default:
		was := j.state
		s.reserveLocked(j, owner, now)
		if was != queue.Ready {
			tk = s.append(kindUpdateH, s.encodeUpdate(j), nil)
		}
	}
	var out queue.Job
	if err == nil {
		out = j.exportHeld(now)
	}
	if err := s.end(now, tk); err != nil {
		return queue.Job{}, err
	}
	return out, err
}

// Delete implements queue.Store.
func (s *Store) Delete(ctx context.Context, owner string, ids []queue.ID) ([]error, error) {
	now, err := s.begin(ctx, queue.ErrClosed)
	if err != nil {
		return nil, err
	}
	errs := make([]error, len(ids))
	var tk wal.Ticket
	for i, id := range ids {
		var t wal.Ticket
		t, errs[i] = s.deleteLocked(owner, id)
		tk = max(tk, t)
	}
	if err := s.end(now, tk); err != nil {
		return nil, err
	}
	return errs, nil
}

// deleteLocked deletes job id for owner; the ticket is that of its record.
func (s *Store) deleteLocked(owner string, id queue.ID) (wal.Ticket, error) {
	j := s.jobs[id]
	switch {
	case j == nil:
		return 0, queue.ErrNotFound
	case j.state == queue.Reserved && j.owner != owner:
		return 0, queue.ErrReserved
	}
	t := j.tube
	s.freeSlotLocked(j)
	s.removeJob(j)
	tk := s.append(kindDelete, s.encodeDelete(id), nil)
	if t.jobs() == 0 {
		tk = max(tk, s.freeLocked(t))
	}
	return tk, nil
}

// heldBy returns the job id if owner has it reserved, or the error for
// Release, Bury and Touch.
func (s *Store) heldBy(owner string, id queue.ID) (*job, error) {
	j := s.jobs[id]
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
func (s *Store) onHeld(ctx context.Context, owner string, id queue.ID, f func(now int64, j *job) wal.Ticket) error {
	now, err := s.begin(ctx, queue.ErrClosed)
	if err != nil {
		return err
	}
	j, err := s.heldBy(owner, id)
	var tk wal.Ticket
	if err == nil {
		tk = f(now, j)
	}
	if err := s.end(now, tk); err != nil {
		return err
	}
	return err
}

// Release implements queue.Store.
func (s *Store) Release(ctx context.Context, owner string, id queue.ID, pri int64, delay time.Duration, reason string) error {
	return s.onHeld(ctx, owner, id, func(now int64, j *job) wal.Ticket {
		s.unlink(j)
		if pri != queue.KeepPriority {
			j.pri = uint32(pri)
		}
		j.releases++
		j.history().released = now
		j.noteError(reason, now)
		j.delay = int64(delay)
		st := queue.Ready
		j.at = 0
		if delay > 0 {
			st, j.at = queue.Delayed, now+int64(delay)
		}
		s.link(j, st)
		s.wakeLocked(j.tube.name)
		return s.append(kindUpdateH, s.encodeUpdate(j), nil)
	})
}

// Bury implements queue.Store.
func (s *Store) Bury(ctx context.Context, owner string, id queue.ID, pri int64, reason string) error {
	return s.onHeld(ctx, owner, id, func(now int64, j *job) wal.Ticket {
		s.freeSlotLocked(j)
		s.unlink(j)
		if pri != queue.KeepPriority {
			j.pri = uint32(pri)
		}
		j.buries++
		j.tube.buries++
		j.history().buried = now
		j.noteError(reason, now)
		s.burySeq++
		j.at = s.burySeq
		s.link(j, queue.Buried)
		return s.append(kindUpdateH, s.encodeUpdate(j), nil)
	})
}

// Touch implements queue.Store. Touches are not logged.
func (s *Store) Touch(ctx context.Context, owner string, id queue.ID) (time.Duration, error) {
	var left time.Duration
	err := s.onHeld(ctx, owner, id, func(now int64, j *job) wal.Ticket {
		s.unlink(j) // clears the owner
		j.owner = owner
		j.at = now + j.ttr
		s.link(j, queue.Reserved)
		left = durationOf(j.at - now)
		return 0
	})
	return left, err
}

// Reservations implements queue.Store: the owner's entries in the index of
// reserved jobs by owner (the TTRs that ran out were applied when the call
// began), so it costs O(the owner's reservations).
func (s *Store) Reservations(ctx context.Context, owner string) ([]queue.Reservation, error) {
	now, err := s.begin(ctx, queue.ErrClosed)
	if err != nil {
		return nil, err
	}
	out := make([]queue.Reservation, 0, len(s.byOwner[owner]))
	for j := range s.byOwner[owner] {
		out = append(out, queue.Reservation{ID: j.id, Left: durationOf(j.at - now)})
	}
	s.end(now, 0)
	return out, nil
}

// Unreserve implements queue.Store. Nothing is logged: a reserved job is
// ready in the log already.
func (s *Store) Unreserve(ctx context.Context, owner string, ids []queue.ID) (int, error) {
	now, err := s.begin(ctx, queue.ErrClosed)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, id := range ids {
		j := s.jobs[id]
		if j == nil || j.state != queue.Reserved || j.owner != owner {
			continue
		}
		s.unlink(j)
		j.at = 0
		s.link(j, queue.Ready)
		s.wakeLocked(j.tube.name)
		n++
	}
	if err := s.end(now, 0); err != nil {
		return 0, err
	}
	return n, nil
}

// kickLocked moves a buried or delayed job to ready at now.
func (s *Store) kickLocked(j *job, now int64) wal.Ticket {
	s.unlink(j)
	j.kicks++
	j.history().kicked = now
	j.at = 0
	s.link(j, queue.Ready)
	return s.append(kindUpdateH, s.encodeUpdate(j), nil)
}

// Kick implements queue.Store.
func (s *Store) Kick(ctx context.Context, tube string, n int) (int, error) {
	now, err := s.begin(ctx, queue.ErrClosed)
	if err != nil {
		return 0, err
	}
	k := 0
	var tk wal.Ticket
	if t := s.tubes[tube]; t != nil {
		h := &t.buried
		if h.len() == 0 {
			h = &t.delayed
		}
		for ; k < n && h.len() > 0; k++ {
			tk = s.kickLocked(h.top(), now)
		}
		if k > 0 {
			s.wakeLocked(tube)
		}
	}
	if err := s.end(now, tk); err != nil {
		return 0, err
	}
	return k, nil
}

// KickJob implements queue.Store.
func (s *Store) KickJob(ctx context.Context, id queue.ID) error {
	now, err := s.begin(ctx, queue.ErrClosed)
	if err != nil {
		return err
	}
	j := s.jobs[id]
	var tk wal.Ticket
	switch {
	case j == nil:
		err = queue.ErrNotFound
	case j.state != queue.Buried && j.state != queue.Delayed:
		err = queue.ErrNotKickable
	default:
		tk = s.kickLocked(j, now)
		s.wakeLocked(j.tube.name)
	}
	if err := s.end(now, tk); err != nil {
		return err
	}
	return err
}

// PeekStateN implements queue.Store. It walks the state's heap from the
// top, taking the least of the frontier each time, so it costs O(n log n)
// whatever the tube holds.
func (s *Store) PeekStateN(ctx context.Context, tube string, st queue.State, n int) ([]queue.Job, error) {
	if st < queue.Ready || st > queue.Buried {
		return nil, fmt.Errorf("%w: PeekStateN of state %v", queue.ErrInvalid, st)
	}
	if n < 1 {
		return nil, fmt.Errorf("%w: PeekStateN of %d jobs", queue.ErrInvalid, n)
	}
	now, err := s.begin(ctx, queue.ErrClosed)
	if err != nil {
		return nil, err
	}
	var out []queue.Job
	if t := s.tubes[tube]; t != nil {
		t.heap(st).first(n, func(j *job) { out = append(out, j.export()) })
	}
	s.end(now, 0)
	if out == nil {
		out = []queue.Job{}
	}
	return out, nil
}

// StatsJob implements queue.Store.
func (s *Store) StatsJob(ctx context.Context, id queue.ID) (queue.JobStats, error) {
	now, err := s.begin(ctx, queue.ErrClosed)
	if err != nil {
		return queue.JobStats{}, err
	}
	var out queue.JobStats
	if j := s.jobs[id]; j != nil {
		out = queue.JobStats{
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
		}
		j.addHistory(&out)
		if j.state == queue.Delayed || j.state == queue.Reserved {
			out.TimeLeft = durationOf(max(j.at-now, 0))
		}
		if j.state == queue.Reserved {
			out.ReservedBy = j.owner
		}
	} else {
		err = queue.ErrNotFound
	}
	s.end(now, 0)
	return out, err
}

// StatsTube implements queue.Store.
func (s *Store) StatsTube(ctx context.Context, tube string) (queue.TubeStats, error) {
	now, err := s.begin(ctx, queue.ErrClosed)
	if err != nil {
		return queue.TubeStats{}, err
	}
	var out queue.TubeStats
	f := s.families[tube]
	if t := s.tubes[tube]; t == nil && f != nil {
		out.Name = tube
		if tl := s.tubeLimits[tube]; tl != nil {
			out.Limits = tl.l
		}
		s.familyStats(f, &out)
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

			LimitHolds: t.limitHolds,
		}
		if tl := s.tubeLimits[tube]; tl != nil {
			out.Limits = tl.l
		}
		if t.paused {
			out.Pause = durationOf(t.pauseLen)
			out.PauseTimeLeft = durationOf(max(t.pauseUntil-now, 0))
		}
		if f != nil {
			s.familyStats(f, &out)
		}
	} else {
		err = queue.ErrNotFound
	}
	s.end(now, 0)
	return out, err
}

// Stats implements queue.Store. TotalJobs and Timeouts count since the
// Store was made (New) or opened (Open).
func (s *Store) Stats(ctx context.Context) (queue.Stats, error) {
	now, err := s.begin(ctx, queue.ErrClosed)
	if err != nil {
		return queue.Stats{}, err
	}
	out := queue.Stats{
		Urgent:    s.urgent,
		Ready:     s.ready,
		Reserved:  s.reserved,
		Delayed:   s.delayed,
		Buried:    s.buried,
		TotalJobs: s.totalJobs,
		Timeouts:  s.timeouts,
		Tubes:     int64(len(s.tubes)),
	}
	s.end(now, 0)
	return out, nil
}

// PauseTube implements queue.Store.
func (s *Store) PauseTube(ctx context.Context, tube string, d time.Duration) error {
	now, err := s.begin(ctx, queue.ErrClosed)
	if err != nil {
		return err
	}
	t := s.tubeFor(tube)
	var until int64
	if d > 0 {
		until = now + int64(d)
	}
	s.setPause(t, int64(d), until)
	tk := s.append(kindPause, s.encodePause(t), nil)
	s.wakeLocked(tube)
	return s.end(now, tk)
}

// holdKey names the references of one session to one tube.
type holdKey struct{ session, tube string }

// Hold implements queue.Store. References are not logged.
func (s *Store) Hold(ctx context.Context, owner, tube string, n int) error {
	now, err := s.begin(ctx, queue.ErrClosed)
	if err != nil {
		return err
	}
	k := holdKey{queue.SessionOf(owner), tube}
	had := s.holds[k]
	d := max(int64(n), -had)
	var tk wal.Ticket
	switch {
	case d > 0:
		s.holds[k] = had + d
		t := s.tubeFor(tube)
		t.refs += d
		if t.refs == d {
			tk = s.append(kindHold, s.encodeHold(t, now), nil)
		}
	case d < 0:
		if had+d == 0 {
			delete(s.holds, k)
		} else {
			s.holds[k] = had + d
		}
		t := s.tubes[tube]
		t.refs += d
		if t.refs == 0 {
			tk = s.append(kindHold, s.encodeHold(t, now), nil)
			tk = max(tk, s.freeLocked(t))
		}
	}
	return s.end(now, tk)
}

// releaseAllLocked ends every reference, as when the process that held
// them is gone (at Open, after the replay), logging it.
func (s *Store) releaseAllLocked(now int64) {
	clear(s.holds)
	for _, t := range s.tubesInOrder() {
		if t.refs > 0 {
			t.refs = 0
			s.append(kindHold, s.encodeHold(t, now), nil)
			s.freeLocked(t)
		}
	}
}

// Tubes implements queue.Store.
func (s *Store) Tubes(ctx context.Context) ([]string, error) {
	now, err := s.begin(ctx, queue.ErrClosed)
	if err != nil {
		return nil, err
	}
	ts := s.tubesInOrder()
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = t.name
	}
	s.end(now, 0)
	return names, nil
}

// CheckInvariants verifies the Store's structures: every job is in exactly
// the heap of its state, at the index it records; every heap is ordered;
// the counts match the heaps; unique keys point at their jobs; the schedule
// of tubes matches their deadlines; no tube is empty, unreferenced and
// unpaused; references add up; and no ID is beyond the last one issued.
// It is meant for tests.
func (s *Store) CheckInvariants(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.checkLocked()
}

func (s *Store) checkLocked() error {
	var counts [queue.Buried + 1]int64
	var urgent, live int64
	seen := 0
	for name, t := range s.tubes {
		if t.name != name {
			return fmt.Errorf("tube %q is filed under %q", t.name, name)
		}
		if t.jobs() == 0 && !t.paused && t.refs == 0 {
			return fmt.Errorf("tube %q has no job, no reference and no pause but exists", name)
		}
		if t.seq == 0 || t.seq > s.tubeSeq {
			return fmt.Errorf("tube %q has sequence number %d, last issued %d", name, t.seq, s.tubeSeq)
		}
		var tu int64
		for st := queue.Ready; st <= queue.Buried; st++ {
			h := t.heap(st)
			if j, ok := h.check(); !ok {
				return fmt.Errorf("tube %q: %v heap out of order or misindexed at job %d", name, st, j.id)
			}
			for _, j := range h.s {
				seen++
				switch {
				case j.state != st:
					return fmt.Errorf("job %d is %v but in the %v heap of %q", j.id, j.state, st, name)
				case j.tube != t:
					return fmt.Errorf("job %d of tube %q is in tube %q", j.id, j.tube.name, name)
				case s.jobs[j.id] != j:
					return fmt.Errorf("job %d is in tube %q but not in the job table", j.id, name)
				case j.id == 0 || j.id > s.lastID:
					return fmt.Errorf("job %d has an ID beyond the last issued (%d)", j.id, s.lastID)
				case (st == queue.Reserved) != (j.owner != ""):
					return fmt.Errorf("job %d is %v with owner %q", j.id, st, j.owner)
				case j.key() != "" && t.keys[j.key()] != j:
					return fmt.Errorf("job %d's unique key %q is not filed to it", j.id, j.key())
				}
				if st == queue.Ready && j.pri < queue.UrgentPriority {
					tu++
				}
				if st == queue.Buried && j.at > s.burySeq {
					return fmt.Errorf("buried job %d has bury sequence %d beyond the last issued %d", j.id, j.at, s.burySeq)
				}
				live += jobSize(j)
			}
			counts[st] += int64(h.len())
		}
		if tu != t.urgent {
			return fmt.Errorf("tube %q counts %d urgent jobs, has %d", name, t.urgent, tu)
		}
		urgent += tu
		for k, j := range t.keys {
			if s.jobs[j.id] != j || j.key() != k || j.tube != t {
				return fmt.Errorf("tube %q files unique key %q to job %d, which does not hold it", name, k, j.id)
			}
		}
		if want := t.deadline(); t.next != want {
			return fmt.Errorf("tube %q is scheduled at %d, its deadline is %d", name, t.next, want)
		}
		if (t.next == never) != (t.sidx < 0) || t.sidx >= 0 && (t.sidx >= len(s.sched) || s.sched[t.sidx] != t) {
			return fmt.Errorf("tube %q is misplaced in the schedule (index %d)", name, t.sidx)
		}
	}
	if seen != len(s.jobs) {
		return fmt.Errorf("%d jobs in the job table, %d in the tubes' heaps", len(s.jobs), seen)
	}
	indexed := 0
	for owner, m := range s.byOwner {
		if len(m) == 0 {
			return fmt.Errorf("owner %q has an empty entry in the reservation index", owner)
		}
		for j := range m {
			if j.state != queue.Reserved || j.owner != owner || s.jobs[j.id] != j {
				return fmt.Errorf("the reservation index files job %d to %q, which is %v by %q", j.id, owner, j.state, j.owner)
			}
		}
		indexed += len(m)
	}
	if int64(indexed) != counts[queue.Reserved] {
		return fmt.Errorf("%d jobs in the reservation index, %d reserved", indexed, counts[queue.Reserved])
	}
	for i, t := range s.sched {
		if t.sidx != i || s.tubes[t.name] != t {
			return fmt.Errorf("schedule entry %d (tube %q) is stale", i, t.name)
		}
		if i > 0 && t.next < s.sched[(i-1)/2].next {
			return fmt.Errorf("schedule out of order at tube %q", t.name)
		}
	}
	got := [...]int64{queue.Ready: s.ready, queue.Delayed: s.delayed, queue.Reserved: s.reserved, queue.Buried: s.buried}
	for st := queue.Ready; st <= queue.Buried; st++ {
		if got[st] != counts[st] {
			return fmt.Errorf("%d jobs counted %v, %d are", got[st], st, counts[st])
		}
	}
	if urgent != s.urgent {
		return fmt.Errorf("%d jobs counted urgent, %d are", s.urgent, urgent)
	}
	if live != s.live {
		return fmt.Errorf("live size counted %d, is %d", s.live, live)
	}
	refs := map[string]int64{}
	for k, n := range s.holds {
		if n <= 0 {
			return fmt.Errorf("session %q holds %d references to tube %q", k.session, n, k.tube)
		}
		refs[k.tube] += n
	}
	for name, n := range refs {
		if t := s.tubes[name]; t == nil {
			return fmt.Errorf("sessions hold %d references to tube %q, which does not exist", n, name)
		}
	}
	for name, t := range s.tubes {
		if t.refs != refs[name] {
			return fmt.Errorf("tube %q counts %d references, sessions hold %d", name, t.refs, refs[name])
		}
	}
	for tube, ls := range s.tubeListeners.byKey {
		if len(ls) == 0 || slices.ContainsFunc(ls, func(l *listener) bool { return l.key != tube }) {
			return fmt.Errorf("listeners of tube %q misfiled", tube)
		}
	}
	return s.checkFamilies()
}
