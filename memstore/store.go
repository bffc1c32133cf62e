package memstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
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
// memory and, when made by Open, in a log on disk. It is safe for
// concurrent use.
type Store struct {
	clock        func() time.Time
	maxJobs      int
	compactBytes int64
	logger       *slog.Logger
	log          *wal.Log       // nil for a Store made by New
	bg           sync.WaitGroup // the snapshot being written
	timer        *time.Timer    // fires at the earliest deadline of all tubes

	// mu guards everything below. Records are appended to the log while it
	// is held, so the log's order is the order of the changes.
	mu      sync.Mutex
	closed  bool
	jobs    map[queue.ID]*job
	tubes   map[string]*tube
	sched   tubeHeap // tubes with a deadline, earliest first
	lastID  queue.ID // the last ID issued; IDs are never reused
	tubeSeq uint64
	burySeq int64

	ready, delayed, reserved, buried, urgent int64
	totalJobs, timeouts                      int64 // since Open or New
	live                                     int64 // bytes a snapshot of the jobs would take

	listeners map[string][]*listener
	wakes     []string // tubes to wake when the current operation ends

	// holds counts the references of each session to each tube (Hold);
	// each tube's refs is their sum. Not logged: a store opened again
	// holds none.
	holds map[holdKey]int64

	timerAt int64         // deadline (Unix ns) the timer is set for; never when stopped
	backoff time.Duration // grows while the timer finds nothing due (a clock that does not move)

	compacting   bool
	compactFloor int64  // after a failed snapshot, the log size to reach before trying again
	scratch      []byte // for encoding records

	replayTubes map[uint64]*tube // by sequence number, while a snapshot is read

	locksOnce  sync.Once
	locks      atomic.Pointer[Locks] // made by the first call of Locks
	limitsOnce sync.Once
	limits     *Limits // the rate limit store, made on first use (ratelimit.go)
	hx         hxState // expiring hash fields (ttlhash.go)
	sc         scState // schedules (schedule.go)
}

type listener struct {
	tube string
	wake func(tube string)
}

func newStore(opts *Options) *Store {
	s := &Store{
		clock:        opts.clock(),
		maxJobs:      opts.maxJobs(),
		compactBytes: opts.compactBytes(),
		logger:       opts.logger(),
		jobs:         map[queue.ID]*job{},
		tubes:        map[string]*tube{},
		listeners:    map[string][]*listener{},
		holds:        map[holdKey]int64{},
		timerAt:      never,
	}
	s.hx.init(opts.maxEvents())
	s.timer = time.AfterFunc(time.Hour, s.fire)
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
	s.replayTubes = map[uint64]*tube{}
	l, err := wal.Open(dir, &wal.Options{Sync: opts.fsync().sync(), Logger: s.logger}, s.replay)
	if err != nil {
		return nil, fmt.Errorf("memstore: open %s: %w", dir, err)
	}
	s.replayTubes = nil
	s.log = l
	if rec := l.Recovery(); rec.CutBytes > 0 {
		s.logger.Warn("memstore: cut a torn tail off the log", "file", rec.CutFile, "offset", rec.CutOffset, "bytes", rec.CutBytes)
	}
	s.mu.Lock()
	now := s.now()
	s.advance(now)
	s.releaseAllLocked(now)
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
	s.closeLocks()
	s.timer.Stop()
	s.timerAt = never
	clear(s.listeners)
	clear(s.hx.lis)
	clear(s.sc.lis)
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

// begin starts an operation: it takes the lock and applies the due
// transitions. On success the caller must call end.
func (s *Store) begin(ctx context.Context) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return 0, queue.ErrClosed
	}
	if s.log != nil {
		if err := s.log.Err(); err != nil {
			s.mu.Unlock()
			return 0, fmt.Errorf("memstore: the log has failed; close and reopen the store: %w", err)
		}
	}
	now := s.now()
	s.advance(now)
	return now, nil
}

// end finishes an operation: it re-arms the timer, starts a snapshot when
// the log has grown enough, releases the lock, wakes the listeners and
// waits until the operation's records (up to ticket t) are durable.
func (s *Store) end(now int64, t wal.Ticket) error {
	s.armLocked(now)
	if t != 0 {
		s.maybeCompactLocked()
	}
	calls := s.takeWakesLocked()
	s.mu.Unlock()
	for _, c := range calls {
		c.wake(c.tube)
	}
	if t != 0 {
		if err := s.log.Wait(t); err != nil {
			return fmt.Errorf("memstore: %w", err)
		}
	}
	return nil
}

// append adds a record to the log, if there is one, and returns its ticket.
func (s *Store) append(kind byte, head, tail []byte) wal.Ticket {
	if s.log == nil {
		return 0
	}
	return s.log.Append(kind, head, tail)
}

// advance applies every transition due at now: delayed jobs become ready,
// reservations whose TTR ran out end (counting a timeout), pauses end. It
// returns how many transitions it made.
func (s *Store) advance(now int64) int {
	n := 0
	for {
		t := s.sched.top()
		if t == nil || t.next > now {
			return n
		}
		n += s.advanceTube(t, now)
	}
}

func (s *Store) advanceTube(t *tube, now int64) int {
	n := 0
	for j := t.delayed.top(); j != nil && j.at <= now; j = t.delayed.top() {
		s.unlink(j)
		j.at = 0
		s.link(j, queue.Ready)
		n++
	}
	for j := t.reserved.top(); j != nil && j.at <= now; j = t.reserved.top() {
		s.unlink(j)
		j.timeouts++
		j.history().timedOut = j.at // when the TTR ran out, not when it was seen
		s.timeouts++
		t.timeouts++
		j.at = 0
		s.link(j, queue.Ready)
		n++
	}
	if t.paused && t.pauseUntil <= now {
		t.paused, t.pauseLen, t.pauseUntil = false, 0, 0
		n++
	}
	s.resched(t)
	if n > 0 {
		s.wakeLocked(t.name)
	}
	s.gcTube(t)
	return n
}

// nextDue is the earliest deadline of all tubes and hash fields, or never.
func (s *Store) nextDue() int64 {
	n := s.hx.next()
	if t := s.sched.top(); t != nil {
		n = min(n, t.next)
	}
	return n
}

// armLocked sets the timer for the earliest deadline of all tubes and hash
// fields.
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
		s.backoff = 0
		s.timer.Reset(time.Duration(next - now))
	}
}

// fire runs on the timer: it applies what is due and wakes the listeners
// of the tubes concerned.
func (s *Store) fire() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	now := s.now()
	moved := s.advance(now)
	expired, ticket := s.hxAdvance(now, 0)
	moved += expired
	if next := s.nextDue(); next == never {
		s.timerAt = never
	} else {
		d := time.Duration(next - now)
		if moved == 0 && next == s.timerAt {
			// Nothing was due although the deadline we waited for has
			// passed in real time: the clock is not the real one (a test's
			// manual clock). Back off rather than spin.
			s.backoff = min(max(2*s.backoff, time.Millisecond), time.Minute)
			d = max(d, s.backoff)
		} else {
			s.backoff = 0
		}
		s.timerAt = next
		s.timer.Reset(d)
	}
	calls := s.takeWakesLocked()
	hxCalls := s.hxTakeWakesLocked()
	s.mu.Unlock()
	for _, c := range calls {
		c.wake(c.tube)
	}
	if ticket != 0 {
		_ = s.log.Wait(ticket) // a failure shows in the next operation's log check
	}
	for _, c := range hxCalls {
		c()
	}
}

// Listen implements queue.Notifier: wake(tube) is called after a put, a
// release, a kick, an unreserve or a pause change in tube, and when a job of
// tube becomes ready because a delay or a TTR ran out (the Store's timer
// finds it, or any operation does). wake is called without the Store's lock
// held and must not block for long.
func (s *Store) Listen(ctx context.Context, tube string, wake func(tube string)) (func(), error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	l := &listener{tube: tube, wake: wake}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, queue.ErrClosed
	}
	s.listeners[tube] = append(s.listeners[tube], l)
	var once sync.Once
	stop := func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			ls := s.listeners[tube]
			if i := slices.Index(ls, l); i >= 0 {
				ls = slices.Delete(ls, i, i+1)
			}
			if len(ls) == 0 {
				delete(s.listeners, tube)
			} else {
				s.listeners[tube] = ls
			}
		})
	}
	return stop, nil
}

// wakeLocked notes that the listeners of tube are to be woken when the
// current operation ends.
func (s *Store) wakeLocked(tube string) {
	if len(s.listeners[tube]) == 0 || slices.Contains(s.wakes, tube) {
		return
	}
	s.wakes = append(s.wakes, tube)
}

func (s *Store) takeWakesLocked() []*listener {
	if len(s.wakes) == 0 {
		return nil
	}
	var calls []*listener
	for _, t := range s.wakes {
		calls = append(calls, s.listeners[t]...)
	}
	s.wakes = s.wakes[:0]
	return calls
}

// tubeFor returns the tube named name, creating it.
func (s *Store) tubeFor(name string) *tube {
	t := s.tubes[name]
	if t == nil {
		s.tubeSeq++
		t = newTube(name, s.tubeSeq)
		s.tubes[name] = t
	}
	return t
}

// gcTube forgets t when it holds no job, no reference and no pause.
func (s *Store) gcTube(t *tube) {
	if t.paused || t.jobs() > 0 || t.refs > 0 || s.tubes[t.name] != t {
		return
	}
	s.sched.set(t, never)
	delete(s.tubes, t.name)
}

// freeLocked is called when the last job or the last reference of t has
// gone: a tube that holds neither is gone, its pause with it, as
// beanstalkd frees a tube. Ending the pause is logged, so that a replay,
// which knows no references, frees the tube at the same point; the ticket
// is that record's (0 when there is none).
func (s *Store) freeLocked(t *tube) wal.Ticket {
	if t.jobs() > 0 || t.refs > 0 || !t.paused || s.tubes[t.name] != t {
		s.gcTube(t)
		return 0
	}
	s.setPause(t, 0, 0)
	return s.append(kindPause, s.encodePause(t), nil)
}

// resched updates t's place in the schedule after its deadline may have
// changed.
func (s *Store) resched(t *tube) { s.sched.set(t, t.deadline()) }

// unlink takes j out of its state heap and the counts.
func (s *Store) unlink(j *job) {
	t := j.tube
	t.heap(j.state).remove(j)
	switch j.state {
	case queue.Ready:
		s.ready--
		if j.pri < queue.UrgentPriority {
			t.urgent--
			s.urgent--
		}
	case queue.Delayed:
		s.delayed--
		s.resched(t)
	case queue.Reserved:
		s.reserved--
		j.owner = ""
		s.resched(t)
	case queue.Buried:
		s.buried--
	}
	j.state = 0
}

// link puts j, with its fields set for st, into the heap of st.
func (s *Store) link(j *job, st queue.State) {
	t := j.tube
	j.state = st
	t.heap(st).push(j)
	switch st {
	case queue.Ready:
		s.ready++
		if j.pri < queue.UrgentPriority {
			t.urgent++
			s.urgent++
		}
	case queue.Delayed:
		s.delayed++
		s.resched(t)
	case queue.Reserved:
		s.reserved++
		s.resched(t)
	case queue.Buried:
		s.buried++
	}
}

// jobSize estimates the bytes of j's record in a snapshot.
func jobSize(j *job) int64 { return int64(64 + len(j.key()) + len(j.body)) }

// addJob stores a new job in state st.
func (s *Store) addJob(j *job, st queue.State) {
	s.jobs[j.id] = j
	if k := j.key(); k != "" {
		if j.tube.keys == nil {
			j.tube.keys = map[string]*job{}
		}
		j.tube.keys[k] = j
	}
	s.live += jobSize(j)
	s.link(j, st)
}

// removeJob deletes j, counting a delete in its tube.
func (s *Store) removeJob(j *job) {
	t := j.tube
	s.unlink(j)
	delete(s.jobs, j.id)
	if k := j.key(); k != "" {
		delete(t.keys, k)
	}
	s.live -= jobSize(j)
	t.deletes++
	s.gcTube(t)
}

// maybeCompactLocked starts a snapshot when the log has grown past
// max(CompactBytes, twice the live data).
func (s *Store) maybeCompactLocked() {
	if s.log == nil || s.compacting || s.closed {
		return
	}
	size := s.log.Size()
	if size < max(s.compactBytes, 2*(s.live+s.hx.bytes), s.compactFloor) {
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
		s.compactFloor = 0
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
	s.mu.Unlock()
	return err
}
