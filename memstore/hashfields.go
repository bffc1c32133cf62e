package memstore

// Expiring hash fields (package ttlhash) in the embedded engine: the
// hashes and their fields, a part of the Store (see part.go). The expiry
// events the fields leave are another part (hashevents.go); Hashes, the
// ttlhash.Store, is the view of both.
//
// State, guarded by the engine's mutex: hashes by name, each a map of fields;
// the fields with a deadline in one min-heap (earliest first), whose top
// is the part's next deadline, so the Store's one timer expires them and
// no timer exists per field.
//
// Durability (record kinds 32–33): a set writes the field with its
// deadline and value; a delete is a record; an expiry is the event's
// record (hashevents.go), which removes the field too. A snapshot writes
// the fields.
//
// The two parts meet at one seam, two functions given at init and nothing
// else: a field that expires goes to the events through expired
// (hashEvents.expired, which keeps and logs its event), and an expiry
// read back from the log at Open removes its field through the events'
// dropField (hashFields.drop). Neither part reads the other's state; the
// view, Hashes, uses both.

import (
	"container/heap"
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"time"

	"github.com/hourglass-io/hourglass/internal/wal"
	"github.com/hourglass-io/hourglass/ttlhash"
)

// Record kinds of hash fields (32–33).
const (
	kindHXSet = 32 // s hash, s field, v deadline ms (0: none); the value follows
	kindHXDel = 33 // s hash, s field
)

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

// hashFields is the part of the hashes and their fields.
type hashFields struct {
	e *engine
	// expired is the seam to the events: the field hash/field, of value
	// value and deadline dl (ms), expired at ms; it returns the ticket of
	// the event's record.
	expired func(hash, field string, value []byte, dl, ms int64) wal.Ticket
	hashes  map[string]*hxHash
	due     hxDue
	bytes   int64 // about what a snapshot of the fields takes
}

func (x *hashFields) init(e *engine, expired func(hash, field string, value []byte, dl, ms int64) wal.Ticket) {
	x.e, x.expired = e, expired
	x.hashes = map[string]*hxHash{}
}

// next is the earliest field deadline in ns, or never.
func (x *hashFields) next() int64 {
	if len(x.due) == 0 {
		return never
	}
	return x.due[0].dl * int64(time.Millisecond)
}

// advance expires the fields due at now.
func (x *hashFields) advance(now int64) wal.Ticket {
	_, t := x.expire(now, 0)
	return t
}

func (x *hashFields) size() int64 { return x.bytes }

func (x *hashFields) recovered(int64) {}

func (x *hashFields) close() {}

// Hashes is the ttlhash.Store of a Store: its state lives in the Store,
// under the Store's lock, in the Store's log. It is safe for concurrent
// use. Expiry is the Store's: its timer expires due fields whether or not
// a Sweeper runs.
type Hashes struct {
	e      *engine
	fields *hashFields
	events *hashEvents
}

func (h *Hashes) init(e *engine, fields *hashFields, events *hashEvents) {
	h.e, h.fields, h.events = e, fields, events
}

// Hashes returns the Store's ttlhash.Store (the same one on every call).
func (s *Store) Hashes() *Hashes { return &s.hashes }

func nowMS(now int64) int64 { return now / int64(time.Millisecond) }

// tx is the terms of the hashes' operations (see update); event
// listeners are woken once the events are durable.
func (h *Hashes) tx() tx { return tx{e: h.e, closed: ttlhash.ErrClosed} }

// live returns the field if it exists and has not expired at ms.
func (x *hashFields) live(hash, field string, ms int64) *hxField {
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

func (x *hashFields) setDeadline(f *hxField, dl int64) {
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

func (x *hashFields) removeField(f *hxField) {
	if f.hidx >= 0 {
		heap.Remove(&x.due, f.hidx)
	}
	delete(f.hash.fields, f.name)
	x.bytes -= fieldSize(f)
	if len(f.hash.fields) == 0 {
		delete(x.hashes, f.hash.name)
	}
}

// drop removes the field hash/field, if there is one (no log): a delete
// replayed, and the seam from the events, an expiry replayed.
func (x *hashFields) drop(hash, field string) {
	if hh := x.hashes[hash]; hh != nil && hh.fields[field] != nil {
		x.removeField(hh.fields[field])
	}
}

// putField sets a field (no log).
func (x *hashFields) putField(hash, field string, value []byte, dl int64) {
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

// expireField expires f at ms with the deadline dl, logging it: the field
// goes, its event comes.
func (x *hashFields) expireField(f *hxField, dl, ms int64) wal.Ticket {
	x.removeField(f)
	return x.expired(f.hash.name, f.name, f.value, dl, ms)
}

// expire expires the fields due at now (ns), at most max (0: all).
func (x *hashFields) expire(now int64, max int) (int, wal.Ticket) {
	ms := nowMS(now)
	n := 0
	var t wal.Ticket
	for len(x.due) > 0 && x.due[0].dl <= ms && (max == 0 || n < max) {
		f := x.due[0]
		t = x.expireField(f, f.dl, ms)
		n++
	}
	return n, t
}

// reap expires the field if it has expired at ms: a write that finds an
// expired field expires it first.
func (x *hashFields) reap(hash, field string, ms int64, t *wal.Ticket) {
	hh := x.hashes[hash]
	if hh == nil {
		return
	}
	if f := hh.fields[field]; f != nil && f.dl > 0 && f.dl <= ms {
		*t = x.expireField(f, f.dl, ms)
	}
}

// Set implements ttlhash.Store.
func (h *Hashes) Set(ctx context.Context, hash string, req ttlhash.SetRequest) (int, error) {
	need := int64(smallRecord)
	for _, fd := range req.Fields {
		need += 64 + int64(len(hash)+len(fd.Name)+len(fd.Value))
	}
	return update(ctx, h.tx().sized(need), func(now int64) (int, wal.Ticket, error) {
		added, t := h.set(hash, req, nowMS(now))
		return added, t, nil
	})
}

// set is Set under the Store's lock at ms; it returns the fields added and
// the ticket of the last record.
func (h *Hashes) set(hash string, req ttlhash.SetRequest, ms int64) (added int, t wal.Ticket) {
	for _, fd := range req.Fields {
		h.fields.reap(hash, fd.Name, ms, &t)
		f := h.fields.live(hash, fd.Name, ms)
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
		h.fields.putField(hash, fd.Name, v, dl)
		t = h.e.append(kindHXSet, h.fields.encodeSet(hash, fd.Name, dl), v)
	}
	return added, t
}

// read runs a read-only operation under the lock.
func (h *Hashes) read(ctx context.Context, f func(ms int64)) error {
	_, err := read(ctx, h.tx(), func(now int64) (struct{}, error) {
		f(nowMS(now))
		return struct{}{}, nil
	})
	return err
}

// hashUpdate runs f as one operation on h's hashes at ms; f returns its
// result and sets t to the ticket of its last record.
func hashUpdate[T any](ctx context.Context, h *Hashes, f func(ms int64, t *wal.Ticket) T) (T, error) {
	return update(ctx, h.tx(), func(now int64) (T, wal.Ticket, error) {
		var t wal.Ticket
		v := f(nowMS(now), &t)
		return v, t, nil
	})
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
			if f := h.fields.live(hash, name, ms); f != nil {
				e := entryOf(f)
				out[i] = &e
			}
		}
	})
	return out, err
}

func (h *Hashes) liveEntries(hash string, ms int64) []ttlhash.Entry {
	hh := h.fields.hashes[hash]
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
		hh := h.fields.hashes[hash]
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
	return hashUpdate(ctx, h, func(ms int64, t *wal.Ticket) int {
		n := 0
		for _, name := range fields {
			h.fields.reap(hash, name, ms, t)
			if f := h.fields.live(hash, name, ms); f != nil {
				h.fields.removeField(f)
				*t = h.e.append(kindHXDel, h.fields.encodeDel(hash, name), nil)
				n++
			}
		}
		return n
	})
}

// Len implements ttlhash.Store.
func (h *Hashes) Len(ctx context.Context, hash string) (int, error) {
	n := 0
	err := h.read(ctx, func(ms int64) {
		if hh := h.fields.hashes[hash]; hh != nil {
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
			f := h.fields.live(hash, name, ms)
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
	return hashUpdate(ctx, h, func(ms int64, t *wal.Ticket) []int { return h.expire(hash, req, ms, t) })
}

// expire is Expire under the Store's lock at ms.
func (h *Hashes) expire(hash string, req ttlhash.ExpireRequest, ms int64, t *wal.Ticket) []int {
	target := ms + req.TTL.Milliseconds()
	if !req.At.IsZero() {
		target = req.At.UnixMilli()
	}
	out := make([]int, len(req.Fields))
	for i, name := range req.Fields {
		h.fields.reap(hash, name, ms, t)
		f := h.fields.live(hash, name, ms)
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
			*t = h.fields.expireField(f, target, ms)
			out[i] = ttlhash.Deleted
		default:
			h.fields.setDeadline(f, target)
			*t = h.e.append(kindHXSet, h.fields.encodeSet(hash, name, target), f.value)
			out[i] = ttlhash.Done
		}
	}
	return out
}

// Persist implements ttlhash.Store.
func (h *Hashes) Persist(ctx context.Context, hash string, fields []string) ([]int, error) {
	return hashUpdate(ctx, h, func(ms int64, t *wal.Ticket) []int {
		out := make([]int, len(fields))
		for i, name := range fields {
			h.fields.reap(hash, name, ms, t)
			f := h.fields.live(hash, name, ms)
			switch {
			case f == nil:
				out[i] = ttlhash.NoField
			case f.dl == 0:
				out[i] = ttlhash.NoTTL
			default:
				h.fields.setDeadline(f, 0)
				*t = h.e.append(kindHXSet, h.fields.encodeSet(hash, name, 0), f.value)
				out[i] = ttlhash.Done
			}
		}
		return out
	})
}

// Shards implements ttlhash.Store: the engine has one.
func (h *Hashes) Shards() int { return 1 }

// Sweep implements ttlhash.Store. The Store's timer expires due fields on
// its own; Sweep expires those due now that it has not reached yet.
func (h *Hashes) Sweep(ctx context.Context, shard, max int) (ttlhash.SweepResult, error) {
	if shard != 0 {
		return ttlhash.SweepResult{}, fmt.Errorf("%w: shard %d: the embedded engine has shard 0 only", ttlhash.ErrInvalid, shard)
	}
	return update(ctx, h.tx(), func(now int64) (ttlhash.SweepResult, wal.Ticket, error) {
		n, t := h.fields.expire(now, max)
		r := ttlhash.SweepResult{Expired: n, Next: -1}
		if len(h.fields.due) > 0 {
			if d := h.fields.due[0].dl - nowMS(now); d <= 0 {
				r.More, r.Next = true, 0
			} else {
				r.Next = time.Duration(d) * time.Millisecond
			}
		}
		return r, t, nil
	})
}

// Records.

func (x *hashFields) encodeSet(hash, field string, dl int64) []byte {
	b := appendString(x.e.scratch[:0], hash)
	b = appendString(b, field)
	b = binary.AppendVarint(b, dl)
	x.e.scratch = b
	return b
}

func (x *hashFields) encodeDel(hash, field string) []byte {
	b := appendString(x.e.scratch[:0], hash)
	b = appendString(b, field)
	x.e.scratch = b
	return b
}

// snapshot adds the fields to a snapshot.
func (x *hashFields) snapshot(w *wal.SnapshotWriter) {
	for _, n := range sortedKeys(x.hashes) {
		for _, f := range x.hashes[n].fields {
			w.Add(kindHXSet, x.encodeSet(n, f.name, f.dl), f.value)
		}
	}
}

// replay applies one record of the fields' kinds at Open.
func (x *hashFields) replay(kind byte, d *decoder) error {
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
		x.drop(hash, field)
		return nil
	}
	return fmt.Errorf("unknown record kind %d", kind)
}

func fieldSize(f *hxField) int64 { return int64(32 + len(f.hash.name) + len(f.name) + len(f.value)) }
