package memstore

import (
	"cmp"
	"container/heap"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/hourglass-io/hourglass/internal/wal"
	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/schedule"
)

// Record kinds of schedules: the range 128–159.
const (
	kindSchedState  = 128 // a schedule's whole state, as written before 130 (read at replay only)
	kindSchedDelete = 129 // s name
	// kindSchedState2: a schedule's whole state (log and snapshot): 128's
	// layout then the overlap policy and what it counts; layout in
	// encodeSched. 131–133 are free for the schedules' overlap (a
	// buffer_one job held behind the running one is a queue record,
	// kindBehind).
	kindSchedState2 = 130
)

// Schedules is the embedded engine's schedule.Store, a part of the Store
// (see part.go) sharing its lock, clock and log: a fire puts its job and
// advances its schedule under one lock hold and in adjacent log records.
// Schedules have no deadline of the Store's: a schedule.Client asks Due
// and fires them. Get it with Store.Schedules.
type Schedules struct {
	e *engine
	q *jobQueue // where a fire puts its job (jobQueue.putOnce)

	// Guarded by the engine's mutex.
	byName    map[string]*scEntry
	due       scHeap    // unpaused schedules with a next tick, earliest first
	listeners listeners // Listen, all under ""
}

// Schedules returns the Store's schedule.Store (the same one on every
// call).
func (s *Store) Schedules() *Schedules { return &s.schedules }

func (c *Schedules) init(e *engine, q *jobQueue) {
	c.e, c.q = e, q
	c.byName = map[string]*scEntry{}
}

func (c *Schedules) next() int64              { return never }
func (c *Schedules) advance(int64) wal.Ticket { return 0 }
func (c *Schedules) recovered(int64)          {}
func (c *Schedules) size() int64              { return 0 }
func (c *Schedules) close()                   { clear(c.listeners.byKey) }

type scEntry struct {
	st   schedule.State
	hidx int // index in due, -1 when not in it
}

type scHeap []*scEntry

func (h scHeap) Len() int { return len(h) }
func (h scHeap) Less(i, j int) bool {
	if c := h[i].st.Next.Compare(h[j].st.Next); c != 0 {
		return c < 0
	}
	return h[i].st.Name < h[j].st.Name
}
func (h scHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].hidx, h[j].hidx = i, j
}
func (h *scHeap) Push(x any) { e := x.(*scEntry); e.hidx = len(*h); *h = append(*h, e) }
func (h *scHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	e.hidx = -1
	return e
}

// index puts e in, or takes it out of, the due heap as its state says.
func (c *Schedules) index(e *scEntry) {
	want := !e.st.Paused && !e.st.Next.IsZero()
	switch {
	case want && e.hidx >= 0:
		heap.Fix(&c.due, e.hidx)
	case want:
		heap.Push(&c.due, e)
	case e.hidx >= 0:
		heap.Remove(&c.due, e.hidx)
	}
}

// tx is the terms of the Schedules' operations (see update).
func (c *Schedules) tx() tx { return tx{e: c.e, closed: schedule.ErrClosed} }

// Set implements schedule.Store.
func (c *Schedules) Set(ctx context.Context, st schedule.State) (schedule.State, error) {
	return update(ctx, c.tx(), func(int64) (schedule.State, wal.Ticket, error) { return c.set(st) })
}

// set is Set under the Store's lock.
func (c *Schedules) set(st schedule.State) (schedule.State, wal.Ticket, error) {
	e := c.byName[st.Name]
	if e != nil && schedule.EqualDefinition(e.st.Schedule, st.Schedule) {
		return cloneState(e.st), 0, nil
	}
	if e != nil && e.st.Job.Tube != st.Job.Tube {
		return schedule.State{}, 0, fmt.Errorf("%w: Job.Tube: schedule %q puts into tube %q; delete it to move it to %q", schedule.ErrInvalidOption, st.Name, e.st.Job.Tube, st.Job.Tube)
	}
	if e == nil {
		e = &scEntry{hidx: -1}
		e.st.Name = st.Name
		c.byName[st.Name] = e
	}
	e.st.Schedule = st.Schedule
	e.st.Schedule.Job.Body = slices.Clone(st.Job.Body)
	e.st.Next = st.Next
	e.st.Version++
	c.index(e)
	tk := c.e.append(kindSchedState2, c.encodeSched(&e.st), nil)
	c.e.wake(&c.listeners, "")
	return cloneState(e.st), tk, nil
}

// Get implements schedule.Store.
func (c *Schedules) Get(ctx context.Context, name string) (schedule.State, error) {
	return read(ctx, c.tx(), func(int64) (schedule.State, error) {
		e := c.byName[name]
		if e == nil {
			return schedule.State{}, schedule.ErrNotFound
		}
		return cloneState(e.st), nil
	})
}

// List implements schedule.Store.
func (c *Schedules) List(ctx context.Context, after string, limit int) ([]schedule.State, error) {
	return read(ctx, c.tx(), func(int64) ([]schedule.State, error) {
		names := make([]string, 0, len(c.byName))
		for n := range c.byName {
			if n > after {
				names = append(names, n)
			}
		}
		sort.Strings(names)
		out := make([]schedule.State, 0, min(limit, len(names)))
		for _, n := range names[:min(limit, len(names))] {
			out = append(out, cloneState(c.byName[n].st))
		}
		return out, nil
	})
}

// Delete implements schedule.Store.
func (c *Schedules) Delete(ctx context.Context, name string) error {
	return write(ctx, c.tx(), func(int64) (wal.Ticket, error) {
		e := c.byName[name]
		if e == nil {
			return 0, schedule.ErrNotFound
		}
		if e.hidx >= 0 {
			heap.Remove(&c.due, e.hidx)
		}
		delete(c.byName, name)
		return c.e.append(kindSchedDelete, appendString(c.e.scratch[:0], name), nil), nil
	})
}

// SetPaused implements schedule.Store.
func (c *Schedules) SetPaused(ctx context.Context, name string, paused bool, next time.Time) (schedule.State, error) {
	return update(ctx, c.tx(), func(int64) (schedule.State, wal.Ticket, error) {
		return c.setPaused(name, paused, next)
	})
}

// setPaused is SetPaused under the Store's lock.
func (c *Schedules) setPaused(name string, paused bool, next time.Time) (schedule.State, wal.Ticket, error) {
	e := c.byName[name]
	if e == nil {
		return schedule.State{}, 0, schedule.ErrNotFound
	}
	if e.st.Paused == paused {
		return cloneState(e.st), 0, nil
	}
	if !paused && e.st.PauseReason != "" {
		// The buried job that paused it is acknowledged: the next tick
		// does not pause again for it.
		e.st.LastJob = 0
	}
	e.st.Paused = paused
	e.st.PauseReason = ""
	if !paused {
		e.st.Next = next
		c.e.wake(&c.listeners, "")
	}
	e.st.Version++
	c.index(e)
	tk := c.e.append(kindSchedState2, c.encodeSched(&e.st), nil)
	return cloneState(e.st), tk, nil
}

// Fire implements schedule.Store: the job is put and the schedule advanced
// under one hold of the Store's lock.
func (c *Schedules) Fire(ctx context.Context, req schedule.FireRequest) (schedule.FireResult, error) {
	var tell []*cancelListener // the cancelled job's listeners, told once the cancel is durable
	var putErr error           // a put that failed after the previous job was cancelled
	var tick time.Time
	res, err := update(ctx, c.tx(), func(now int64) (schedule.FireResult, wal.Ticket, error) {
		return c.fire(req, now, &tick, &tell, &putErr)
	})
	if putErr != nil {
		// The cancel is done and logged: it is kept (its holder told), and
		// the schedule as it was.
		if err == nil {
			c.tell(tell, res.CancelledPrevious, req.Name, tick)
		}
		return schedule.FireResult{}, putErr
	}
	if err != nil {
		return schedule.FireResult{}, err
	}
	c.tell(tell, res.CancelledPrevious, req.Name, tick)
	return res, nil
}

// tell calls the listeners of a job cancelled by the fire of name's tick.
func (c *Schedules) tell(tell []*cancelListener, id uint64, name string, tick time.Time) {
	for _, l := range tell {
		l.f(queue.ID(id), schedule.CancelReason(name, tick))
	}
}

// fire is Fire under the Store's lock at now; it sets the tick fired, the
// listeners to tell of a cancel and, when the put fails after a cancel,
// its failure (then the result carries the cancel and the ticket its
// record).
func (c *Schedules) fire(req schedule.FireRequest, now int64, tickp *time.Time, tell *[]*cancelListener, putErr *error) (schedule.FireResult, wal.Ticket, error) {
	fail := func(err error) (schedule.FireResult, wal.Ticket, error) {
		return schedule.FireResult{}, 0, err
	}
	e := c.byName[req.Name]
	if e == nil || (req.Tube != "" && req.Tube != e.st.Job.Tube) {
		return fail(schedule.ErrNotFound)
	}
	tick := req.Tick
	if req.Manual {
		tick = time.Unix(0, now)
	} else {
		if e.st.Paused || e.st.Version != req.Version || !e.st.Next.Equal(req.Next) {
			return fail(schedule.ErrConflict)
		}
		if req.Next.UnixNano() > now || (!tick.IsZero() && tick.UnixNano() > now) {
			return fail(schedule.ErrNotDue)
		}
	}
	*tickp = tick
	res := schedule.FireResult{}
	var tk wal.Ticket
	put := !tick.IsZero()
	var behind *job // buffer_one: the reserved previous job the tick's job waits behind
	if put && !req.Manual {
		// The previous job's state, as the overlap policy and
		// PauseOnFailure see it (due transitions applied at begin).
		prev := c.q.jobs[queue.ID(e.st.LastJob)]
		if prev != nil && prev.tube.name != e.st.Job.Tube {
			prev = nil
		}
		switch {
		case prev == nil:
		case prev.state == queue.Buried && e.st.PauseOnFailure:
			reason := ""
			if prev.more != nil {
				reason = prev.more.lastErr
			}
			e.st.Paused = true
			e.st.PauseReason = schedule.PauseReasonBuried(uint64(prev.id), reason)
			e.st.Skips++
			res.SelfPaused, put = true, false
		case prev.state == queue.Buried:
		case e.st.Overlap == schedule.OverlapSkip,
			e.st.Overlap == schedule.OverlapBufferOne && prev.state != queue.Reserved:
			e.st.Skips++
			res.Overlapped, put = true, false
		case e.st.Overlap == schedule.OverlapCancelPrevious:
			res.CancelledPrevious = uint64(prev.id)
			tk, *tell = c.q.cancelLocked(prev, schedule.CancelReason(req.Name, tick), now)
		case e.st.Overlap == schedule.OverlapBufferOne:
			behind = prev // reserved: the tick's job is held until it ends
		}
	}
	if put {
		id, ptk, err := c.q.putOnce(e.st.Job.Tube, queue.NewJob{
			Body: e.st.Job.Body, Priority: e.st.Job.Priority, TTR: cmp.Or(e.st.Job.TTR, queue.DefaultTTR),
			UniqueKey: schedule.JobKey(req.Name, tick), TraceContext: req.TraceContext,
		}, now, behind)
		if err != nil {
			err = fmt.Errorf("schedule %q: %w", req.Name, err)
			if tk != 0 {
				*putErr = err
				return schedule.FireResult{CancelledPrevious: res.CancelledPrevious}, tk, nil
			}
			return fail(err)
		}
		tk = max(tk, ptk)
		res.JobID = uint64(id)
		res.Fired = true
		e.st.Fires++
		e.st.LastJob = res.JobID
		f := schedule.Fire{Tick: tick, JobID: res.JobID, Lateness: time.Duration(now - tick.UnixNano()), Manual: req.Manual}
		e.st.Last = append([]schedule.Fire{f}, e.st.Last[:min(len(e.st.Last), schedule.KeepFires-1)]...)
	}
	if !req.Manual {
		e.st.Next = req.NewNext
		e.st.Misfires += uint64(req.Skipped)
	}
	e.st.Version++
	c.index(e)
	tk = max(tk, c.e.append(kindSchedState2, c.encodeSched(&e.st), nil))
	res.State = cloneState(e.st)
	return res, tk, nil
}

// Due implements schedule.Store.
func (c *Schedules) Due(ctx context.Context, limit int) (schedule.DueResult, error) {
	return read(ctx, c.tx(), func(now int64) (schedule.DueResult, error) { return c.dueAt(now, limit), nil })
}

// dueAt is Due under the Store's lock at now.
func (c *Schedules) dueAt(now int64, limit int) schedule.DueResult {
	res := schedule.DueResult{Now: time.Unix(0, now)}
	// The heap's order: collect the due prefix by a bounded walk.
	var walk func(i int)
	walk = func(i int) {
		if i >= len(c.due) || len(res.Due) >= limit {
			return
		}
		e := c.due[i]
		if e.st.Next.UnixNano() > now {
			if res.Earliest.IsZero() || e.st.Next.Before(res.Earliest) {
				res.Earliest = e.st.Next
			}
			return
		}
		res.Due = append(res.Due, cloneState(e.st))
		walk(2*i + 1)
		walk(2*i + 2)
	}
	walk(0)
	if len(res.Due) > 0 {
		res.Earliest = time.Time{}
	}
	return res
}

// Now implements schedule.Store: the store's clock (Options.Clock).
func (c *Schedules) Now(ctx context.Context) (time.Time, error) {
	return read(ctx, c.tx(), func(now int64) (time.Time, error) { return time.Unix(0, now), nil })
}

// Listen implements schedule.Notifier: wake is called after a schedule is
// set or resumed.
func (c *Schedules) Listen(ctx context.Context, topic string, wake func(topic string)) (func(), error) {
	if topic != schedule.TopicDue {
		return nil, fmt.Errorf("memstore: %w: %q (want %q)", schedule.ErrNoTopic, topic, schedule.TopicDue)
	}
	return c.e.listen(ctx, &c.listeners, "", func(string) { wake(topic) }, schedule.ErrClosed)
}

func cloneState(st schedule.State) schedule.State {
	st.Job.Body = slices.Clone(st.Job.Body)
	if st.Job.Body == nil {
		st.Job.Body = []byte{}
	}
	st.Last = slices.Clone(st.Last)
	return st
}

// Layout of kindSchedState (t: v Unix ns, MinInt64 for the zero time):
//
//	s name, s spec, s zone, t start, t end, s tube, u pri, v ttr, byte policy,
//	u catch-up n, v grace, u version, t next, byte paused, u fires, u misfires,
//	u count, count × (t tick, u job id, v lateness, byte manual), s body
//
// and of kindSchedState2, which encodeSched writes: the same, then
//
//	byte overlap, byte pause on failure, u skips, s pause reason, u last job
func (c *Schedules) encodeSched(st *schedule.State) []byte {
	b := c.e.scratch[:0]
	b = appendString(b, st.Name)
	b = appendString(b, st.Spec)
	b = appendString(b, st.Zone)
	b = appendTime(b, st.Start)
	b = appendTime(b, st.End)
	b = appendString(b, st.Job.Tube)
	b = binary.AppendUvarint(b, uint64(st.Job.Priority))
	b = binary.AppendVarint(b, int64(st.Job.TTR))
	b = append(b, byte(st.Misfire.Kind))
	b = binary.AppendUvarint(b, uint64(st.Misfire.N))
	b = binary.AppendVarint(b, int64(st.Grace))
	b = binary.AppendUvarint(b, st.Version)
	b = appendTime(b, st.Next)
	b = append(b, boolByte(st.Paused))
	b = binary.AppendUvarint(b, st.Fires)
	b = binary.AppendUvarint(b, st.Misfires)
	b = binary.AppendUvarint(b, uint64(len(st.Last)))
	for _, f := range st.Last {
		b = appendTime(b, f.Tick)
		b = binary.AppendUvarint(b, f.JobID)
		b = binary.AppendVarint(b, int64(f.Lateness))
		b = append(b, boolByte(f.Manual))
	}
	b = appendString(b, string(st.Job.Body))
	b = append(b, byte(st.Overlap), boolByte(st.PauseOnFailure))
	b = binary.AppendUvarint(b, st.Skips)
	b = appendString(b, st.PauseReason)
	b = binary.AppendUvarint(b, st.LastJob)
	c.e.scratch = b
	return b
}

func boolByte(v bool) byte {
	if v {
		return 1
	}
	return 0
}

func appendTime(b []byte, t time.Time) []byte {
	if t.IsZero() {
		return binary.AppendVarint(b, math.MinInt64)
	}
	return binary.AppendVarint(b, t.UnixNano())
}

func (d *decoder) time() time.Time {
	v := d.varint()
	if v == math.MinInt64 {
		return time.Time{}
	}
	return time.Unix(0, v)
}

func (c *Schedules) decodeSched(d *decoder, kind byte) (schedule.State, error) {
	var st schedule.State
	st.Name, st.Spec, st.Zone = d.string(), d.string(), d.string()
	st.Start, st.End = d.time(), d.time()
	st.Job.Tube = d.string()
	st.Job.Priority = d.u32()
	st.Job.TTR = time.Duration(d.varint())
	st.Misfire.Kind = schedule.PolicyKind(d.byte())
	st.Misfire.N = int(d.uvarint())
	st.Grace = time.Duration(d.varint())
	st.Version = d.uvarint()
	st.Next = d.time()
	st.Paused = d.byte() == 1
	st.Fires, st.Misfires = d.uvarint(), d.uvarint()
	n := d.uvarint()
	if n > schedule.KeepFires {
		return st, errBadRecord
	}
	for range n {
		st.Last = append(st.Last, schedule.Fire{Tick: d.time(), JobID: d.uvarint(), Lateness: time.Duration(d.varint()), Manual: d.byte() == 1})
	}
	st.Job.Body = []byte(d.string())
	if kind == kindSchedState2 {
		st.Overlap, st.PauseOnFailure = schedule.Overlap(d.byte()), d.byte() == 1
		st.Skips = d.uvarint()
		st.PauseReason = d.string()
		st.LastJob = d.uvarint()
	}
	return st, d.end()
}

// replay applies one schedule record at Open.
func (c *Schedules) replay(kind byte, d *decoder) error {
	switch kind {
	case kindSchedState, kindSchedState2:
		st, err := c.decodeSched(d, kind)
		if err != nil {
			return err
		}
		e := c.byName[st.Name]
		if e == nil {
			e = &scEntry{hidx: -1}
			c.byName[st.Name] = e
		}
		e.st = st
		c.index(e)
		return nil
	case kindSchedDelete:
		name := d.string()
		if err := d.end(); err != nil {
			return err
		}
		e := c.byName[name]
		if e == nil {
			return fmt.Errorf("delete of unknown schedule %q", name)
		}
		if e.hidx >= 0 {
			heap.Remove(&c.due, e.hidx)
		}
		delete(c.byName, name)
		return nil
	}
	return fmt.Errorf("unknown record kind %d", kind)
}

// snapshot adds every schedule to a snapshot, in name order.
func (c *Schedules) snapshot(w *wal.SnapshotWriter) {
	es := make([]*scEntry, 0, len(c.byName))
	for _, e := range c.byName {
		es = append(es, e)
	}
	slices.SortFunc(es, func(a, b *scEntry) int { return cmp.Compare(a.st.Name, b.st.Name) })
	w.Grow(len(es))
	for _, e := range es {
		w.Add(kindSchedState2, c.encodeSched(&e.st), nil)
	}
}
