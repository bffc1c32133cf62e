package memstore

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/hourglass-io/hourglass/internal/wal"
	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/ratelimit"
)

// kindLimit is the record of a tube's limits set or cleared (log and
// snapshot): s tube name, u events, v per (ns), u burst, u cap; events 0
// is no rate, and all of them 0 clears the limits. A group template
// follows when set: u events, v per, u burst, u cap of each group.
const kindLimit = 11

// tubeLimit is a tube's limits and the state of its rate. It lives beside
// the tube, not in it: the limits outlive the tube, and so does the rate's
// state, so a tube that empties and fills again gets no second burst.
type tubeLimit struct {
	l        queue.Limits
	interval int64 // ns between reserves at the rate; 0 when there is no rate
	burst    int64
	tat      int64 // the rate's theoretical arrival time (Unix ns)

	// The group template's rate (groups.go): ns between reserves of one
	// group, its burst, and each group's tat by group tube name, kept
	// while above the time of the last prune (gkept entries then).
	ginterval, gburst int64
	gtat              map[string]int64
	gkept             int
	gfloor            int64 // every group's tat is at least this (set at open)
}

func newTubeLimit(l queue.Limits) *tubeLimit {
	tl := &tubeLimit{l: l}
	if l.HasRate() {
		tl.interval = int64(l.Rate.Interval())
		tl.burst = int64(l.Rate.BurstOrDefault())
	}
	if l.Group.HasRate() {
		tl.ginterval = int64(l.Group.Rate.Interval())
		tl.gburst = int64(l.Group.Rate.BurstOrDefault())
	}
	return tl
}

// wait is how long (ns) until tube t's limits allow one more reserve at
// now: 0 when they do now, -1 when the cap holds it back (a reservation
// must end first).
func (tl *tubeLimit) wait(t *tube, now int64) int64 {
	if tl.l.Cap > 0 && t.reserved.len() >= tl.l.Cap {
		return -1
	}
	return tl.rateWait(now)
}

// rateWait is how long (ns) until the rate allows one more reserve at now.
func (tl *tubeLimit) rateWait(now int64) int64 {
	if tl.interval > 0 {
		return gcraAct(tl.tat, now, tl.interval, tl.burst*tl.interval) - now
	}
	return 0
}

// charge counts one reserve against the rate at now.
func (tl *tubeLimit) charge(now int64) {
	if tl.interval > 0 {
		tl.tat = gcraCharge(tl.tat, now, tl.interval)
	}
}

// SetLimits is the part's side of Store.SetLimits (queuestore.go).
func (q *jobQueue) SetLimits(ctx context.Context, tube string, l queue.Limits) error {
	return write(ctx, q.tx(), func(now int64) (wal.Ticket, error) {
		q.setLimitsLocked(tube, l, now)
		tk := q.e.append(kindLimit, q.encodeLimit(tube, l), nil)
		q.wakeLocked(tube)
		return tk, nil
	})
}

// setLimitsLocked sets or clears tube's limits; a rate that stays keeps its
// state.
func (q *jobQueue) setLimitsLocked(tube string, l queue.Limits, now int64) {
	if l.IsZero() {
		delete(q.tubeLimits, tube)
		return
	}
	tl := newTubeLimit(l)
	if old := q.tubeLimits[tube]; old != nil {
		if tl.interval > 0 {
			tl.tat = old.tat
		}
		if tl.ginterval > 0 {
			tl.gtat, tl.gkept, tl.gfloor = old.gtat, old.gkept, old.gfloor
		}
	}
	if q.tubeLimits == nil {
		q.tubeLimits = map[string]*tubeLimit{}
	}
	q.tubeLimits[tube] = tl
}

// TubeLimits is the part's side of Store.TubeLimits (queuestore.go).
func (q *jobQueue) TubeLimits(ctx context.Context, tube string) (queue.Limits, error) {
	return read(ctx, q.tx(), func(int64) (queue.Limits, error) {
		if tl := q.tubeLimits[tube]; tl != nil {
			return tl.l, nil
		}
		return queue.Limits{}, nil
	})
}

// LimitedTubes is the part's side of Store.LimitedTubes (queuestore.go).
func (q *jobQueue) LimitedTubes(ctx context.Context) (map[string]queue.Limits, error) {
	return read(ctx, q.tx(), func(int64) (map[string]queue.Limits, error) {
		out := make(map[string]queue.Limits, len(q.tubeLimits))
		for name, tl := range q.tubeLimits {
			out[name] = tl.l
		}
		return out, nil
	})
}

func (q *jobQueue) encodeLimit(tube string, l queue.Limits) []byte {
	b := appendString(q.e.scratch[:0], tube)
	b = binary.AppendUvarint(b, uint64(l.Rate.Events))
	b = binary.AppendVarint(b, int64(l.Rate.Per))
	b = binary.AppendUvarint(b, uint64(l.Rate.Burst))
	b = binary.AppendUvarint(b, uint64(l.Cap))
	if !l.Group.IsZero() {
		b = binary.AppendUvarint(b, uint64(l.Group.Rate.Events))
		b = binary.AppendVarint(b, int64(l.Group.Rate.Per))
		b = binary.AppendUvarint(b, uint64(l.Group.Rate.Burst))
		b = binary.AppendUvarint(b, uint64(l.Group.Cap))
	}
	q.e.scratch = b
	return b
}

// replayLimit reads a kindLimit record.
func (q *jobQueue) replayLimit(d *decoder) error {
	name := d.string()
	var l queue.Limits
	if ev := d.uvarint(); ev > 0 {
		l.Rate = ratelimit.Limit{Events: int(ev), Per: time.Duration(d.varint()), Burst: int(d.uvarint())}
	} else {
		d.varint()
		d.uvarint()
	}
	l.Cap = int(d.uvarint())
	if d.err == nil && len(d.b) > 0 { // the group template (groups.go)
		if ev := d.uvarint(); ev > 0 {
			l.Group.Rate = ratelimit.Limit{Events: int(ev), Per: time.Duration(d.varint()), Burst: int(d.uvarint())}
		} else {
			d.varint()
			d.uvarint()
		}
		l.Group.Cap = int(d.uvarint())
	}
	if err := d.end(); err != nil {
		return err
	}
	if err := l.Validate(); err != nil {
		return fmt.Errorf("limits of tube %q in the log: %v", name, err)
	}
	q.setLimitsLocked(name, l, 0)
	return nil
}

// snapshotLimits writes one record per limited tube, in name order.
func (q *jobQueue) snapshotLimits(add func(kind byte, head []byte)) {
	for _, name := range sortedKeys(q.tubeLimits) {
		add(kindLimit, q.encodeLimit(name, q.tubeLimits[name].l))
	}
}

// recoveredLimits starts every rate after a replay as if a whole burst had
// been taken at now: the log does not keep the rates' state, and a restart
// must not give a tube more than its rate.
func (q *jobQueue) recoveredLimits(now int64) {
	for _, tl := range q.tubeLimits {
		if tl.interval > 0 {
			tl.tat = now + tl.burst*tl.interval
		}
		if tl.ginterval > 0 {
			tl.gfloor = now + tl.gburst*tl.ginterval
		}
	}
}

// sortedKeys returns m's keys in order.
func sortedKeys[K cmp.Ordered, V any](m map[K]V) []K {
	return slices.Sorted(maps.Keys(m))
}

// freeSlotLocked wakes the waiters of j's tube when j, about to leave the
// reserved state other than to ready (a delete, a bury), frees a place of
// a tube at its cap (below the cap, no reserve waits for a place), or of a
// group at its cap or of its tube.
func (q *jobQueue) freeSlotLocked(j *job) {
	if j.state != queue.Reserved || len(q.tubeLimits) == 0 {
		return
	}
	t := j.tube
	if f := t.fam; f != nil {
		if tl := q.tubeLimits[f.name]; tl != nil && (tl.l.Cap > 0 && f.reserved >= tl.l.Cap || t.isGroup() && tl.l.Group.Cap > 0 && t.reserved.len() >= tl.l.Group.Cap) {
			q.wakeLocked(t.name)
		}
		return
	}
	if tl := q.tubeLimits[t.name]; tl != nil && tl.l.Cap > 0 && t.reserved.len() >= tl.l.Cap {
		q.wakeLocked(t.name)
	}
}

// waitOf is how long (ns) until the limits over the tube named name allow
// a reserve of one of its ready jobs at now: 0 when they do or it has no
// ready job, -1 when caps hold them, and whether it has ready jobs, not
// paused.
func (q *jobQueue) waitOf(name string, now int64) (w int64, ready bool) {
	if f := q.families[name]; f != nil {
		_, w, ready = q.familyScan(f, now)
		return w, ready
	}
	t := q.tubes[name]
	if t == nil || t.paused || t.ready.len() == 0 {
		return 0, false
	}
	return q.limitWait(t, now), true
}

// heldLocked counts a hold on each of tubes that has ready jobs, is not
// paused, and is held back by its limits at now, and returns them with
// the time (ns) until the rate frees each (-1: the cap, which a
// reservation's end frees, and that end is among the tube's deadlines).
func (q *jobQueue) heldLocked(tubes []string, now int64) map[string]int64 {
	var held map[string]int64
	for _, name := range tubes {
		w, ready := q.waitOf(name, now)
		if !ready || w == 0 {
			continue
		}
		if held == nil {
			held = map[string]int64{}
		}
		held[name] = w
		if t := q.tubes[name]; t != nil {
			t.limitHolds++
		} else if f := q.families[name]; f != nil {
			f.holds++
		}
	}
	return held
}

// drainedLocked sets res.Drained, after a reserve took jobs, when no
// ready job it could take is left in tubes (there is none, or limits hold
// back every one), with Next and NextTube the least time until a rate
// frees one (Next < 0 when none does: only caps hold them, or nothing is
// ready, and a put, a reservation's end or the engine's timer wakes the
// tube).
func (q *jobQueue) drainedLocked(tubes []string, now int64, res *queue.ReserveResult) {
	next, nextTube := int64(-1), ""
	for _, name := range tubes {
		w, ready := q.waitOf(name, now)
		if !ready {
			continue
		}
		if w == 0 {
			return
		}
		if w > 0 && (next < 0 || w < next) {
			next, nextTube = w, name
		}
	}
	res.Drained = true
	res.Next, res.NextTube = -1, ""
	if next >= 0 {
		res.Next, res.NextTube = durationOf(next), nextTube
	}
}
