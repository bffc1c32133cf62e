// Package memstore implements the embedded engine: the stores of every
// hourglass primitive (queue.Store, and through Store.Limits, Hashes, Locks
// and Schedules the others') in process, with their state in memory and,
// for a Store made by Open, durable in one log on local disk. It is the default back end of
// hourglass: nothing but a data directory is needed.
//
// # Model
//
// A Store keeps, per tube, four heaps: ready jobs by (priority, ID),
// delayed jobs by (due time, ID), reserved jobs by (end of TTR, ID) and
// buried jobs by the order they were buried (FIFO, removable from the
// middle in O(log n)). Job IDs come from one counter per store, start at 1,
// are never reused (not even across restarts) and stay below 2^53. A tube
// exists while it holds a job or a reference (Hold), or, paused while
// nothing held it, until its pause ends (queue.Store.Tubes); Tubes lists
// them in the order they were created. UniqueKey is per tube and held while its job
// exists. With Options.MaxJobs set, a Put that would pass the cap returns
// queue.ErrFull and stores nothing.
//
// # Core and parts
//
// A Store is a core and its parts. The core, the engine, owns the mutex,
// the clock, the one timer, the log, snapshots and the wake-ups of
// listeners, and knows no primitive; each primitive is a part that owns
// its state, its record kinds and its deadlines: the job queue, expiring
// hash fields, their expiry events, locks, schedules and the tubes'
// counters. (The rate limits, Limits, are outside the parts: no deadline,
// no record, a mutex of their own, the core's clock alone.) The core asks
// every part the same things (part.go): its next deadline, to apply what
// is due, to write its snapshot records, to replay one of its records, and
// to close. One table (register in part.go) lists the parts and allots
// each its range of record kinds; replay hands each record to the part
// that owns its kind. A new primitive is a new file with a part, and one
// line in that table.
//
// The queue's store is the Store itself, as on Redis: Store's
// queue.Store, queue.Notifier, queue.LimitStore and queue.CounterLog
// methods are one-line forwards to the job queue's part (queuestore.go),
// and Hashes, Locks, Limits and Schedules return the other primitives'.
//
// # Time
//
// Every deadline comes from Options.Clock (default time.Now) and is kept in
// nanoseconds. Due transitions of jobs (a delay ending, a TTR running out,
// a pause ending) are applied lazily at the start of every operation,
// through a heap of tubes ordered by their next deadline, so no operation
// ever sees a job in a state its deadlines say it has left. One timer,
// reset to the earliest deadline of all parts (jobs, hash fields, lock
// leases), applies them in the background too, so that the listeners of
// package queue's blocking reserves (see Listen) learn of a job the moment
// it becomes ready, fields expire and ended leases wake their waiters.
// There is no timer or goroutine per job, field or lock. The timer waits
// on the clock through Options.AfterFunc (default: a timer like
// time.AfterFunc's that fires within tens of microseconds, a timerfd on
// Linux, where the runtime's timers can be a millisecond late); a test's
// manual clock supplies its own, which fires when the test moves the
// clock. With a Clock and no AfterFunc nothing waits on the clock, and the
// next operation applies what it says is due.
//
// # Durability
//
// Open keeps a log in its directory: every change is a checksummed record
// (CRC-32C), appended in the order the changes happen and written by group
// commit, so concurrent callers share one write and one fsync. What is
// logged: puts (the whole job), deletes, releases (with the new priority,
// delay and absolute due time), buries, kicks, reserves by ID of delayed or
// buried jobs (as "ready"), and pauses; each change of a job logs its
// history too (queue.JobStats.PutAt to LastErrorAt). Reserves from the
// ready state, touches, unreserves and TTR expiries are not logged, as in
// beanstalkd: a job's reserves and timeouts, and the times of its last
// reserve and timeout, survive a restart as its last logged change left
// them. Logs and snapshots written before jobs had a history are read as
// jobs without one.
// When the log passes max(Options.CompactBytes, twice the live data), the
// Store writes a snapshot of its state beside it and deletes the log
// behind it, so the directory stays proportional to the live data however
// long the Store runs (a job released with a delay again and again does not
// make it grow). The state is encoded under the Store's lock (bodies are
// not copied) and written by a goroutine the Store owns.
//
// The Options.Fsync policies, and what a crash can lose:
//
//   - FsyncAlways (the default): every method that changes something
//     returns after its records are fsynced. A crash, of the process or of
//     the machine, loses nothing acknowledged. Group commit keeps this
//     affordable under concurrency; see docs/embedded-engine.md for figures.
//   - FsyncEverySec: methods return once their records are written to the
//     operating system, and a goroutine of the Store fsyncs once a second.
//     A crash of the process loses nothing; a crash of the machine (power,
//     kernel) can lose the acknowledged changes of the last second or so.
//   - FsyncNo: as FsyncEverySec, but the operating system alone decides
//     when to write back (Linux: within about 30 s), which is what a crash
//     of the machine can lose.
//
// The default is FsyncAlways because hourglass promises that an
// acknowledged job is never lost, and because group commit makes the cost
// of an fsync per write shared by all writers that arrive during it.
//
// A full disk refuses writes before anything changes: every method that
// would change the state first asks the log for room for its records,
// which the log reserves on disk ahead of them, and fails with an error
// wrapping ErrNoSpace (the queue's methods: queue.ErrFull too) when the
// disk has none; reads are served, and writes resume by themselves as soon
// as the disk has room. A failed write or fsync of the log stops it for
// good: every later write fails with an error wrapping ErrLogFailed, reads
// are served from memory, and only Close and Open again (which recovers
// what is on disk) make the Store writable. See docs/embedded-engine.md,
// "Faults".
//
// A change is visible to other callers as soon as it is made in memory,
// which is before its records are on disk: a reserver may get a job whose
// Put has not returned yet. So a crash can undo a change that another
// caller saw, but never one that was acknowledged to the caller that made
// it.
//
// # What survives a restart
//
// After Open, the state is what the log says: every job with its body,
// priority, TTR, unique key and tube; delayed jobs keep their absolute due
// time (one that passed while the Store was down is ready at once); buried
// jobs keep their order; pauses keep their absolute end. Reserved jobs come
// back ready, as in beanstalkd, since reserves are not logged. Per-job
// counters come back as of the last record written for the job (its put,
// release, bury, kick or reserve by ID, or a snapshot): reserves and
// timeouts since then are not counted. Per-tube counters (total jobs,
// deletes, pauses) come back as they were; Stats.TotalJobs and
// Stats.Timeouts count from Open. The ID counter never goes back.
// References (Hold) do not survive: the log records when a tube's
// references begin and end, so that a tube that a reference kept through a
// time without jobs comes back with its counters, and Open then ends every
// reference (no holder outlives the process), so a tube that only
// references kept is gone, its pause with it.
//
// A torn tail left by a crash (a partial record, a bad checksum at the end
// of the log) is cut at Open, never replayed. Damage elsewhere (a bad
// checksum with intact records after it, a damaged snapshot) fails Open with
// ErrCorrupt, naming the file and the offset. If a write or an fsync of the
// log fails, the Store stops accepting operations (they return the error)
// until it is closed and opened again, since it no longer knows what is on
// disk.
//
// The log layer lives in internal/wal and knows nothing of jobs: a record is
// a kind byte and a payload. The queue owns kinds 1–31 (queuelog.go),
// expiring hash fields 32–33, their expiry events 34–63 and schedules
// 128–159 (the table in part.go), each part with its own snapshot records
// in the same log.
//
// # Schedules
//
// Store.Schedules returns the engine's schedule.Store. A fire puts the
// tick's job and advances the schedule under one hold of the Store's lock,
// and logs the job's put record and the schedule's new state one after the
// other; after a crash between the two, the schedule fires the tick again
// and the job's unique key (schedule.JobKey) finds the job already put.
// Schedules survive a restart with their next tick, and the first
// schedule.Client to run afterwards applies each one's misfire policy.
//
// # Rate limits
//
// Store.Limits returns the engine's ratelimit.Store. Its state lives in
// memory only and is not written to the log: after a restart every key
// starts idle, with its full burst. It has its own mutex, taken without the
// Store's, and drops the state of idle keys incrementally.
//
// # Locks
//
// Store.Locks returns the engine's lock.Store. Holders and fair queues live
// in memory under the Store's mutex; the earliest lease or place in a
// queue is a deadline of the Store's one timer, which drops what has ended
// and wakes the waiters. Locks are not logged: after a restart no lock is
// held, and fences still increase (none is below the clock in
// microseconds).
//
// # Expiring hash fields
//
// Store.Hashes returns the ttlhash.Store of the engine, a view of two
// parts: the hashes and their fields (record kinds 32–33), and the expiry
// events with their consumer groups (34–39). Both share the Store's mutex,
// its one timer (which expires due fields) and its log. Events a group has
// not acknowledged are handed out again after a restart; event listeners
// are woken once the events are on disk. Options.MaxEvents caps the events
// kept.
//
// # Concurrency
//
// A Store is safe for concurrent use. One mutex guards the whole state
// (but the rate limits', which have their own); every operation holds it
// for its in-memory work only. Lock order: the
// Store's mutex, then the log's. No I/O happens under the Store's mutex:
// records are appended to an in-memory buffer under it (which fixes their
// order), and the write and fsync happen after it is released. Listener
// callbacks are called with no lock held. Open takes an exclusive flock(2)
// on dir/LOCK, so a second Open of the same directory, in this process or
// another, fails with ErrLocked until Close.
//
// Close stops the timer and the background goroutines (the snapshot writer
// and, under FsyncEverySec, the fsync loop), writes and fsyncs what is
// pending and releases the directory.
package memstore
