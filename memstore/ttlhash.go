package memstore

// Expiring hash fields (package ttlhash) in the embedded engine.
//
// State, guarded by the Store's mu: hashes by name, each a map of fields;
// the fields with a deadline in one min-heap (earliest first), so the
// Store's one timer is reset to min(earliest tube deadline, earliest field
// deadline) and no timer exists per field; the events in a slice by
// sequence number; the consumer groups, each with the next sequence it has
// not handed out, its pending events (consumer, time handed out) and, after
// a restart, the events it had acknowledged past that point.
//
// Durability (record kinds 32–63, see record.go): a set writes the field
// with its deadline and value; a delete, an expiry (the event, with the
// value), a group's creation or deletion, and each acknowledgement are
// records. Handing out is not logged: after a restart every kept event not
// acknowledged by a group is handed out again (at-least-once). A snapshot
// writes the fields, the events and the groups' acknowledgements.

import (
	"container/heap"
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hourglass-io/hourglass/internal/wal"
	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/ttlhash"
)

// Record kinds of ttlhash (32–63).
const (
	kindHXSet    = 32 // s hash, s field, v deadline ms (0: none); the value follows
	kindHXDel    = 33 // s hash, s field
	kindHXExpire = 34 // u seq, s hash, s field, v deadline, v expired-at; the value follows
	kindHXGroup  = 35 // s group, byte 1 created / 0 deleted
	kindHXAck    = 36 // s group, u seq
	kindHXMeta   = 37 // snapshot: u next seq, v dropped
	kindHXEvent  = 38 // snapshot: an event kept (layout of kindHXExpire)
	kindHXAcked  = 39 // snapshot: s group, u next, u count, count × u seq acknowledged at or past next
)

// DefaultMaxEvents is Options.MaxEvents when it is 0.
const DefaultMaxEvents = 1_000_000

type hxField struct {
	hash  *hxHash
	name  string
	value []byte
	dl    int64 // ms; 0: no TTL
	hidx  int   // index in the due heap; -1 when not in it
}

type hxHash struct {
	name   string
	fields map[string]*hxField
}

type hxEvent struct {
	seq           uint64
	hash, field   string
	value         []byte
	dl, expiredAt int64 // ms
}

type hxPending struct {
	consumer string
	at       int64 // ms, when handed out
	again    bool  // handed out before
}

type hxGroup struct {
	name    string
	next    uint64 // the first sequence not handed out yet
	pending map[uint64]*hxPending
	acked   map[uint64]bool // acknowledged at or past next (after a restart)
}

// floor is the first sequence the group still needs.
func (g *hxGroup) floor() uint64 {
	f := g.next
	for seq := range g.pending {
		f = min(f, seq)
	}
	return f
}

type hxDue []*hxField

func (h hxDue) Len() int           { return len(h) }
func (h hxDue) Less(i, j int) bool { return h[i].dl < h[j].dl }
func (h hxDue) Swap(i, j int)      { h[i], h[j] = h[j], h[i]; h[i].hidx = i; h[j].hidx = j }
func (h *hxDue) Push(x any)        { f := x.(*hxField); f.hidx = len(*h); *h = append(*h, f) }
func (h *hxDue) Pop() any {
	old := *h
	f := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	f.hidx = -1
	return f
}

// hxState is the ttlhash state of a Store.
type hxState struct {
	hashes  map[string]*hxHash
	due     hxDue
	events  []*hxEvent // by seq, oldest first
	nextSeq uint64     // the sequence of the next event (from 1)
	dropped int64
	groups  map[string]*hxGroup
	cap     int
	bytes   int64 // about what a snapshot of the fields and events takes
	wake    bool  // events were appended by the current operation
	lis     map[*func()]struct{}
}

func (x *hxState) init(maxEvents int) {
	x.hashes = map[string]*hxHash{}
	x.groups = map[string]*hxGroup{}
	x.lis = map[*func()]struct{}{}
	x.nextSeq = 1
	x.cap = maxEvents
}

// next is the earliest field deadline in ns, or never.
func (x *hxState) next() int64 {
	if len(x.due) == 0 {
		return never
	}
	return x.due[0].dl * int64(time.Millisecond)
}

func (x *hxState) firstSeq() uint64 {
	if len(x.events) == 0 {
		return x.nextSeq
	}
	return x.events[0].seq
}

// Hashes is the ttlhash.Store of a Store: its state lives in the Store,
// under the Store's lock, in the Store's log. It is safe for concurrent
// use. Expiry is the Store's: its timer expires due fields whether or not
// a Sweeper runs.
type Hashes struct{ s *Store }

var (
	_ ttlhash.Store    = (*Hashes)(nil)
	_ ttlhash.Notifier = (*Hashes)(nil)
)

// Hashes returns the Store's ttlhash.Store.
func (s *Store) Hashes() *Hashes { return &Hashes{s: s} }

func nowMS(now int64) int64 { return now / int64(time.Millisecond) }

// begin starts an operation on the hashes (see Store.begin).
func (h *Hashes) begin(ctx context.Context) (int64, error) {
	now, err := h.s.begin(ctx)
	if err == queue.ErrClosed {
		err = ttlhash.ErrClosed
	}
	return now, err
}

// end finishes an operation (see Store.end), waking event listeners when
// events were appended.
func (h *Hashes) end(now int64, t wal.Ticket) error {
	calls := h.s.hxTakeWakesLocked()
	err := h.s.end(now, t)
	for _, c := range calls {
		c()
	}
	return err
}

func (s *Store) hxTakeWakesLocked() []func() {
	if !s.hx.wake {
		return nil
	}
	s.hx.wake = false
	calls := make([]func(), 0, len(s.hx.lis))
	for f := range s.hx.lis {
		calls = append(calls, *f)
	}
	return calls
}

// live returns the field if it exists and has not expired at ms.
func (x *hxState) live(hash, field string, ms int64) *hxField {
	hh := x.hashes[hash]
	if hh == nil {
		return nil
	}
	f := hh.fields[field]
	if f == nil || (f.dl > 0 && f.dl <= ms) {
		return nil
	}
	return f
}

func (x *hxState) setDeadline(f *hxField, dl int64) {
	f.dl = dl
	switch {
	case dl == 0 && f.hidx >= 0:
		heap.Remove(&x.due, f.hidx)
	case dl > 0 && f.hidx >= 0:
		heap.Fix(&x.due, f.hidx)
	case dl > 0:
		heap.Push(&x.due, f)
	}
}

func (x *hxState) removeField(f *hxField) {
	if f.hidx >= 0 {
		heap.Remove(&x.due, f.hidx)
	}
	delete(f.hash.fields, f.name)
	x.bytes -= fieldSize(f)
	if len(f.hash.fields) == 0 {
		delete(x.hashes, f.hash.name)
	}
}

// putField sets a field (no log).
func (x *hxState) putField(hash, field string, value []byte, dl int64) {
	hh := x.hashes[hash]
	if hh == nil {
		hh = &hxHash{name: hash, fields: map[string]*hxField{}}
		x.hashes[hash] = hh
	}
	f := hh.fields[field]
	if f == nil {
		f = &hxField{hash: hh, name: field, hidx: -1}
		hh.fields[field] = f
	} else {
		x.bytes -= fieldSize(f)
	}
	f.value = value
	x.bytes += fieldSize(f)
	x.setDeadline(f, dl)
}

// appendEvent adds an event and holds the cap (no log).
func (x *hxState) appendEvent(ev *hxEvent) {
	x.events = append(x.events, ev)
	x.bytes += eventSize(ev)
	x.nextSeq = max(x.nextSeq, ev.seq+1)
	x.wake = true
	if len(x.events) > x.cap {
		x.trim()
		if n := len(x.events) - x.cap; n > 0 {
			for _, e := range x.events[:n] {
				for _, g := range x.groups {
					delete(g.pending, e.seq)
					delete(g.acked, e.seq)
					if g.next <= e.seq {
						g.next = e.seq + 1
					}
				}
			}
			x.dropped += int64(n)
			x.cut(n)
		}
	}
}

// cut removes the n oldest events.
func (x *hxState) cut(n int) {
	for _, e := range x.events[:n] {
		x.bytes -= eventSize(e)
	}
	clear(x.events[:n])
	x.events = x.events[n:]
	if cap(x.events) > 64 && cap(x.events) > 4*len(x.events) {
		x.events = slices.Clone(x.events)
	}
}

// trim removes the events every group has acknowledged; without groups it
// keeps them.
func (x *hxState) trim() {
	if len(x.groups) == 0 || len(x.events) == 0 {
		return
	}
	floor := x.nextSeq
	for _, g := range x.groups {
		floor = min(floor, g.floor())
	}
	n, _ := slices.BinarySearchFunc(x.events, floor, func(e *hxEvent, seq uint64) int {
		return cmpU64(e.seq, seq)
	})
	if n > 0 {
		x.cut(n)
	}
}

func cmpU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// expireLocked expires f at ms with the deadline dl, logging it.
func (s *Store) hxExpireLocked(f *hxField, dl, ms int64) wal.Ticket {
	ev := &hxEvent{seq: s.hx.nextSeq, hash: f.hash.name, field: f.name, value: f.value, dl: dl, expiredAt: ms}
	s.hx.removeField(f)
	s.hx.appendEvent(ev)
	return s.append(kindHXExpire, s.encodeHXEvent(ev), ev.value)
}

// hxAdvance expires the fields due at now (ns), at most max (0: all).
func (s *Store) hxAdvance(now int64, max int) (int, wal.Ticket) {
	ms := nowMS(now)
	n := 0
	var t wal.Ticket
	for len(s.hx.due) > 0 && s.hx.due[0].dl <= ms && (max == 0 || n < max) {
		f := s.hx.due[0]
		t = s.hxExpireLocked(f, f.dl, ms)
		n++
	}
	return n, t
}

// reap expires the field if it has expired at ms: a write that finds an
// expired field expires it first.
func (s *Store) hxReap(hash, field string, ms int64, t *wal.Ticket) {
	hh := s.hx.hashes[hash]
	if hh == nil {
		return
	}
	if f := hh.fields[field]; f != nil && f.dl > 0 && f.dl <= ms {
		*t = s.hxExpireLocked(f, f.dl, ms)
	}
}

// Set implements ttlhash.Store.
func (h *Hashes) Set(ctx context.Context, hash string, req ttlhash.SetRequest) (int, error) {
	now, err := h.begin(ctx)
	if err != nil {
		return 0, err
	}
	s := h.s
	ms := nowMS(now)
	var t wal.Ticket
	added := 0
	for _, fd := range req.Fields {
		s.hxReap(hash, fd.Name, ms, &t)
		f := s.hx.live(hash, fd.Name, ms)
		dl := int64(0)
		if req.TTL > 0 {
			dl = ms + req.TTL.Milliseconds()
		} else if req.KeepTTL && f != nil {
			dl = f.dl
		}
		if f == nil {
			added++
		}
		v := slices.Clone(fd.Value)
		if v == nil {
			v = []byte{}
		}
		s.hx.putField(hash, fd.Name, v, dl)
		t = s.append(kindHXSet, s.encodeHXSet(hash, fd.Name, dl), v)
	}
	return added, h.end(now, t)
}

// read runs a read-only operation under the lock.
func (h *Hashes) read(ctx context.Context, f func(ms int64)) error {
	now, err := h.begin(ctx)
	if err != nil {
		return err
	}
	f(nowMS(now))
	return h.end(now, 0)
}

func entryOf(f *hxField) ttlhash.Entry {
	e := ttlhash.Entry{Name: f.name, Value: slices.Clone(f.value)}
	if f.dl > 0 {
		e.Deadline = time.UnixMilli(f.dl)
	}
	return e
}

// Get implements ttlhash.Store.
func (h *Hashes) Get(ctx context.Context, hash string, fields []string) ([]*ttlhash.Entry, error) {
	out := make([]*ttlhash.Entry, len(fields))
	err := h.read(ctx, func(ms int64) {
		for i, name := range fields {
			if f := h.s.hx.live(hash, name, ms); f != nil {
				e := entryOf(f)
				out[i] = &e
			}
		}
	})
	return out, err
}

func (h *Hashes) liveEntries(hash string, ms int64) []ttlhash.Entry {
	hh := h.s.hx.hashes[hash]
	if hh == nil {
		return nil
	}
	var out []ttlhash.Entry
	for _, f := range hh.fields {
		if f.dl == 0 || f.dl > ms {
			out = append(out, entryOf(f))
		}
	}
	return out
}

// GetAll implements ttlhash.Store.
func (h *Hashes) GetAll(ctx context.Context, hash string) ([]ttlhash.Entry, error) {
	var out []ttlhash.Entry
	err := h.read(ctx, func(ms int64) { out = h.liveEntries(hash, ms) })
	return out, err
}

// Scan implements ttlhash.Store: the cursor is the last field name
// returned, and fields come in name order.
func (h *Hashes) Scan(ctx context.Context, hash, cursor string, count int) ([]ttlhash.Entry, string, error) {
	var out []ttlhash.Entry
	next := ""
	err := h.read(ctx, func(ms int64) {
		hh := h.s.hx.hashes[hash]
		if hh == nil {
			return
		}
		after, started := "", cursor != ""
		if started {
			after = cursor[1:] // "k" + last name, so that "" is a name too
		}
		names := make([]string, 0, len(hh.fields))
		for name := range hh.fields {
			if !started || name > after {
				names = append(names, name)
			}
		}
		slices.Sort(names)
		if len(names) > count {
			names = names[:count]
			next = "k" + names[count-1]
		}
		for _, name := range names {
			if f := hh.fields[name]; f.dl == 0 || f.dl > ms {
				out = append(out, entryOf(f))
			}
		}
	})
	return out, next, err
}

// Del implements ttlhash.Store.
func (h *Hashes) Del(ctx context.Context, hash string, fields []string) (int, error) {
	now, err := h.begin(ctx)
	if err != nil {
		return 0, err
	}
	s := h.s
	ms := nowMS(now)
	var t wal.Ticket
	n := 0
	for _, name := range fields {
		s.hxReap(hash, name, ms, &t)
		if f := s.hx.live(hash, name, ms); f != nil {
			s.hx.removeField(f)
			t = s.append(kindHXDel, s.encodeHXDel(hash, name), nil)
			n++
		}
	}
	return n, h.end(now, t)
}

// Len implements ttlhash.Store.
func (h *Hashes) Len(ctx context.Context, hash string) (int, error) {
	n := 0
	err := h.read(ctx, func(ms int64) {
		if hh := h.s.hx.hashes[hash]; hh != nil {
			for _, f := range hh.fields {
				if f.dl == 0 || f.dl > ms {
					n++
				}
			}
		}
	})
	return n, err
}

// TTL implements ttlhash.Store.
func (h *Hashes) TTL(ctx context.Context, hash string, fields []string) ([]time.Duration, error) {
	out := make([]time.Duration, len(fields))
	err := h.read(ctx, func(ms int64) {
		for i, name := range fields {
			f := h.s.hx.live(hash, name, ms)
			switch {
			case f == nil:
				out[i] = ttlhash.NoField
			case f.dl == 0:
				out[i] = ttlhash.NoTTL
			default:
				out[i] = time.Duration(f.dl-ms) * time.Millisecond
			}
		}
	})
	return out, err
}

// Expire implements ttlhash.Store.
func (h *Hashes) Expire(ctx context.Context, hash string, req ttlhash.ExpireRequest) ([]int, error) {
	now, err := h.begin(ctx)
	if err != nil {
		return nil, err
	}
	s := h.s
	ms := nowMS(now)
	target := ms + req.TTL.Milliseconds()
	if !req.At.IsZero() {
		target = req.At.UnixMilli()
	}
	var t wal.Ticket
	out := make([]int, len(req.Fields))
	for i, name := range req.Fields {
		s.hxReap(hash, name, ms, &t)
		f := s.hx.live(hash, name, ms)
		if f == nil {
			out[i] = ttlhash.NoField
			continue
		}
		var ok bool
		switch req.Cond {
		case ttlhash.None:
			ok = true
		case ttlhash.NX:
			ok = f.dl == 0
		case ttlhash.XX:
			ok = f.dl > 0
		case ttlhash.GT:
			ok = f.dl > 0 && target > f.dl
		case ttlhash.LT:
			ok = f.dl == 0 || target < f.dl
		}
		switch {
		case !ok:
			out[i] = ttlhash.NotMet
		case target <= ms:
			t = s.hxExpireLocked(f, target, ms)
			out[i] = ttlhash.Deleted
		default:
			s.hx.setDeadline(f, target)
			t = s.append(kindHXSet, s.encodeHXSet(hash, name, target), f.value)
			out[i] = ttlhash.Done
		}
	}
	return out, h.end(now, t)
}

// Persist implements ttlhash.Store.
func (h *Hashes) Persist(ctx context.Context, hash string, fields []string) ([]int, error) {
	now, err := h.begin(ctx)
	if err != nil {
		return nil, err
	}
	s := h.s
	ms := nowMS(now)
	var t wal.Ticket
	out := make([]int, len(fields))
	for i, name := range fields {
		s.hxReap(hash, name, ms, &t)
		f := s.hx.live(hash, name, ms)
		switch {
		case f == nil:
			out[i] = ttlhash.NoField
		case f.dl == 0:
			out[i] = ttlhash.NoTTL
		default:
			s.hx.setDeadline(f, 0)
			t = s.append(kindHXSet, s.encodeHXSet(hash, name, 0), f.value)
			out[i] = ttlhash.Done
		}
	}
	return out, h.end(now, t)
}

// Shards implements ttlhash.Store: the engine has one.
func (h *Hashes) Shards() int { return 1 }

// Sweep implements ttlhash.Store. The Store's timer expires due fields on
// its own; Sweep expires those due now that it has not reached yet.
func (h *Hashes) Sweep(ctx context.Context, shard, max int) (ttlhash.SweepResult, error) {
	if shard != 0 {
		return ttlhash.SweepResult{}, fmt.Errorf("%w: shard %d: the embedded engine has shard 0 only", ttlhash.ErrInvalid, shard)
	}
	now, err := h.begin(ctx)
	if err != nil {
		return ttlhash.SweepResult{}, err
	}
	n, t := h.s.hxAdvance(now, max)
	r := ttlhash.SweepResult{Expired: n, Next: -1}
	if len(h.s.hx.due) > 0 {
		if d := h.s.hx.due[0].dl - nowMS(now); d <= 0 {
			r.More, r.Next = true, 0
		} else {
			r.Next = time.Duration(d) * time.Millisecond
		}
	}
	return r, h.end(now, t)
}

// CreateGroup implements ttlhash.Store.
func (h *Hashes) CreateGroup(ctx context.Context, group string) error {
	now, err := h.begin(ctx)
	if err != nil {
		return err
	}
	var t wal.Ticket
	if h.s.hx.groups[group] == nil {
		h.s.hx.createGroup(group)
		t = h.s.append(kindHXGroup, h.s.encodeHXGroup(group, true), nil)
	}
	return h.end(now, t)
}

func (x *hxState) createGroup(name string) {
	x.groups[name] = &hxGroup{name: name, next: x.firstSeq(), pending: map[uint64]*hxPending{}, acked: map[uint64]bool{}}
}

// DeleteGroup implements ttlhash.Store.
func (h *Hashes) DeleteGroup(ctx context.Context, group string) error {
	now, err := h.begin(ctx)
	if err != nil {
		return err
	}
	if h.s.hx.groups[group] == nil {
		h.end(now, 0)
		return fmt.Errorf("%w: %q", ttlhash.ErrNoGroup, group)
	}
	delete(h.s.hx.groups, group)
	h.s.hx.trim()
	return h.end(now, h.s.append(kindHXGroup, h.s.encodeHXGroup(group, false), nil))
}

func eventOf(e *hxEvent, again bool) ttlhash.Event {
	return ttlhash.Event{
		ID: strconv.FormatUint(e.seq, 10), Hash: e.hash, Field: e.field, Value: slices.Clone(e.value),
		Deadline: time.UnixMilli(e.dl), ExpiredAt: time.UnixMilli(e.expiredAt), Redelivered: again,
	}
}

func (x *hxState) event(seq uint64) *hxEvent {
	i, ok := slices.BinarySearchFunc(x.events, seq, func(e *hxEvent, seq uint64) int { return cmpU64(e.seq, seq) })
	if !ok {
		return nil
	}
	return x.events[i]
}

// Read implements ttlhash.Store.
func (h *Hashes) Read(ctx context.Context, group, consumer string, max int) ([]ttlhash.Event, error) {
	now, err := h.begin(ctx)
	if err != nil {
		return nil, err
	}
	x := &h.s.hx
	g := x.groups[group]
	if g == nil {
		h.end(now, 0)
		return nil, fmt.Errorf("%w: %q", ttlhash.ErrNoGroup, group)
	}
	var out []ttlhash.Event
	if first := x.firstSeq(); g.next < first {
		g.next = first
	}
	for len(out) < max && g.next < x.nextSeq {
		seq := g.next
		g.next++
		if g.acked[seq] {
			delete(g.acked, seq)
			continue
		}
		e := x.event(seq)
		if e == nil {
			continue
		}
		g.pending[seq] = &hxPending{consumer: consumer, at: nowMS(now)}
		out = append(out, eventOf(e, false))
	}
	return out, h.end(now, 0)
}

// Claim implements ttlhash.Store, on the Store's clock.
func (h *Hashes) Claim(ctx context.Context, group, consumer string, minIdle time.Duration, max int) ([]ttlhash.Event, error) {
	now, err := h.begin(ctx)
	if err != nil {
		return nil, err
	}
	x := &h.s.hx
	g := x.groups[group]
	if g == nil {
		h.end(now, 0)
		return nil, fmt.Errorf("%w: %q", ttlhash.ErrNoGroup, group)
	}
	ms := nowMS(now)
	var seqs []uint64
	for seq, p := range g.pending {
		if ms-p.at >= minIdle.Milliseconds() {
			seqs = append(seqs, seq)
		}
	}
	slices.Sort(seqs)
	var out []ttlhash.Event
	for _, seq := range seqs {
		if len(out) == max {
			break
		}
		e := x.event(seq)
		if e == nil {
			delete(g.pending, seq)
			continue
		}
		g.pending[seq] = &hxPending{consumer: consumer, at: ms, again: true}
		out = append(out, eventOf(e, true))
	}
	return out, h.end(now, 0)
}

// Ack implements ttlhash.Store.
func (h *Hashes) Ack(ctx context.Context, group string, ids []string) (int, error) {
	seqs := make([]uint64, len(ids))
	for i, id := range ids {
		n, err := strconv.ParseUint(id, 10, 64)
		if err != nil || n == 0 {
			return 0, fmt.Errorf("%w: %q", ttlhash.ErrInvalidEventID, id)
		}
		seqs[i] = n
	}
	now, err := h.begin(ctx)
	if err != nil {
		return 0, err
	}
	x := &h.s.hx
	g := x.groups[group]
	n := 0
	var t wal.Ticket
	if g != nil {
		for _, seq := range seqs {
			if g.pending[seq] != nil {
				delete(g.pending, seq)
				t = h.s.append(kindHXAck, h.s.encodeHXAck(group, seq), nil)
				n++
			}
		}
		x.trim()
	}
	return n, h.end(now, t)
}

// EventStats implements ttlhash.Store.
func (h *Hashes) EventStats(ctx context.Context) (ttlhash.EventStats, error) {
	var st ttlhash.EventStats
	err := h.read(ctx, func(int64) {
		x := &h.s.hx
		st.Retained, st.Dropped = int64(len(x.events)), x.dropped
		for _, g := range x.groups {
			st.Groups = append(st.Groups, ttlhash.GroupStats{Name: g.name, Pending: int64(len(g.pending))})
		}
		slices.SortFunc(st.Groups, func(a, b ttlhash.GroupStats) int { return strings.Compare(a.Name, b.Name) })
	})
	return st, err
}

// Listen implements ttlhash.Notifier for ttlhash.TopicEvents only: wake is
// called after events are appended, without the Store's lock held. The
// engine's own timer expires fields, so it announces no ttlhash.TopicDue.
func (h *Hashes) Listen(ctx context.Context, topic string, wake func(topic string)) (func(), error) {
	if topic != ttlhash.TopicEvents {
		return nil, fmt.Errorf("memstore: %w: %q", ttlhash.ErrNoTopic, topic)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	call := func() { wake(topic) }
	f := &call
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	if h.s.closed {
		return nil, ttlhash.ErrClosed
	}
	h.s.hx.lis[f] = struct{}{}
	var once sync.Once
	return func() {
		once.Do(func() {
			h.s.mu.Lock()
			delete(h.s.hx.lis, f)
			h.s.mu.Unlock()
		})
	}, nil
}

// Records.

func (s *Store) encodeHXSet(hash, field string, dl int64) []byte {
	b := appendString(s.scratch[:0], hash)
	b = appendString(b, field)
	b = binary.AppendVarint(b, dl)
	s.scratch = b
	return b
}

func (s *Store) encodeHXDel(hash, field string) []byte {
	b := appendString(s.scratch[:0], hash)
	b = appendString(b, field)
	s.scratch = b
	return b
}

func (s *Store) encodeHXEvent(e *hxEvent) []byte {
	b := binary.AppendUvarint(s.scratch[:0], e.seq)
	b = appendString(b, e.hash)
	b = appendString(b, e.field)
	b = binary.AppendVarint(b, e.dl)
	b = binary.AppendVarint(b, e.expiredAt)
	s.scratch = b
	return b
}

func (s *Store) encodeHXGroup(group string, created bool) []byte {
	b := appendString(s.scratch[:0], group)
	if created {
		b = append(b, 1)
	} else {
		b = append(b, 0)
	}
	s.scratch = b
	return b
}

func (s *Store) encodeHXAck(group string, seq uint64) []byte {
	b := appendString(s.scratch[:0], group)
	b = binary.AppendUvarint(b, seq)
	s.scratch = b
	return b
}

// hxSnapshotLocked adds the ttlhash state to a snapshot.
func (s *Store) hxSnapshotLocked(w *wal.SnapshotWriter) {
	x := &s.hx
	b := binary.AppendUvarint(s.scratch[:0], x.nextSeq)
	b = binary.AppendVarint(b, x.dropped)
	w.Add(kindHXMeta, b, nil)
	names := make([]string, 0, len(x.hashes))
	for n := range x.hashes {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		for _, f := range x.hashes[n].fields {
			w.Add(kindHXSet, s.encodeHXSet(n, f.name, f.dl), f.value)
		}
	}
	for _, e := range x.events {
		w.Add(kindHXEvent, s.encodeHXEvent(e), e.value)
	}
	for _, g := range x.groups {
		// Pending events count as not acknowledged: they are handed out
		// again after a restart.
		next := g.floor()
		var acked []uint64
		for seq := next; seq < g.next; seq++ {
			if g.pending[seq] == nil {
				acked = append(acked, seq)
			}
		}
		for seq := range g.acked {
			acked = append(acked, seq)
		}
		b = appendString(s.scratch[:0], g.name)
		b = binary.AppendUvarint(b, next)
		b = binary.AppendUvarint(b, uint64(len(acked)))
		for _, seq := range acked {
			b = binary.AppendUvarint(b, seq)
		}
		s.scratch = b
		w.Add(kindHXAcked, b, nil)
	}
	s.scratch = b[:0]
}

// hxReplay applies one ttlhash record at Open.
func (s *Store) hxReplay(kind byte, d *decoder) error {
	x := &s.hx
	switch kind {
	case kindHXSet:
		hash, field, dl := d.string(), d.string(), d.varint()
		if d.err != nil {
			return d.err
		}
		x.putField(hash, field, slices.Clone(d.b), dl)
		return nil
	case kindHXDel:
		hash, field := d.string(), d.string()
		if err := d.end(); err != nil {
			return err
		}
		if hh := x.hashes[hash]; hh != nil && hh.fields[field] != nil {
			x.removeField(hh.fields[field])
		}
		return nil
	case kindHXExpire, kindHXEvent:
		e := &hxEvent{seq: d.uvarint(), hash: d.string(), field: d.string(), dl: d.varint(), expiredAt: d.varint()}
		if d.err != nil {
			return d.err
		}
		e.value = slices.Clone(d.b)
		if kind == kindHXExpire {
			if hh := x.hashes[e.hash]; hh != nil && hh.fields[e.field] != nil {
				x.removeField(hh.fields[e.field])
			}
		}
		if len(x.events) > 0 && e.seq <= x.events[len(x.events)-1].seq {
			return fmt.Errorf("event %d out of order", e.seq)
		}
		x.appendEvent(e)
		x.wake = false
		return nil
	case kindHXGroup:
		name, created := d.string(), d.byte() == 1
		if err := d.end(); err != nil {
			return err
		}
		if created {
			if x.groups[name] == nil {
				x.createGroup(name)
			}
		} else {
			delete(x.groups, name)
			x.trim()
		}
		return nil
	case kindHXAck:
		name, seq := d.string(), d.uvarint()
		if err := d.end(); err != nil {
			return err
		}
		if g := x.groups[name]; g != nil && seq >= g.next {
			g.acked[seq] = true
			// Acknowledged events at the front need not be handed out.
			for g.acked[g.next] {
				delete(g.acked, g.next)
				g.next++
			}
			x.trim()
		}
		return nil
	case kindHXMeta:
		x.nextSeq, x.dropped = d.uvarint(), d.varint()
		return d.end()
	case kindHXAcked:
		g := &hxGroup{name: d.string(), next: d.uvarint(), pending: map[uint64]*hxPending{}, acked: map[uint64]bool{}}
		n := d.uvarint()
		for range n {
			g.acked[d.uvarint()] = true
		}
		if err := d.end(); err != nil {
			return err
		}
		for g.acked[g.next] {
			delete(g.acked, g.next)
			g.next++
		}
		x.groups[g.name] = g
		return nil
	}
	return fmt.Errorf("unknown record kind %d", kind)
}

func fieldSize(f *hxField) int64 { return int64(32 + len(f.hash.name) + len(f.name) + len(f.value)) }

func eventSize(e *hxEvent) int64 { return int64(40 + len(e.hash) + len(e.field) + len(e.value)) }
