package memstore

import (
	"context"
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/hourglass-io/hourglass/internal/tally"
	"github.com/hourglass-io/hourglass/internal/testkit/storetest"
	"github.com/hourglass-io/hourglass/internal/wal"
)

// The worked example of CONTRIBUTING.md ("Adding a primitive"), step 3:
// the part of the embedded engine for internal/tally. A real primitive
// writes the same in memstore/<name>.go, keeps its state in a field of
// Store, initialised in newStore with the engine, adds its line to the
// table in register (part.go) and returns its view from an accessor,
// Store.<Name>(); a test file can do none of that, so the example's part
// joins the table through Options.moreParts.

// Record kinds of the tallies: 255 (part.go's table).
const (
	// kindTally: a tally's value after an Add (log and snapshot): s name,
	// varint value.
	kindTally = 255
)

// tallies is the part: its state, guarded by the engine's mutex, and the
// engine it runs on (update, read, append).
type tallies struct {
	e      *engine
	values map[string]int64
}

func (t *tallies) init(e *engine) {
	t.e = e
	t.values = map[string]int64{}
}

// A tally has no deadline: next is never, advance does nothing.
func (t *tallies) next() int64              { return never }
func (t *tallies) advance(int64) wal.Ticket { return 0 }
func (t *tallies) recovered(int64)          {}
func (t *tallies) close()                   {}

func (t *tallies) size() int64 {
	var n int64
	for name := range t.values {
		n += int64(len(name)) + 12
	}
	return n
}

func encodeTally(b []byte, name string, v int64) []byte {
	return binary.AppendVarint(appendString(b, name), v)
}

// snapshot writes each tally as one record, the same record an Add logs.
func (t *tallies) snapshot(w *wal.SnapshotWriter) {
	w.Grow(len(t.values))
	for name, v := range t.values {
		w.Add(kindTally, encodeTally(nil, name, v), nil)
	}
}

func (t *tallies) replay(kind byte, d *decoder) error {
	if kind != kindTally {
		return fmt.Errorf("unknown record kind %d", kind)
	}
	name, v := d.string(), d.varint()
	if err := d.end(); err != nil {
		return err
	}
	t.values[name] = v
	return nil
}

// tallyStore is the part's view, the tally.Store: each method checks its
// input, then runs as one operation of the core (update, or read for one
// that changes nothing).
type tallyStore struct{ t *tallies }

var _ tally.Store = tallyStore{}

// tx is the terms of the tally's operations: a closed Store fails with
// the tally's error.
func (v tallyStore) tx() tx { return tx{e: v.t.e, closed: tally.ErrClosed} }

func (v tallyStore) Add(ctx context.Context, name string, n int64) (int64, error) {
	if err := tally.Check(name, n); err != nil {
		return 0, err
	}
	return update(ctx, v.tx(), func(int64) (int64, wal.Ticket, error) {
		e := v.t.e
		total := v.t.values[name] + n
		v.t.values[name] = total
		return total, e.append(kindTally, encodeTally(e.scratch[:0], name, total), nil), nil
	})
}

func (v tallyStore) Get(ctx context.Context, name string) (int64, error) {
	if err := tally.Check(name, 1); err != nil {
		return 0, err
	}
	return read(ctx, v.tx(), func(int64) (int64, error) { return v.t.values[name], nil })
}

// withTally returns options that add the tally part to a Store, and the
// view of that part.
func withTally(o Options) (*Options, tallyStore) {
	t := &tallies{}
	o.moreParts = func(s *Store) []registration {
		t.init(&s.engine)
		return []registration{{p: t, lo: kindTally, hi: kindTally}}
	}
	return &o, tallyStore{t}
}

// The conformance suite, on a Store made by New and on one made by Open.
func TestTallyConformance(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		storetest.Tally(t, func(t *testing.T) (tally.Store, func()) {
			opts, ts := withTally(Options{})
			s, err := New(opts)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return ts, func() { s.Close() }
		})
	})
	t.Run("disk", func(t *testing.T) {
		storetest.Tally(t, func(t *testing.T) (tally.Store, func()) {
			opts, ts := withTally(Options{})
			s, err := Open(t.TempDir(), opts)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return ts, func() { s.Close() }
		})
	})
}

// The tallies survive a restart, from a snapshot and from the log after
// it.
func TestTallyPersists(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	opts, ts := withTally(Options{})
	s, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []struct {
		name string
		n    int64
	}{{"a", 2}, {"b", -3}, {"a", 5}} {
		if _, err := ts.Add(ctx, a.name, a.n); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.compactNow(); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.Add(ctx, "b", 10); err != nil { // in the log only
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	opts, ts = withTally(Options{})
	s, err = Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for name, want := range map[string]int64{"a": 7, "b": 7, "c": 0} {
		if got, err := ts.Get(ctx, name); err != nil || got != want {
			t.Errorf("after reopen Get(%q) = %d, %v; want %d", name, got, err, want)
		}
	}
}
