package memstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/hourglass-io/hourglass/internal/wal"
)

// engine is the core of a Store: the mutex, the clock, the one timer, the
// log and its snapshots, and the wake-ups of listeners. It knows no
// primitive: it asks the parts of its table (part.go) for their deadlines,
// their due work, their snapshot records and the replay of their records,
// all in the same words, and a part calls begin and end around each of its
// operations. Every part holds a pointer to the engine.
type engine struct {
	clock        func() time.Time
	compactBytes int64
	logger       *slog.Logger
	log          *wal.Log       // nil for a Store made by New
	bg           sync.WaitGroup // the snapshot being written
	timer        Timer          // fires at the earliest deadline of all parts
	timed        bool           // the timer fires (not a Clock without AfterFunc): the engine wakes listeners at deadlines

	// mu guards everything below and the state of every part.
	// Records are appended to the log while it is held, so the log's order
	// is the order of the changes.
	mu      sync.Mutex
	closed  bool
	parts   []part    // every part, in the order of the table
	onBegin []part    // the parts whose due work every operation applies first
	byKind  [256]part // the part that owns each record kind
	timerAt int64     // when (Unix ns) the timer is set to fire, maybe for nothing (armLocked); never when not set
	wakes   []wakeup  // listeners to wake when the current operation ends

	compacting   bool
	compactFloor int64     // after a failed snapshot, the log size to reach before trying again
	dir          string    // Open's directory
	lastSnapshot time.Time // when the last snapshot was written (logstats.go)
	scratch      []byte    // for encoding records
}

func (e *engine) init(opts *Options) {
	e.clock = opts.clock()
	e.compactBytes = opts.compactBytes()
	e.logger = opts.logger()
	e.timerAt = never
	e.timer = opts.afterFunc()(time.Hour, e.fire)
	e.timer.Stop()
	_, none := e.timer.(noTimer)
	e.timed = !none
}

// add puts parts in the engine's table: the kinds lo–hi of each are its
// own. A kind allotted twice panics.
func (e *engine) add(table []registration) {
	for _, r := range table {
		e.parts = append(e.parts, r.p)
		if r.onBegin {
			e.onBegin = append(e.onBegin, r.p)
		}
		for k := int(r.lo); r.hi > 0 && k <= int(r.hi); k++ {
			if e.byKind[k] != nil {
				panic("memstore: record kind allotted twice")
			}
			e.byKind[k] = r.p
		}
	}
}

// open opens the log in dir and replays it into the parts, then lets each
// part apply what fell due while the Store was closed.
func (e *engine) open(dir string, sync wal.SyncPolicy, fs wal.FS) error {
	l, err := wal.Open(dir, &wal.Options{Sync: sync, Logger: e.logger, FS: fs}, e.replay)
	if err != nil {
		return fmt.Errorf("memstore: open %s: %w", dir, err)
	}
	e.log, e.dir = l, dir
	e.lastSnapshot = snapshotTime(dir, l.Recovery().Snapshot)
	if rec := l.Recovery(); rec.CutBytes > 0 {
		e.logger.Warn("memstore: cut a torn tail off the log", "file", rec.CutFile, "offset", rec.CutOffset, "bytes", rec.CutBytes)
	}
	e.mu.Lock()
	now := e.now()
	for _, p := range e.onBegin {
		p.advance(now)
	}
	for _, p := range e.parts {
		p.recovered(now)
	}
	e.armLocked(now)
	e.mu.Unlock()
	return nil
}

// close closes every part, stops the timer and background work, and
// closes the log. A second close does nothing.
func (e *engine) close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	for _, p := range e.parts {
		p.close()
	}
	e.timer.Stop()
	if c, ok := e.timer.(interface{ Close() error }); ok {
		_ = c.Close() // the default timer holds a file descriptor
	}
	e.timerAt = never
	e.wakes = nil
	e.mu.Unlock()
	e.bg.Wait()
	if e.log != nil {
		if err := e.log.Close(); err != nil {
			return fmt.Errorf("memstore: %w", err)
		}
	}
	return nil
}

func (e *engine) now() int64 { return e.clock().UnixNano() }

// A tx is the terms of a part's operations: the engine, the error of the
// part's package for a closed store (queue.ErrClosed, lock.ErrClosed, …),
// the error a full disk also wraps (queue.ErrFull; nil for none) and the
// room the operation's records take in the log (0: smallRecord, the
// records of one operation without a body or a value). A part makes its
// tx in one method and runs each operation through update or read.
type tx struct {
	e      *engine
	closed error
	full   error
	need   int64
}

// sized is x for an operation whose records take about need bytes.
func (x tx) sized(need int64) tx {
	x.need = need
	return x
}

// smallRecord is the room an operation asks the log for when its tx names
// none.
const smallRecord = 1 << 10

// update runs f as one operation that may change the state. Before f it
// takes the engine's lock, makes sure the log can take the operation's
// records and applies the due work of the parts registered with onBegin;
// f gets the operation's time and returns its result, the ticket of the
// last record it appended (0 for none) and its outcome. After f the timer
// is re-armed, a snapshot started when the log has grown enough, the lock
// released, the listeners woken and the records waited for until durable
// (see end). A closed Store fails with x.closed; a full disk with an
// error wrapping ErrNoSpace (and x.full), a failed log with one wrapping
// ErrLogFailed, and then f does not run. f's own error is returned with
// its result once its records are durable.
func update[T any](ctx context.Context, x tx, f func(now int64) (T, wal.Ticket, error)) (T, error) {
	now, err := x.e.begin(ctx, x.closed, max(x.need, smallRecord))
	if err != nil {
		if x.full != nil && errors.Is(err, ErrNoSpace) {
			err = fmt.Errorf("%w: %w", x.full, err)
		}
		var zero T
		return zero, err
	}
	v, t, err := f(now)
	if endErr := x.e.end(now, t); endErr != nil {
		var zero T
		return zero, endErr
	}
	return v, err
}

// write is update for an operation whose only result is its error.
func write(ctx context.Context, x tx, f func(now int64) (wal.Ticket, error)) error {
	_, err := update(ctx, x, func(now int64) (struct{}, wal.Ticket, error) {
		t, err := f(now)
		return struct{}{}, t, err
	})
	return err
}

// read runs f as one operation that changes nothing (it appends no
// record): like update, but served on a full disk and after the log has
// failed, from the state in memory.
func read[T any](ctx context.Context, x tx, f func(now int64) (T, error)) (T, error) {
	now, err := x.e.beginRead(ctx, x.closed)
	if err != nil {
		var zero T
		return zero, err
	}
	v, err := f(now)
	x.e.end(now, 0)
	return v, err
}

// begin starts an operation (update's first half): it takes the lock,
// checks that the store is open and that the log has room for need bytes,
// and applies the due work.
func (e *engine) begin(ctx context.Context, closed error, need int64) (int64, error) {
	if err := e.lock(ctx, closed); err != nil {
		return 0, err
	}
	if e.log != nil {
		if err := e.log.Room(need); err != nil {
			e.mu.Unlock()
			if errors.Is(err, wal.ErrFailed) {
				return 0, fmt.Errorf("memstore: no write is taken until the store is closed and reopened: %w", err)
			}
			return 0, fmt.Errorf("memstore: %w", err)
		}
	}
	return e.advanceLocked(), nil
}

// beginRead is begin for an operation that changes nothing.
func (e *engine) beginRead(ctx context.Context, closed error) (int64, error) {
	if err := e.lock(ctx, closed); err != nil {
		return 0, err
	}
	return e.advanceLocked(), nil
}

// lock takes the engine's lock unless ctx is done or the store closed
// (then it fails with closed).
func (e *engine) lock(ctx context.Context, closed error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return closed
	}
	return nil
}

// advanceLocked applies the due work of the parts registered with onBegin
// and returns the time it did so at.
func (e *engine) advanceLocked() int64 {
	now := e.now()
	for _, p := range e.onBegin {
		p.advance(now)
	}
	return now
}

// end finishes an operation: it re-arms the timer, starts a snapshot when
// the log has grown enough, releases the lock, wakes the listeners and
// waits until the operation's records (up to ticket t) are durable; the
// listeners that want durable changes are woken after that.
func (e *engine) end(now int64, t wal.Ticket) error {
	e.armLocked(now)
	if t != 0 {
		e.maybeCompactLocked()
	}
	calls := e.takeWakesLocked()
	e.mu.Unlock()
	wakeAll(calls.now)
	var err error
	if t != 0 {
		if err = e.log.Wait(t); err != nil {
			err = fmt.Errorf("memstore: %w", err)
		}
	}
	wakeAll(calls.durable)
	return err
}

// append adds a record to the log, if there is one, and returns its ticket.
func (e *engine) append(kind byte, head, tail []byte) wal.Ticket {
	if e.log == nil {
		return 0
	}
	return e.log.Append(kind, head, tail)
}

// nextDue is the earliest deadline of all parts, or never.
func (e *engine) nextDue() int64 {
	n := int64(never)
	for _, p := range e.parts {
		n = min(n, p.next())
	}
	return n
}

// armLocked makes sure the timer fires by the earliest deadline of all
// parts. It only ever brings the timer forward: when the earliest deadline
// goes later or away (a reservation deleted, the last delayed job taken) the
// timer is left as it is, fires early at most once, and fire sets it again
// for what is then due. A reserve and a delete each move the earliest end of
// a reservation, and setting a timer is a system call and, once stopped, a
// goroutine to start again: most commands then pay for none.
func (e *engine) armLocked(now int64) {
	next := e.nextDue()
	switch {
	case e.closed:
	case next == never:
	case e.timerAt == never || next < e.timerAt:
		e.timerAt = next
		e.timer.Reset(time.Duration(next - now))
	}
}

// fire runs on the timer: every part applies what is due, and the
// listeners concerned are woken.
func (e *engine) fire() {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return
	}
	now := e.now()
	var t wal.Ticket
	for _, p := range e.parts {
		t = max(t, p.advance(now))
	}
	e.timerAt = never // the timer has fired: set it again
	e.armLocked(now)
	calls := e.takeWakesLocked()
	e.mu.Unlock()
	wakeAll(calls.now)
	if t != 0 {
		_ = e.log.Wait(t) // a failure shows in the next operation's log check
	}
	wakeAll(calls.durable)
}

// wakeAll calls the listeners ls.
func wakeAll(ls []*listener) {
	for _, l := range ls {
		l.wake(l.key)
	}
}

// liveBytes is about the bytes a snapshot takes.
func (e *engine) liveBytes() int64 {
	var n int64
	for _, p := range e.parts {
		n += p.size()
	}
	return n
}

// snapshotLocked adds the whole state, every part's, to w, in the order
// of the table.
func (e *engine) snapshotLocked(w *wal.SnapshotWriter) {
	for _, p := range e.parts {
		p.snapshot(w)
	}
}

// replay applies one record at Open: the part that owns its kind does.
func (e *engine) replay(kind byte, b []byte) error {
	p := e.byKind[kind]
	if p == nil {
		return fmt.Errorf("unknown record kind %d", kind)
	}
	return p.replay(kind, &decoder{b: b})
}

// maybeCompactLocked starts a snapshot when the log has grown past
// max(CompactBytes, twice the live data).
func (e *engine) maybeCompactLocked() {
	if e.log == nil || e.compacting || e.closed {
		return
	}
	size := e.log.Size()
	if size < max(e.compactBytes, 2*e.liveBytes(), e.compactFloor) {
		return
	}
	w, err := e.log.BeginSnapshot()
	if err != nil {
		e.logger.Error("memstore: cannot start a snapshot", "err", err)
		e.compactFloor = 2 * size
		return
	}
	e.snapshotLocked(w)
	e.compacting = true
	e.bg.Add(1)
	go func() {
		defer e.bg.Done()
		err := w.Commit()
		e.mu.Lock()
		defer e.mu.Unlock()
		e.compacting = false
		if err != nil {
			e.logger.Error("memstore: snapshot failed; the log keeps growing until one succeeds", "err", err)
			e.compactFloor = 2 * size
			return
		}
		e.compactFloor, e.lastSnapshot = 0, time.Now()
	}()
}

// compactNow writes a snapshot at once and waits for it (tests).
func (e *engine) compactNow() error {
	e.mu.Lock()
	if e.closed || e.log == nil {
		e.mu.Unlock()
		return errors.New("memstore: no log to compact")
	}
	for e.compacting {
		e.mu.Unlock()
		e.bg.Wait()
		e.mu.Lock()
	}
	w, err := e.log.BeginSnapshot()
	if err != nil {
		e.mu.Unlock()
		return err
	}
	e.snapshotLocked(w)
	e.compacting = true
	e.mu.Unlock()
	err = w.Commit()
	e.mu.Lock()
	e.compacting = false
	if err == nil {
		e.lastSnapshot = time.Now()
	}
	e.mu.Unlock()
	return err
}
