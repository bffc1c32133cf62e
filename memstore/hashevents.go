package memstore

// Expiry events of hash fields: the part of a Store (see part.go) that
// keeps the events expired fields leave, and the consumer groups that
// read them (ttlhash.Store's Read, Claim and Ack, through Hashes).
//
// State, guarded by the engine's mutex: the events in a slice by sequence
// number; the consumer groups, each with the next sequence it has not
// handed out, its pending events (consumer, time handed out) and, after a
// restart, the events it had acknowledged past that point.
//
// Durability (record kinds 34–63): an expiry (the event, with the value;
// its replay removes the field too), a group's creation or deletion, and
// each acknowledgement are records. Handing out is not logged: after a
// restart every kept event not acknowledged by a group is handed out again
// (at-least-once). A snapshot writes the events and the groups'
// acknowledgements.

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hourglass-io/hourglass/internal/wal"
	"github.com/hourglass-io/hourglass/ttlhash"
)

// Record kinds of expiry events (34–63).
const (
	kindHXExpire = 34 // u seq, s hash, s field, v deadline, v expired-at; the value follows
	kindHXGroup  = 35 // s group, byte 1 created / 0 deleted
	kindHXAck    = 36 // s group, u seq
	kindHXMeta   = 37 // snapshot: u next seq, v dropped
	kindHXEvent  = 38 // snapshot: an event kept (layout of kindHXExpire)
	kindHXAcked  = 39 // snapshot: s group, u next, u count, count × u seq acknowledged at or past next
)

// DefaultMaxEvents is Options.MaxEvents when it is 0.
const DefaultMaxEvents = 1_000_000

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

// hashEvents is the part of the expiry events and their groups.
type hashEvents struct {
	e *engine
	// dropField is the seam to the fields: an expiry replayed at Open
	// removes the field it came from.
	dropField func(hash, field string)
	events    []*hxEvent // by seq, oldest first
	nextSeq   uint64     // the sequence of the next event (from 1)
	dropped   int64
	groups    map[string]*hxGroup
	cap       int
	bytes     int64     // about what a snapshot of the events takes
	listeners listeners // Listen(TopicEvents), all under ""
}

func (x *hashEvents) init(e *engine, maxEvents int, dropField func(hash, field string)) {
	x.e, x.dropField = e, dropField
	x.groups = map[string]*hxGroup{}
	x.nextSeq = 1
	x.cap = maxEvents
	x.listeners.durable = true
}

func (x *hashEvents) next() int64 { return never }

func (x *hashEvents) advance(int64) wal.Ticket { return 0 }

func (x *hashEvents) size() int64 { return x.bytes }

func (x *hashEvents) recovered(int64) {}

func (x *hashEvents) close() { clear(x.listeners.byKey) }

func (x *hashEvents) firstSeq() uint64 {
	if len(x.events) == 0 {
		return x.nextSeq
	}
	return x.events[0].seq
}

// expired is the seam from the fields: the field hash/field, of value
// value and deadline dl (ms), expired at ms. Its event is kept and logged
// (kindHXExpire, whose replay removes the field through dropField); the
// ticket is the record's.
func (x *hashEvents) expired(hash, field string, value []byte, dl, ms int64) wal.Ticket {
	ev := &hxEvent{seq: x.nextSeq, hash: hash, field: field, value: value, dl: dl, expiredAt: ms}
	x.appendEvent(ev)
	return x.e.append(kindHXExpire, x.encodeEvent(ev), ev.value)
}

// appendEvent adds an event and holds the cap (no log).
func (x *hashEvents) appendEvent(ev *hxEvent) {
	x.events = append(x.events, ev)
	x.bytes += eventSize(ev)
	x.nextSeq = max(x.nextSeq, ev.seq+1)
	x.e.wake(&x.listeners, "")
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
func (x *hashEvents) cut(n int) {
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
func (x *hashEvents) trim() {
	if len(x.groups) == 0 || len(x.events) == 0 {
		return
	}
	floor := x.nextSeq
	for _, g := range x.groups {
		floor = min(floor, g.floor())
	}
	n, _ := slices.BinarySearchFunc(x.events, floor, func(e *hxEvent, seq uint64) int {
		return cmp.Compare(e.seq, seq)
	})
	if n > 0 {
		x.cut(n)
	}
}

// CreateGroup implements ttlhash.Store.
func (h *Hashes) CreateGroup(ctx context.Context, group string) error {
	return write(ctx, h.tx(), func(int64) (wal.Ticket, error) {
		if h.events.groups[group] != nil {
			return 0, nil
		}
		h.events.createGroup(group)
		return h.e.append(kindHXGroup, h.events.encodeGroup(group, true), nil), nil
	})
}

func (x *hashEvents) createGroup(name string) {
	x.groups[name] = &hxGroup{name: name, next: x.firstSeq(), pending: map[uint64]*hxPending{}, acked: map[uint64]bool{}}
}

// DeleteGroup implements ttlhash.Store.
func (h *Hashes) DeleteGroup(ctx context.Context, group string) error {
	_, err := groupUpdate(ctx, h, group, func(int64, *hxGroup) (struct{}, wal.Ticket) {
		delete(h.events.groups, group)
		h.events.trim()
		return struct{}{}, h.e.append(kindHXGroup, h.events.encodeGroup(group, false), nil)
	})
	return err
}

func eventOf(e *hxEvent, again bool) ttlhash.Event {
	return ttlhash.Event{
		ID: strconv.FormatUint(e.seq, 10), Hash: e.hash, Field: e.field, Value: slices.Clone(e.value),
		Deadline: time.UnixMilli(e.dl), ExpiredAt: time.UnixMilli(e.expiredAt), Redelivered: again,
	}
}

func (x *hashEvents) event(seq uint64) *hxEvent {
	i, ok := slices.BinarySearchFunc(x.events, seq, func(e *hxEvent, seq uint64) int { return cmp.Compare(e.seq, seq) })
	if !ok {
		return nil
	}
	return x.events[i]
}

// groupUpdate runs f as one operation on consumer group group of h's
// events (see update): ErrNoGroup, and f not run, when there is none.
func groupUpdate[T any](ctx context.Context, h *Hashes, group string, f func(now int64, g *hxGroup) (T, wal.Ticket)) (T, error) {
	return update(ctx, h.tx(), func(now int64) (T, wal.Ticket, error) {
		g := h.events.groups[group]
		if g == nil {
			var zero T
			return zero, 0, fmt.Errorf("%w: %q", ttlhash.ErrNoGroup, group)
		}
		v, t := f(now, g)
		return v, t, nil
	})
}

// Read implements ttlhash.Store.
func (h *Hashes) Read(ctx context.Context, group, consumer string, max int) ([]ttlhash.Event, error) {
	return groupUpdate(ctx, h, group, func(now int64, g *hxGroup) ([]ttlhash.Event, wal.Ticket) {
		return h.readEvents(g, consumer, max, now), 0
	})
}

// readEvents is Read of group g under the Store's lock at now.
func (h *Hashes) readEvents(g *hxGroup, consumer string, max int, now int64) []ttlhash.Event {
	x := h.events
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
	return out
}

// Claim implements ttlhash.Store, on the Store's clock.
func (h *Hashes) Claim(ctx context.Context, group, consumer string, minIdle time.Duration, max int) ([]ttlhash.Event, error) {
	return groupUpdate(ctx, h, group, func(now int64, g *hxGroup) ([]ttlhash.Event, wal.Ticket) {
		return h.claim(g, consumer, minIdle, max, nowMS(now)), 0
	})
}

// claim is Claim of group g under the Store's lock at ms.
func (h *Hashes) claim(g *hxGroup, consumer string, minIdle time.Duration, max int, ms int64) []ttlhash.Event {
	x := h.events
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
	return out
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
	return hashUpdate(ctx, h, func(_ int64, t *wal.Ticket) int {
		x := h.events
		g := x.groups[group]
		if g == nil {
			return 0
		}
		n := 0
		for _, seq := range seqs {
			if g.pending[seq] != nil {
				delete(g.pending, seq)
				*t = h.e.append(kindHXAck, h.events.encodeAck(group, seq), nil)
				n++
			}
		}
		x.trim()
		return n
	})
}

// EventStats implements ttlhash.Store.
func (h *Hashes) EventStats(ctx context.Context) (ttlhash.EventStats, error) {
	var st ttlhash.EventStats
	err := h.read(ctx, func(int64) {
		x := h.events
		st.Retained, st.Dropped = int64(len(x.events)), x.dropped
		for _, g := range x.groups {
			st.Groups = append(st.Groups, ttlhash.GroupStats{Name: g.name, Pending: int64(len(g.pending))})
		}
		slices.SortFunc(st.Groups, func(a, b ttlhash.GroupStats) int { return strings.Compare(a.Name, b.Name) })
	})
	return st, err
}

// Listen implements ttlhash.Notifier for ttlhash.TopicEvents only: wake is
// called after events are appended (and written), without the Store's lock
// held. The engine's own timer expires fields, so it announces no
// ttlhash.TopicDue.
func (h *Hashes) Listen(ctx context.Context, topic string, wake func(topic string)) (func(), error) {
	if topic != ttlhash.TopicEvents {
		return nil, fmt.Errorf("memstore: %w: %q", ttlhash.ErrNoTopic, topic)
	}
	return h.e.listen(ctx, &h.events.listeners, "", func(string) { wake(topic) }, ttlhash.ErrClosed)
}

// Records.

func (x *hashEvents) encodeEvent(e *hxEvent) []byte {
	b := binary.AppendUvarint(x.e.scratch[:0], e.seq)
	b = appendString(b, e.hash)
	b = appendString(b, e.field)
	b = binary.AppendVarint(b, e.dl)
	b = binary.AppendVarint(b, e.expiredAt)
	x.e.scratch = b
	return b
}

func (x *hashEvents) encodeGroup(group string, created bool) []byte {
	b := appendString(x.e.scratch[:0], group)
	if created {
		b = append(b, 1)
	} else {
		b = append(b, 0)
	}
	x.e.scratch = b
	return b
}

func (x *hashEvents) encodeAck(group string, seq uint64) []byte {
	b := appendString(x.e.scratch[:0], group)
	b = binary.AppendUvarint(b, seq)
	x.e.scratch = b
	return b
}

// snapshot adds the events and the groups' acknowledgements to a
// snapshot.
func (x *hashEvents) snapshot(w *wal.SnapshotWriter) {
	b := binary.AppendUvarint(x.e.scratch[:0], x.nextSeq)
	b = binary.AppendVarint(b, x.dropped)
	w.Add(kindHXMeta, b, nil)
	for _, e := range x.events {
		w.Add(kindHXEvent, x.encodeEvent(e), e.value)
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
		b = appendString(x.e.scratch[:0], g.name)
		b = binary.AppendUvarint(b, next)
		b = binary.AppendUvarint(b, uint64(len(acked)))
		for _, seq := range acked {
			b = binary.AppendUvarint(b, seq)
		}
		x.e.scratch = b
		w.Add(kindHXAcked, b, nil)
	}
	x.e.scratch = b[:0]
}

// replay applies one record of the events' kinds at Open.
func (x *hashEvents) replay(kind byte, d *decoder) error {
	switch kind {
	case kindHXExpire, kindHXEvent:
		e := &hxEvent{seq: d.uvarint(), hash: d.string(), field: d.string(), dl: d.varint(), expiredAt: d.varint()}
		if d.err != nil {
			return d.err
		}
		e.value = slices.Clone(d.b)
		if kind == kindHXExpire {
			x.dropField(e.hash, e.field)
		}
		if len(x.events) > 0 && e.seq <= x.events[len(x.events)-1].seq {
			return fmt.Errorf("event %d out of order", e.seq)
		}
		x.appendEvent(e)
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

func eventSize(e *hxEvent) int64 { return int64(40 + len(e.hash) + len(e.field) + len(e.value)) }
