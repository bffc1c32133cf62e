package memstore

import (
	"fmt"

	"github.com/hourglass-io/hourglass/queue"
)

// family is a tube with groups (docs/tube-limits.md, "Groups"): the tube
// itself (its jobs put with no group) and its group tubes "tube;group", as
// far as they exist. A reserve of the tube serves the members with ready
// jobs in turn: rotation holds them, the one served longest ago first,
// and a member served goes to its end. Families are not logged: they
// follow the tubes, which are.
type family struct {
	name     string
	parent   *tube              // the tube itself, while it exists
	groups   map[*tube]struct{} // the group tubes that exist
	reserved int                // reserved jobs of all members (the tube's cap counts them)
	holds    int64
	// rotation: the members with ready jobs, in turn order
	head, tail *tube
}

// familyOf returns the family a tube named name belongs to, creating it
// for a group's tube; nil for a tube with no groups.
func (q *jobQueue) familyOf(name string) *family {
	p, g := queue.SplitGroup(name)
	f := q.families[p]
	if f == nil && g != "" {
		f = &family{name: p, groups: map[*tube]struct{}{}}
		if q.families == nil {
			q.families = map[string]*family{}
		}
		q.families[p] = f
		if pt := q.tubes[p]; pt != nil && pt.fam == nil {
			q.attach(pt, f)
		}
	}
	return f
}

// attach makes t a member of f.
func (q *jobQueue) attach(t *tube, f *family) {
	t.fam = f
	if t.name == f.name {
		f.parent = t
	} else {
		f.groups[t] = struct{}{}
	}
	f.reserved += t.reserved.len()
	if t.ready.len() > 0 {
		f.push(t)
	}
}

// detach takes t, about to be forgotten, out of its family, and forgets
// the family when t was its last member.
func (q *jobQueue) detach(t *tube) {
	f := t.fam
	if f == nil {
		return
	}
	f.remove(t)
	f.reserved -= t.reserved.len()
	if f.parent == t {
		f.parent = nil
	}
	delete(f.groups, t)
	t.fam = nil
	if f.parent == nil && len(f.groups) == 0 && q.families[f.name] == f {
		delete(q.families, f.name)
	}
}

func (f *family) push(t *tube) {
	t.inRot = true
	t.rprev, t.rnext = f.tail, nil
	if f.tail != nil {
		f.tail.rnext = t
	} else {
		f.head = t
	}
	f.tail = t
}

func (f *family) remove(t *tube) {
	if !t.inRot {
		return
	}
	if t.rprev != nil {
		t.rprev.rnext = t.rnext
	} else {
		f.head = t.rnext
	}
	if t.rnext != nil {
		t.rnext.rprev = t.rprev
	} else {
		f.tail = t.rprev
	}
	t.rprev, t.rnext, t.inRot = nil, nil, false
}

// served gives t, just served, the last turn.
func (f *family) served(t *tube) {
	if t.inRot && f.tail != t {
		f.remove(t)
		f.push(t)
	}
}

// linkedFamily keeps t's family in step with a job of t entering state st.
func (t *tube) linkedFamily(st queue.State) {
	switch st {
	case queue.Ready:
		if !t.inRot {
			t.fam.push(t)
		}
	case queue.Reserved:
		t.fam.reserved++
	}
}

// unlinkedFamily keeps t's family in step with a job of t leaving state st.
func (t *tube) unlinkedFamily(st queue.State) {
	switch st {
	case queue.Ready:
		if t.ready.len() == 0 {
			t.fam.remove(t)
		}
	case queue.Reserved:
		t.fam.reserved--
	}
}

// isGroup reports whether t is a group's tube (not its family's parent).
func (t *tube) isGroup() bool { return t.fam != nil && t.name != t.fam.name }

// familyScan looks for the member of f a reserve of f's tube takes from at
// now: the first in turn that is not paused and that limits do not hold
// back. When there is none, wait is the least time until a rate frees one
// (-1 when only caps hold them, or there is no ready job), and ready
// reports whether f has ready jobs at all. The parent's pause holds back
// the whole family.
func (q *jobQueue) familyScan(f *family, now int64) (pick *tube, wait int64, ready bool) {
	if f.head == nil {
		return nil, -1, false
	}
	if f.parent != nil && f.parent.paused {
		return nil, -1, false
	}
	ptl := q.tubeLimits[f.name]
	if ptl != nil {
		if w := ptl.waitFamily(f, now); w != 0 {
			return nil, w, true
		}
	}
	wait = -1
	for t := f.head; t != nil; t = t.rnext {
		if t.paused {
			continue
		}
		if ptl == nil || !t.isGroup() {
			return t, 0, true
		}
		w := ptl.waitGroup(t, now)
		if w == 0 {
			return t, 0, true
		}
		if w > 0 && (wait < 0 || w < wait) {
			wait = w
		}
	}
	return nil, wait, true
}

// limitWait is how long (ns) until the limits over t allow one more
// reserve of t at now: 0 when they do, -1 when a cap holds it back. For a
// member of a family it asks the family's tube's limits (which count the
// whole family) and, for a group, the group template.
func (q *jobQueue) limitWait(t *tube, now int64) int64 {
	if t.fam == nil {
		if tl := q.tubeLimits[t.name]; tl != nil {
			return tl.wait(t, now)
		}
		return 0
	}
	tl := q.tubeLimits[t.fam.name]
	if tl == nil {
		return 0
	}
	w := tl.waitFamily(t.fam, now)
	if w == 0 && t.isGroup() {
		w = tl.waitGroup(t, now)
	}
	return w
}

// chargeLocked counts one reserve of t at now against the rates over it.
func (q *jobQueue) chargeLocked(t *tube, now int64) {
	if t.fam == nil {
		if tl := q.tubeLimits[t.name]; tl != nil {
			tl.charge(now)
		}
		return
	}
	if tl := q.tubeLimits[t.fam.name]; tl != nil {
		tl.charge(now)
		if t.isGroup() && tl.ginterval > 0 {
			if tl.gtat == nil {
				tl.gtat = map[string]int64{}
			}
			tat := gcraCharge(max(tl.gtat[t.name], tl.gfloor), now, tl.ginterval)
			tl.gtat[t.name] = tat
			q.gwhole = max(q.gwhole, tat)
			tl.pruneGroups(now)
		}
	}
}

// waitFamily is tl.wait for the tube of family f: its cap counts every
// member's reservations.
func (tl *tubeLimit) waitFamily(f *family, now int64) int64 {
	if tl.l.Cap > 0 && f.reserved >= tl.l.Cap {
		return -1
	}
	return tl.rateWait(now)
}

// waitGroup is how long until the group template of tl allows one more
// reserve of the group tube t.
func (tl *tubeLimit) waitGroup(t *tube, now int64) int64 {
	if tl.l.Group.Cap > 0 && t.reserved.len() >= tl.l.Group.Cap {
		return -1
	}
	if tl.ginterval > 0 {
		return gcraAct(max(tl.gtat[t.name], tl.gfloor), now, tl.ginterval, tl.gburst*tl.ginterval) - now
	}
	return 0
}

// pruneGroups forgets the rate state of groups whose rate is whole again
// (tat <= now: the same as no state) when the map has doubled since the
// last prune, so it holds about the groups served within a burst.
func (tl *tubeLimit) pruneGroups(now int64) {
	if len(tl.gtat) < max(64, 2*tl.gkept) {
		return
	}
	for k, tat := range tl.gtat {
		if tat <= now {
			delete(tl.gtat, k)
		}
	}
	tl.gkept = len(tl.gtat)
}

// forgetGroupRates drops the rate state of every group, once every
// group's rate is whole again (q.gwhole has passed), so that groups served
// once and never again leave nothing behind when traffic stops; while it
// flows, pruneGroups bounds the state.
func (q *jobQueue) forgetGroupRates() {
	for _, tl := range q.tubeLimits {
		tl.gtat, tl.gkept = nil, 0
	}
	q.gwhole = 0
}

// familyStats adds the jobs and counts of f's groups to out, the stats of
// f's tube.
func (q *jobQueue) familyStats(f *family, out *queue.TubeStats) {
	out.LimitHolds += f.holds
	for t := range f.groups {
		out.Groups++
		out.GroupReady += int64(t.ready.len())
		out.GroupReserved += int64(t.reserved.len())
	}
}

// familyNext is the earliest deadline of f's members (a delay, a TTR or a
// pause running out; not a kept job's drop), or never.
func (f *family) next() int64 {
	n := int64(never)
	if f.parent != nil {
		n = f.parent.liveDue()
	}
	for t := range f.groups {
		n = min(n, t.liveDue())
	}
	return n
}

// checkFamilies verifies the families (CheckInvariants): every tube of a
// family is attached to it, the rotation holds exactly the members with
// ready jobs, once each, and the family's count of reserved jobs adds up.
func (q *jobQueue) checkFamilies() error {
	for name, t := range q.tubes {
		p, g := queue.SplitGroup(name)
		f := q.families[p]
		if (g != "" || f != nil) && t.fam != f {
			return fmt.Errorf("tube %q is not in the family of tube %q", name, p)
		}
		if g == "" && f == nil && t.fam != nil {
			return fmt.Errorf("tube %q is in a family that is gone", name)
		}
	}
	for name, f := range q.families {
		if f.name != name || (f.parent == nil && len(f.groups) == 0) {
			return fmt.Errorf("family %q is stale", name)
		}
		if f.parent != nil && q.tubes[name] != f.parent {
			return fmt.Errorf("family %q has a parent that is gone", name)
		}
		reserved, ready := 0, 0
		members := []*tube{}
		if f.parent != nil {
			members = append(members, f.parent)
		}
		for t := range f.groups {
			if q.tubes[t.name] != t {
				return fmt.Errorf("family %q has group %q, which is gone", name, t.name)
			}
			members = append(members, t)
		}
		for _, t := range members {
			reserved += t.reserved.len()
			if t.ready.len() > 0 {
				ready++
			}
			if t.inRot != (t.ready.len() > 0) {
				return fmt.Errorf("tube %q has %d ready jobs, in the rotation: %v", t.name, t.ready.len(), t.inRot)
			}
		}
		if reserved != f.reserved {
			return fmt.Errorf("family %q counts %d reserved, %d are", name, f.reserved, reserved)
		}
		n := 0
		var prev *tube
		for t := f.head; t != nil; t = t.rnext {
			if t.fam != f || t.rprev != prev || n > ready {
				return fmt.Errorf("the rotation of family %q is broken at %q", name, t.name)
			}
			prev = t
			n++
		}
		if n != ready || f.tail != prev {
			return fmt.Errorf("the rotation of family %q holds %d tubes, %d have ready jobs", name, n, ready)
		}
	}
	return nil
}
