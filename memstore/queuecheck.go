package memstore

import (
	"context"
	"fmt"
	"slices"

	"github.com/hourglass-io/hourglass/queue"
)

// CheckInvariants is the part's side of Store.CheckInvariants (queuestore.go).
func (q *jobQueue) CheckInvariants(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	q.e.mu.Lock()
	defer q.e.mu.Unlock()
	return q.checkLocked()
}

func (q *jobQueue) checkLocked() error {
	var tot checkTotals
	for name, t := range q.tubes {
		if err := q.checkTube(name, t, &tot); err != nil {
			return err
		}
	}
	if tot.keptSeen != len(q.kept) || tot.keptBytes != q.keptBytes {
		return fmt.Errorf("%d kept jobs of %d bytes filed, %d of %d bytes in the tubes", len(q.kept), q.keptBytes, tot.keptSeen, tot.keptBytes)
	}
	if tot.seen != len(q.jobs) {
		return fmt.Errorf("%d jobs in the job table, %d in the tubes' heaps", len(q.jobs), tot.seen)
	}
	if err := q.checkOwners(tot.counts[queue.Reserved]); err != nil {
		return err
	}
	for i, t := range q.sched {
		if t.sidx != i || q.tubes[t.name] != t {
			return fmt.Errorf("schedule entry %d (tube %q) is stale", i, t.name)
		}
		if i > 0 && t.next < q.sched[(i-1)/2].next {
			return fmt.Errorf("schedule out of order at tube %q", t.name)
		}
	}
	got := [...]int64{queue.Ready: q.ready, queue.Delayed: q.delayed, queue.Reserved: q.reserved, queue.Buried: q.buried}
	for st := queue.Ready; st <= queue.Buried; st++ {
		if got[st] != tot.counts[st] {
			return fmt.Errorf("%d jobs counted %v, %d are", got[st], st, tot.counts[st])
		}
	}
	if tot.urgent != q.urgent {
		return fmt.Errorf("%d jobs counted urgent, %d are", q.urgent, tot.urgent)
	}
	if tot.live != q.live {
		return fmt.Errorf("live size counted %d, is %d", q.live, tot.live)
	}
	if err := q.checkRefs(); err != nil {
		return err
	}
	for tube, ls := range q.tubeListeners.byKey {
		if len(ls) == 0 || slices.ContainsFunc(ls, func(l *listener) bool { return l.key != tube }) {
			return fmt.Errorf("listeners of tube %q misfiled", tube)
		}
	}
	return q.checkFamilies()
}

// checkTotals are what checkTube counts over the tubes, for checkLocked
// to compare with the queue's counters.
type checkTotals struct {
	counts                  [queue.Buried + 1]int64
	urgent, live, keptBytes int64
	seen, keptSeen          int
}

// checkTube checks tube t, filed under name: its heaps, kept jobs, unique
// keys and place in the schedule; it adds what it counts to tot.
func (q *jobQueue) checkTube(name string, t *tube, tot *checkTotals) error {
	if t.name != name {
		return fmt.Errorf("tube %q is filed under %q", t.name, name)
	}
	if t.jobs() == 0 && !t.paused && t.refs == 0 && t.kept.len() == 0 {
		return fmt.Errorf("tube %q has no job, no reference and no pause but exists", name)
	}
	if t.seq == 0 || t.seq > q.tubeSeq {
		return fmt.Errorf("tube %q has sequence number %d, last issued %d", name, t.seq, q.tubeSeq)
	}
	var tu int64
	for st := queue.Ready; st <= queue.Buried; st++ {
		h := t.heap(st)
		if j, ok := h.check(); !ok {
			return fmt.Errorf("tube %q: %v heap out of order or misindexed at job %d", name, st, j.id)
		}
		for _, j := range h.s {
			tot.seen++
			switch {
			case j.state != st:
				return fmt.Errorf("job %d is %v but in the %v heap of %q", j.id, j.state, st, name)
			case j.tube != t:
				return fmt.Errorf("job %d of tube %q is in tube %q", j.id, j.tube.name, name)
			case q.jobs[j.id] != j:
				return fmt.Errorf("job %d is in tube %q but not in the job table", j.id, name)
			case j.id == 0 || j.id > q.lastID:
				return fmt.Errorf("job %d has an ID beyond the last issued (%d)", j.id, q.lastID)
			case (st == queue.Reserved) != (j.owner != ""):
				return fmt.Errorf("job %d is %v with owner %q", j.id, st, j.owner)
			case j.key() != "" && t.keys[j.key()] != j:
				return fmt.Errorf("job %d's unique key %q is not filed to it", j.id, j.key())
			}
			if st == queue.Ready && j.pri < queue.UrgentPriority {
				tu++
			}
			if st == queue.Buried && j.at > q.burySeq {
				return fmt.Errorf("buried job %d has bury sequence %d beyond the last issued %d", j.id, j.at, q.burySeq)
			}
			tot.live += jobSize(j)
		}
		tot.counts[st] += int64(h.len())
	}
	if tu != t.urgent {
		return fmt.Errorf("tube %q counts %d urgent jobs, has %d", name, t.urgent, tu)
	}
	tot.urgent += tu
	if j, ok := t.kept.check(); !ok {
		return fmt.Errorf("tube %q: kept heap out of order or misindexed at job %d", name, j.id)
	}
	var kb int64
	for _, j := range t.kept.s {
		if j.state != queue.Finished || q.kept[j.id] != j || j.tube != t || q.jobs[j.id] != nil || j.more == nil || j.more.kept == nil {
			return fmt.Errorf("tube %q keeps job %d, which is %v and not filed as kept", name, j.id, j.state)
		}
		tot.keptSeen++
		kb += keptSize(j)
	}
	tot.keptBytes += kb
	for k, j := range t.keys {
		if q.jobs[j.id] != j && q.kept[j.id] != j || j.key() != k || j.tube != t {
			return fmt.Errorf("tube %q files unique key %q to job %d, which does not hold it", name, k, j.id)
		}
	}
	if want := t.deadline(); t.next != want {
		return fmt.Errorf("tube %q is scheduled at %d, its deadline is %d", name, t.next, want)
	}
	if (t.next == never) != (t.sidx < 0) || t.sidx >= 0 && (t.sidx >= len(q.sched) || q.sched[t.sidx] != t) {
		return fmt.Errorf("tube %q is misplaced in the schedule (index %d)", name, t.sidx)
	}
	return nil
}

// checkOwners checks the reservation index against the jobs, reserved
// of them reserved.
func (q *jobQueue) checkOwners(reserved int64) error {
	indexed := 0
	for owner, m := range q.byOwner {
		if len(m) == 0 {
			return fmt.Errorf("owner %q has an empty entry in the reservation index", owner)
		}
		for j := range m {
			if j.state != queue.Reserved || j.owner != owner || q.jobs[j.id] != j {
				return fmt.Errorf("the reservation index files job %d to %q, which is %v by %q", j.id, owner, j.state, j.owner)
			}
		}
		indexed += len(m)
	}
	if int64(indexed) != reserved {
		return fmt.Errorf("%d jobs in the reservation index, %d reserved", indexed, reserved)
	}
	return nil
}

// checkRefs checks the tubes' references against the sessions' holds.
func (q *jobQueue) checkRefs() error {
	refs := map[string]int64{}
	for k, n := range q.holds {
		if n <= 0 {
			return fmt.Errorf("session %q holds %d references to tube %q", k.session, n, k.tube)
		}
		refs[k.tube] += n
	}
	for name, n := range refs {
		if t := q.tubes[name]; t == nil {
			return fmt.Errorf("sessions hold %d references to tube %q, which does not exist", n, name)
		}
	}
	for name, t := range q.tubes {
		if t.refs != refs[name] {
			return fmt.Errorf("tube %q counts %d references, sessions hold %d", name, t.refs, refs[name])
		}
	}
	return nil
}
