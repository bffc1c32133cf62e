package memstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/hourglass-io/hourglass/internal/wal"
	"github.com/hourglass-io/hourglass/queue"
)

var (
	_ queue.Store    = (*Store)(nil)
	_ queue.Notifier = (*Store)(nil)
)

// Errors of Open, besides those of the file system. Test them with
// errors.Is.
var (
	// ErrLocked: another Store, in this process or another, has the data
	// directory open.
	ErrLocked = wal.ErrLocked
	// ErrCorrupt: the data directory is damaged where a torn write after
	// a crash cannot explain it; the error names the file and the offset.
	ErrCorrupt = wal.ErrCorrupt
)

// Store is the embedded engine: a queue.Store and queue.Notifier kept in
// memory and, when made by Open, in a log on disk; Hashes, Locks, Limits
// and Schedules return the stores of the other primitives, kept beside the
// jobs. It is safe for concurrent use.
//
// The Store is a core and its parts (part.go): the core owns the mutex,
// the clock, the one timer, the log, snapshots and wake-ups; each part
// (the job queue, hash fields, their events, locks, schedules) owns its
// state, its records and its deadlines. The rate limits (Limits) are
// outside the parts: they keep their own mutex and use only the clock.
type Store struct {
	clock        func() time.Time
	compactBytes int64
	logger       *slog.Logger
	log          *wal.Log       // nil for a Store made by New
	bg           sync.WaitGroup // the snapshot being written
	timer        Timer          // fires at the earliest deadline of all parts

	// mu guards everything below (limits excepted: it is no part, and has
	// its own mutex).
	// Records are appended to the log while it is held, so the log's order
	// is the order of the changes.
	mu      sync.Mutex
	closed  bool
	parts   []part    // every part, in the order of register
	onBegin []part    // the parts whose due work every operation applies first
	byKind  [256]part // the part that owns each record kind
	timerAt int64     // deadline (Unix ns) the timer is set for; never when stopped
	wakes   []wakeup  // listeners to wake when the current operation ends

	compacting   bool
	compactFloor int64     // after a failed snapshot, the log size to reach before trying again
	dir          string    // Open's directory
	lastSnapshot time.Time // when the last snapshot was written (logstats.go)
	scratch      []byte    // for encoding records

	// The parts (register lists them). The job queue is embedded: the
	// Store is its queue.Store.
	jobQueue
	fields    hashFields
	events    hashEvents
	locks     Locks
	limits    Limits
	schedules Schedules
	counters  counterLog // the tubes' counters by minute (counters.go)
	hashes    Hashes     // the view of fields and events
}

func newStore(opts *Options) *Store {
	s := &Store{
		clock:        opts.clock(),
		compactBytes: opts.compactBytes(),
		logger:       opts.logger(),
		timerAt:      never,
	}
	s.jobQueue.init(s, opts.maxJobs())
	s.fields.init(s)
	s.events.init(s, opts.maxEvents())
	s.locks.init(s)
	s.limits.init(s)
	s.schedules.init(s)
	s.counters.init(s)
	s.hashes.s = s
	var more []registration
	if opts != nil && opts.moreParts != nil {
		more = opts.moreParts(s)
	}
	s.register(more)
	s.timer = opts.afterFunc()(time.Hour, s.fire)
	s.timer.Stop()
	return s
}

// New returns a Store that keeps everything in memory (the mem:// store):
// nothing survives Close. Options.Fsync and CompactBytes do not apply. New
// fails, wrapping queue.ErrInvalid, when opts are invalid (a negative
// MaxJobs).
func New(opts *Options) (*Store, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	return newStore(opts), nil
}

// Open returns a Store whose state is durable in the directory dir. It
// creates dir when needed, locks it (a second Open of the same directory,
// from this process or another, fails with ErrLocked until Close), and
// rebuilds the state from the log there: jobs reserved when the last
// process stopped are ready, delayed jobs keep their absolute due time.
// A torn tail left by a crash is cut; damage elsewhere fails with
// ErrCorrupt.
func Open(dir string, opts *Options) (*Store, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	s := newStore(opts)
	l, err := wal.Open(dir, &wal.Options{Sync: opts.fsync().sync(), Logger: s.logger}, s.replay)
	if err != nil {
		return nil, fmt.Errorf("memstore: open %s: %w", dir, err)
	}
	s.log, s.dir = l, dir
	s.lastSnapshot = snapshotTime(dir, l.Recovery().Snapshot)
	if rec := l.Recovery(); rec.CutBytes > 0 {
		s.logger.Warn("memstore: cut a torn tail off the log", "file", rec.CutFile, "offset", rec.CutOffset, "bytes", rec.CutBytes)
	}
	s.mu.Lock()
	now := s.now()
	for _, p := range s.onBegin {
		p.advance(now)
	}
	for _, p := range s.parts {
		p.recovered(now)
	}
	s.armLocked(now)
	s.mu.Unlock()
	return s, nil
}

// Close stops the Store's timer and background work, writes and fsyncs the
// log and releases the data directory. Methods called after Close return
// queue.ErrClosed, Close included.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil // Close may be called more than once
	}
	s.closed = true
	for _, p := range s.parts {
		p.close()
	}
	s.timer.Stop()
	if c, ok := s.timer.(interface{ Close() error }); ok {
		_ = c.Close() // the default timer holds a file descriptor
	}
	s.timerAt = never
	s.wakes = nil
	s.mu.Unlock()
	s.bg.Wait()
	if s.log != nil {
		if err := s.log.Close(); err != nil {
			return fmt.Errorf("memstore: %w", err)
		}
	}
	return nil
}

func (s *Store) now() int64 { return s.clock().UnixNano() }

// begin starts an operation: it takes the lock and applies the due work of
// the parts registered with onBegin. On success the caller must call end.
// A closed Store fails with closed, the error of the calling part's
// package for a closed store (queue.ErrClosed, lock.ErrClosed, …).
func (s *Store) begin(ctx context.Context, closed error) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return 0, closed
	}
	if s.log != nil {
		if err := s.log.Err(); err != nil {
			s.mu.Unlock()
			return 0, fmt.Errorf("memstore: the log has failed; close and reopen the store: %w", err)
		}
	}
	now := s.now()
	for _, p := range s.onBegin {
		p.advance(now)
	}
	return now, nil
}

// end finishes an operation: it re-arms the timer, starts a snapshot when
// the log has grown enough, releases the lock, wakes the listeners and
// waits until the operation's records (up to ticket t) are durable; the
// listeners that want durable changes are woken after that.
func (s *Store) end(now int64, t wal.Ticket) error {
	s.armLocked(now)
	if t != 0 {
		s.maybeCompactLocked()
	}
	calls := s.takeWakesLocked()
	s.mu.Unlock()
	wakeAll(calls.now)
	var err error
	if t != 0 {
		if err = s.log.Wait(t); err != nil {
			err = fmt.Errorf("memstore: %w", err)
		}
	}
	wakeAll(calls.durable)
	return err
}

// append adds a record to the log, if there is one, and returns its ticket.
func (s *Store) append(kind byte, head, tail []byte) wal.Ticket {
	if s.log == nil {
		return 0
	}
	return s.log.Append(kind, head, tail)
}

// nextDue is the earliest deadline of all parts, or never.
func (s *Store) nextDue() int64 {
	n := int64(never)
	for _, p := range s.parts {
		n = min(n, p.next())
	}
	return n
}

// armLocked sets the timer for the earliest deadline of all parts.
func (s *Store) armLocked(now int64) {
	next := s.nextDue()
	switch {
	case s.closed:
	case next == never:
		if s.timerAt != never {
			s.timer.Stop()
			s.timerAt = never
		}
	case next != s.timerAt:
		s.timerAt = next
		s.timer.Reset(time.Duration(next - now))
	}
}

// fire runs on the timer: every part applies what is due, and the
// listeners concerned are woken.
func (s *Store) fire() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	now := s.now()
	var t wal.Ticket
	for _, p := range s.parts {
		t = max(t, p.advance(now))
	}
	s.timerAt = never // the timer has fired: set it again
	s.armLocked(now)
	calls := s.takeWakesLocked()
	s.mu.Unlock()
	wakeAll(calls.now)
	if t != 0 {
		_ = s.log.Wait(t) // a failure shows in the next operation's log check
	}
	wakeAll(calls.durable)
}

// Listen implements queue.Notifier: wake(tube) is called after a put, a
// release, a kick, an unreserve or a pause change in tube, and when a job of
// tube becomes ready because a delay or a TTR ran out (the Store's timer
// finds it, or any operation does). wake is called without the Store's lock
// held and must not block for long.
func (s *Store) Listen(ctx context.Context, tube string, wake func(tube string)) (func(), error) {
	return s.listen(ctx, &s.tubeListeners, tube, wake, queue.ErrClosed)
}

// wakeLocked notes that the listeners of tube are to be woken when the
// current operation ends.
// A wake-up of a group's tube wakes its tube's waiters too, whose
// reserves serve the group (groups.go).
func (s *Store) wakeLocked(tube string) {
	s.wake(&s.tubeListeners, tube)
	if p, g := queue.SplitGroup(tube); g != "" {
		s.wake(&s.tubeListeners, p)
	}
}

// wakeAll calls the listeners ls.
func wakeAll(ls []*listener) {
	for _, l := range ls {
		l.wake(l.key)
	}
}

// liveBytes is about the bytes a snapshot takes.
func (s *Store) liveBytes() int64 {
	var n int64
	for _, p := range s.parts {
		n += p.size()
	}
	return n
}

// maybeCompactLocked starts a snapshot when the log has grown past
// max(CompactBytes, twice the live data).
func (s *Store) maybeCompactLocked() {
	if s.log == nil || s.compacting || s.closed {
		return
	}
	size := s.log.Size()
	if size < max(s.compactBytes, 2*s.liveBytes(), s.compactFloor) {
		return
	}
	w, err := s.log.BeginSnapshot()
	if err != nil {
		s.logger.Error("memstore: cannot start a snapshot", "err", err)
		s.compactFloor = 2 * size
		return
	}
	s.snapshotLocked(w)
	s.compacting = true
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		err := w.Commit()
		s.mu.Lock()
		defer s.mu.Unlock()
		s.compacting = false
		if err != nil {
			s.logger.Error("memstore: snapshot failed; the log keeps growing until one succeeds", "err", err)
			s.compactFloor = 2 * size
			return
		}
		s.compactFloor, s.lastSnapshot = 0, time.Now()
	}()
}

// compactNow writes a snapshot at once and waits for it (tests).
func (s *Store) compactNow() error {
	s.mu.Lock()
	if s.closed || s.log == nil {
		s.mu.Unlock()
		return errors.New("memstore: no log to compact")
	}
	for s.compacting {
		s.mu.Unlock()
		s.bg.Wait()
		s.mu.Lock()
	}
	w, err := s.log.BeginSnapshot()
	if err != nil {
		s.mu.Unlock()
		return err
	}
	s.snapshotLocked(w)
	s.compacting = true
	s.mu.Unlock()
	err = w.Commit()
	s.mu.Lock()
	s.compacting = false
	if err == nil {
		s.lastSnapshot = time.Now()
	}
	s.mu.Unlock()
	return err
}
