package storetest

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/hourglass-io/hourglass/ttlhash"
)

// hash returns the hash name of e's Hashes, remembering the name for the
// invariant check.
func (e *hxEnv) hash(name string) *ttlhash.Hash {
	e.mu.Lock()
	e.names[name] = true
	e.mu.Unlock()
	return e.h.Hash(name)
}

// checkInvariants checks, when a case is over, what must hold whatever the
// case did, through the ttlhash.Store contract. For each hash the case
// named: GetAll, Len and Get agree; no field readable is expired (its
// deadline, if any, is after the clock); every TTL is at least 0, or NoTTL
// for a field without a deadline. For the events: nothing counts below
// 0, the groups are listed once each, by name, and no group has more
// events pending than the store keeps.
func (e *hxEnv) checkInvariants() {
	t := e.t
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e.mu.Lock()
	names := make([]string, 0, len(e.names))
	for n := range e.names {
		names = append(names, n)
	}
	e.mu.Unlock()
	slices.Sort(names)
	now := e.clock.Now()
	for _, hash := range names {
		// A Store may assume valid names: ask Hashes, which checks them,
		// first.
		if _, err := e.h.Hash(hash).Len(ctx); errors.Is(err, ttlhash.ErrInvalid) || errors.Is(err, ttlhash.ErrInvalidName) {
			continue // a name the case used to check bad input
		}
		all, err := e.s.GetAll(ctx, hash)
		if err != nil {
			t.Errorf("invariants: GetAll(%q): %v", hash, err)
			continue
		}
		if n, err := e.s.Len(ctx, hash); err != nil || n != len(all) {
			t.Errorf("invariants: Len(%q) = %d, %v; GetAll returns %d fields", hash, n, err, len(all))
		}
		if len(all) == 0 {
			continue
		}
		fields := make([]string, len(all))
		for i, en := range all {
			fields[i] = en.Name
			if !en.Deadline.IsZero() && !en.Deadline.After(now) {
				t.Errorf("invariants: %q.%q is readable with its deadline %v passed (clock %v)", hash, en.Name, en.Deadline, now)
			}
		}
		got, err := e.s.Get(ctx, hash, fields)
		if err != nil {
			t.Errorf("invariants: Get(%q): %v", hash, err)
			continue
		}
		for i, g := range got {
			if g == nil || string(g.Value) != string(all[i].Value) {
				t.Errorf("invariants: Get(%q, %q) = %+v; GetAll says %+v", hash, fields[i], g, all[i])
			}
		}
		ttls, err := e.s.TTL(ctx, hash, fields)
		if err != nil {
			t.Errorf("invariants: TTL(%q): %v", hash, err)
			continue
		}
		for i, d := range ttls {
			if d < 0 && !(d == ttlhash.NoTTL && all[i].Deadline.IsZero()) {
				t.Errorf("invariants: TTL(%q, %q) = %v, deadline %v", hash, fields[i], d, all[i].Deadline)
			}
		}
	}
	st, err := e.s.EventStats(ctx)
	if err != nil {
		t.Errorf("invariants: EventStats: %v", err)
		return
	}
	if st.Retained < 0 || st.Dropped < 0 {
		t.Errorf("invariants: EventStats %+v counts below 0", st)
	}
	if !slices.IsSortedFunc(st.Groups, func(a, b ttlhash.GroupStats) int { return strings.Compare(a.Name, b.Name) }) {
		t.Errorf("invariants: EventStats lists the groups out of order: %+v", st.Groups)
	}
	for i, g := range st.Groups {
		if i > 0 && st.Groups[i-1].Name == g.Name {
			t.Errorf("invariants: EventStats lists group %q twice", g.Name)
		}
		if g.Pending < 0 || g.Pending > st.Retained {
			t.Errorf("invariants: group %q has %d events pending, of %d kept", g.Name, g.Pending, st.Retained)
		}
	}
}
