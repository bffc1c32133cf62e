package memstore

import (
	"context"
	"slices"
	"sync"

	"github.com/hourglass-io/hourglass/internal/wal"
)

// part is one primitive of the engine: the job queue, expiring hash
// fields, their expiry events, locks, schedules. (The rate limits,
// Limits, are outside the table: they keep their own mutex and share only
// the clock; ratelimit.go.) The core, the engine (engine.go), owns the
// mutex, the clock, the one timer, the log and the listeners, and knows
// no primitive; a part owns its state, its records and its deadlines,
// holds a pointer to the engine for update, read, append, listen and wake,
// and the engine asks every part the same things. Every method is called
// with the engine's mutex held.
type part interface {
	// next is the part's earliest deadline (Unix ns), or never. The core
	// sets its one timer to the earliest of all parts.
	next() int64
	// advance applies what is due at now: the timer calls it on every
	// part, and each operation on the parts registered with onBegin. It
	// returns the ticket of the last record it logged (0: none).
	advance(now int64) wal.Ticket
	// snapshot adds the part's whole state to w, in records of its kinds.
	snapshot(w *wal.SnapshotWriter)
	// replay applies one record of the part's kinds at Open.
	replay(kind byte, d *decoder) error
	// recovered is called once at Open, after the replay, at now.
	recovered(now int64)
	// size is about the bytes a snapshot of the part's state takes.
	size() int64
	// close drops what a closed Store no longer serves (listeners, state
	// kept in memory only).
	close()
}

// registration is one part in the table of parts: the kinds lo–hi of the
// log are its own (none when hi is 0), and onBegin says whether every
// operation applies its due work first.
type registration struct {
	p       part
	lo, hi  byte
	onBegin bool
}

// register makes the table of parts and gives it to the engine: a new
// primitive adds its line here (and its state, a field of Store). The
// kind ranges are the only place record kinds are allotted; each part
// lists its own kinds in its file.
//
//	0        the log's own
//	1–31     the job queue (queue.go, queuelog.go; 1–16, 18–19, 22–23 and
//	         26–28 in use: keep.go, cancel.go, the error history, a job
//	         held behind another in behind.go)
//	32–33    expiring hash fields (hashfields.go; both in use)
//	34–63    expiry events of hash fields (hashevents.go; 34–39 in use)
//	64–65    the tubes' counters by minute (counters.go; 64 in use)
//	66–127   free: locks keep no records, so a restart holds no lock
//	         (nor do the rate limits, outside the table: every key
//	         begins idle)
//	128–159  schedules (schedule.go; 128–130 in use, 131–133 the overlap's)
//	160–254  free
//	255      the worked example of CONTRIBUTING.md, in tests only
//	         (tally_test.go)
//
// A kind's layout never changes once released: a new layout is a new kind.
// The table's order is the order of the parts in a snapshot.
// more are parts that the package's tests add after the table (the
// worked example; see Options.moreParts); a real primitive has its line
// in the table instead.
func (s *Store) register(more []registration) {
	s.engine.add(append([]registration{
		{p: &s.queue, lo: 1, hi: 31, onBegin: true},
		{p: &s.fields, lo: 32, hi: 33},
		{p: &s.events, lo: 34, hi: 63},
		{p: &s.locks},
		{p: &s.schedules, lo: 128, hi: 159},
		{p: &s.counters, lo: 64, hi: 65},
	}, more...))
}

// inMemory is embedded by the parts that keep nothing in the log and need
// no work at Open.
type inMemory struct{}

func (inMemory) snapshot(*wal.SnapshotWriter) {}
func (inMemory) replay(byte, *decoder) error  { return errBadRecord }
func (inMemory) recovered(int64)              {}
func (inMemory) size() int64                  { return 0 }

// listeners are the wake-up callbacks of one part, by key (a tube, a lock
// name; "" when a part has one kind of wake-up).
type listeners struct {
	byKey map[string][]*listener
	// durable: wake only once the operation's records are on disk.
	durable bool
}

type listener struct {
	key  string
	wake func(key string)
}

// wakeup is a wake-up noted during an operation.
type wakeup struct {
	ls  *listeners
	key string
}

// listen adds wake to ls under key; stop removes it. closed is the error
// of the part's package for a closed Store.
func (e *engine) listen(ctx context.Context, ls *listeners, key string, wake func(string), closed error) (func(), error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	l := &listener{key: key, wake: wake}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, closed
	}
	if ls.byKey == nil {
		ls.byKey = map[string][]*listener{}
	}
	ls.byKey[key] = append(ls.byKey[key], l)
	var once sync.Once
	stop := func() {
		once.Do(func() {
			e.mu.Lock()
			defer e.mu.Unlock()
			all := ls.byKey[key]
			if i := slices.Index(all, l); i >= 0 {
				all = slices.Delete(all, i, i+1)
			}
			if len(all) == 0 {
				delete(ls.byKey, key)
			} else {
				ls.byKey[key] = all
			}
		})
	}
	return stop, nil
}

// wake notes that the listeners of key in ls are to be woken when the
// current operation ends.
func (e *engine) wake(ls *listeners, key string) {
	if len(ls.byKey[key]) == 0 || slices.Contains(e.wakes, wakeup{ls, key}) {
		return
	}
	e.wakes = append(e.wakes, wakeup{ls, key})
}

// wakeCalls are the listeners to call once an operation has released the
// mutex: now at once, durable once its records are on disk.
type wakeCalls struct{ now, durable []*listener }

func (e *engine) takeWakesLocked() wakeCalls {
	var c wakeCalls
	for _, w := range e.wakes {
		if w.ls.durable {
			c.durable = append(c.durable, w.ls.byKey[w.key]...)
		} else {
			c.now = append(c.now, w.ls.byKey[w.key]...)
		}
	}
	e.wakes = e.wakes[:0]
	return c
}
