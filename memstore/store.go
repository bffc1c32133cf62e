package memstore

import (
	"github.com/hourglass-io/hourglass/internal/wal"
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

// Errors of a Store made by Open, wrapped by a method that would change
// the state. Nothing has changed when a method returns one; reads are
// served all the same.
var (
	// ErrNoSpace: the disk has no room for the log's records. The
	// queue's methods wrap queue.ErrFull with it. The Store goes on:
	// every write asks the disk again, and writes resume once it has
	// room, without a restart.
	ErrNoSpace = wal.ErrNoSpace
	// ErrLogFailed: a write or an fsync of the log failed. The log cannot
	// know what of it reached the disk, so it acknowledges nothing more;
	// close the Store and open it again, which recovers what is on disk.
	ErrLogFailed = wal.ErrFailed
)

// Store is the embedded engine: a queue.Store and queue.Notifier kept in
// memory and, when made by Open, in a log on disk; Hashes, Locks, Limits
// and Schedules return the stores of the other primitives, kept beside the
// jobs. It is safe for concurrent use.
//
// The Store is a core, the engine (engine.go), and its parts (part.go):
// the engine owns the mutex, the clock, the one timer, the log, snapshots
// and wake-ups, and knows no primitive; each part (the job queue, hash
// fields, their events, locks, schedules, the tubes' counters) owns its
// state, its records and its deadlines. The Store's queue.Store methods
// forward to the job queue's part, one line each (queuestore.go). The rate
// limits (Limits) are outside the parts: they keep their own mutex and use
// only the clock.
type Store struct {
	engine

	// The parts (register lists them), each a field, their state guarded
	// by the engine's mutex.
	queue     jobQueue
	fields    hashFields
	events    hashEvents
	locks     Locks
	schedules Schedules
	counters  counterLog // the tubes' counters by minute (counters.go)

	hashes     Hashes     // no part: the view of fields and events (ttlhash.Store)
	rateLimits RateLimits // no part: a mutex of its own (ratelimit.go)
}

func newStore(opts *Options) *Store {
	s := &Store{}
	e := &s.engine
	e.init(opts)
	s.queue.init(e, opts.maxJobs())
	s.fields.init(e, s.events.expired) // the one seam between the two
	s.events.init(e, opts.maxEvents(), s.fields.drop)
	s.locks.init(e)
	s.schedules.init(e, &s.queue)
	s.counters.init(e)
	s.hashes.init(e, &s.fields, &s.events)
	s.rateLimits.init(e.clock)
	var more []registration
	if opts != nil && opts.moreParts != nil {
		more = opts.moreParts(s)
	}
	s.register(more)
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
	if err := s.engine.open(dir, opts.fsync().sync(), opts.fileLayer()); err != nil {
		return nil, err
	}
	return s, nil
}

// Close stops the Store's timer and background work, writes and fsyncs the
// log and releases the data directory. Methods called after Close return
// the closed error of their primitive's package (queue.ErrClosed,
// lock.ErrClosed, …); Close may be called more than once.
func (s *Store) Close() error {
	s.rateLimits.closed.Store(true) // the rate limits are outside the engine's parts
	return s.engine.close()
}
