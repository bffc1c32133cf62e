package queue

import (
	"context"
	"time"
)

// Store keeps the jobs of a Queue. Each method is one atomic operation on the
// store: it happens entirely or not at all, and what it reads it reads from
// one moment of the store's clock. Queue validates every argument before it
// calls a Store, so a Store may assume valid tube names, priorities and
// durations (durations are whole milliseconds or more, never negative; TTRs
// are at least one second), bodies within the size limit, and a non-empty
// owner.
//
// Time belongs to the store: a Store computes every deadline from its own
// clock (Redis: the server's TIME; the embedded engine: the process clock),
// never from a time the caller passes, so processes with skewed clocks agree.
//
// Every method that moves a job applies due transitions first: delayed jobs
// whose time has come are ready, reserved jobs whose TTR has run out are ready
// again (counting a timeout), tubes whose pause has ended are not paused. A
// store may do this lazily, but no method may observe a job in a state its
// deadlines say it has left.
//
// Owners: a reservation belongs to the owner string passed to Reserve or
// ReserveJob. Release, Bury and Touch succeed only for that owner; Delete
// succeeds on a ready, delayed or buried job, or on a job reserved by the
// caller.
//
// Errors: the sentinels of this package for outcomes (ErrNotFound,
// ErrNotReserved, ErrReserved, ErrNotKickable, ErrFull), wrapped or not;
// anything else is a failure of the store (network, disk) and must never be
// reported as one of those sentinels.
type Store interface {
	// Put stores jobs in tube, in order, and returns one result per job.
	// IDs increase within a tube (within a partition of a partitioned tube).
	// A job with a UniqueKey whose key is held by a live job of the tube is
	// not stored; its result carries the existing ID and Duplicate. A job
	// with Debounce whose key is held by a delayed job changes that job
	// (NewJob.Debounce; its result carries Debounced too), and one whose
	// key is held by a ready, reserved or buried job is stored and takes
	// the key over (that job's UniqueKey is then empty) unless it asks
	// DuplicateLive or that job's UniqueFor window holds.
	// A store that is full (a configured job cap) stores none of the jobs and
	// returns ErrFull.
	// Put keeps no hold of jobs, nor of their Body slices, once it
	// returns: a store copies what it keeps, and the caller may write over
	// them (the beanstalkd server hands over its connection's read buffer,
	// and a Queue the caller's own slice of jobs when it needed no change).
	Put(ctx context.Context, tube string, jobs []NewJob) ([]PutResult, error)

	// Reserve reserves up to req.Max ready jobs from the tubes in req.Tubes
	// for req.Owner, skipping paused tubes, lowest (priority, ID) first, and
	// returns them. Before it reserves, it deletes the jobs in req.Delete as
	// Delete would (a worker's "done with this one, give me the next" in one
	// call); their outcomes are in the result.
	//
	// When no job is ready it returns no jobs and, in Next, how long until
	// one of the tubes may have one without further puts (a delay ending, a
	// TTR running out, a pause ending) with NextTube naming that tube, or
	// Next < 0 when nothing is scheduled; Next is counted from an instant
	// of the call on the store's clock, and Queue counts it from the
	// call's start. Reserve never blocks; Queue does the waiting.
	Reserve(ctx context.Context, req ReserveRequest) (ReserveResult, error)

	// ReserveJob reserves the job with the given ID for owner, whatever its
	// tube and whether or not the tube is paused, if it is ready, delayed or
	// buried. It returns ErrNotFound when there is no such job and
	// ErrReserved when it is reserved (by anyone).
	ReserveJob(ctx context.Context, owner string, id ID) (Job, error)

	// Delete deletes the jobs with the given IDs and returns one outcome per
	// ID: nil, ErrNotFound, or ErrReserved (reserved by another owner).
	Delete(ctx context.Context, owner string, ids []ID) ([]error, error)

	// Release returns a job reserved by owner to the ready state with
	// priority pri, or to the delayed state when delay > 0, and counts a
	// release. A pri of KeepPriority leaves the job's priority as it is. A reason that is not empty becomes the job's last error
	// (JobStats.LastError, LastErrorAt) and is appended to its error
	// history (JobStats.Errors, with the job's reserves as the attempt, as
	// AppendError trims it); an empty one leaves both as they were. ErrNotFound when there is no such job, ErrNotReserved when
	// it is not reserved by owner.
	Release(ctx context.Context, owner string, id ID, pri int64, delay time.Duration, reason string) error

	// Bury moves a job reserved by owner to the end of its tube's buried
	// list with priority pri (KeepPriority: the one it has) and counts a
	// bury. The reason and the errors are as for Release.
	Bury(ctx context.Context, owner string, id ID, pri int64, reason string) error

	// Touch gives a job reserved by owner a fresh TTR counted from now and
	// returns the time left on the reservation, on the store's clock (the
	// job's TTR). Errors as for Release.
	Touch(ctx context.Context, owner string, id ID) (time.Duration, error)

	// Reservations lists the jobs owner has reserved, with the time left on
	// each reservation on the store's clock at the call, in no particular
	// order. A reservation whose TTR has run out is not listed, whether or
	// not the job has moved since. An owner of a session (SessionOf) is
	// used by the one process that keeps the session alive, and a store
	// may look only where that process reserved for it (Redis does).
	Reservations(ctx context.Context, owner string) ([]Reservation, error)

	// Unreserve returns to ready, without counting a release or a timeout,
	// those of ids that owner has reserved (an owner that went away), and
	// reports how many it returned.
	Unreserve(ctx context.Context, owner string, ids []ID) (int, error)

	// Kick moves up to n jobs of tube to ready: buried jobs, oldest first,
	// when the tube has any, else delayed jobs, soonest first. It counts a
	// kick on each and returns how many it moved.
	Kick(ctx context.Context, tube string, n int) (int, error)

	// KickJob moves one buried or delayed job to ready and counts a kick.
	// ErrNotFound when there is no such job, ErrNotKickable when it is
	// ready or reserved.
	KickJob(ctx context.Context, id ID) error

	// PeekStateN returns up to n of the next jobs of tube in state s: Ready
	// by lowest priority, then ID; Delayed by soonest due, then ID; Buried
	// oldest buried first; Reserved by the soonest end of TTR, then ID (n
	// from 1 to MaxPeekN). A tube with none gives an empty slice, not
	// ErrNotFound.
	PeekStateN(ctx context.Context, tube string, s State, n int) ([]Job, error)

	// StatsJob describes the job with the given ID in whatever state, body
	// included (JobStats.Job is the job a peek returns), or returns
	// ErrNotFound.
	StatsJob(ctx context.Context, id ID) (JobStats, error)

	// StatsTube describes tube, or returns ErrNotFound when the store does
	// not know it (see Tubes).
	StatsTube(ctx context.Context, tube string) (TubeStats, error)

	// Stats describes the whole store. On a store spread over several nodes
	// it is a sum of per-node views and not one atomic snapshot.
	Stats(ctx context.Context) (Stats, error)

	// PauseTube stops reserves from taking jobs of tube for d, counting a
	// pause; d == 0 ends a pause (and a tube that nothing else holds is
	// then gone). A tube that nothing holds is created, paused.
	PauseTube(ctx context.Context, tube string, d time.Duration) error

	// Tubes lists the tubes the store knows, in the order they were
	// created by the store's clock. Tubes created at the same instant may
	// come in any order, and a store spread over several nodes orders by
	// each node's clock.
	//
	// A tube lives, with its counters (TotalJobs, Deletes, Pauses) and its
	// pause, while it holds a job or a reference (Hold). When its last job
	// or its last reference goes and neither remains, it is gone, its pause
	// with it, as beanstalkd frees a tube; if used again it starts from
	// zero. A tube that PauseTube paused while nothing held it lives until
	// its pause ends, or until it gains and loses a job or a reference.
	Tubes(ctx context.Context) ([]string, error)

	// Hold adds n references of owner's to tube, or takes back -n of them
	// when n < 0 (never more than owner's session holds: taking back what
	// is not held is not an error). References keep a tube alive (see
	// Tubes) without a job; a beanstalkd connection holds the tubes it uses
	// and watches. They are not durable: a store opened again holds none.
	// References belong to the owner's session (SessionOf), or, for an
	// owner without one, to every such owner together; on a store that
	// implements Sessions, EndSession and Reap take back a session's
	// references. n is not 0.
	Hold(ctx context.Context, owner, tube string, n int) error

	// Close releases what the store holds. Methods called after Close
	// return ErrClosed. Close may be called more than once.
	Close() error
}

// ReserveRequest is the argument of Store.Reserve.
type ReserveRequest struct {
	Owner  string
	Tubes  []string // distinct, at least one
	Max    int      // at least one
	Delete []ID     // jobs to delete before reserving; may be empty
}

// ReserveResult is the result of Store.Reserve.
type ReserveResult struct {
	Jobs     []Job
	Deleted  []error // one per ReserveRequest.Delete: nil, ErrNotFound or ErrReserved
	Next     time.Duration
	NextTube string
	// Drained, with jobs, says that no ready job the reserve could take is
	// left in the tubes (there is none, or their limits (LimitStore) hold
	// back every one), so other waiters need not be woken; Next and
	// NextTube then say when one may be (a rate frees one, or a job falls
	// due), or Next < 0 when nothing is scheduled or only a cap holds them
	// (a put, or a reservation's end, wakes the tube). A store may always
	// leave it false.
	Drained bool
	// SelfWaking says that the store itself wakes NextTube's listeners
	// (Notifier) once Next has passed, as the embedded engine does when a
	// job falls due, a reservation's TTR runs out or a pause ends: a Queue
	// then sets no timer of its own for Next, which would only wake one
	// more waiter to find the job already taken.
	SelfWaking bool
}

// Reservation is a job an owner has reserved (Store.Reservations).
type Reservation struct {
	ID ID
	// Left is the time left on the reservation, measured on the store's
	// clock at the call: a caller's deadline is its own clock at the call
	// plus Left, whatever the difference between the two clocks.
	Left time.Duration
}

// Notifier is implemented by stores that can wake reservers waiting on a
// tube: its topics are tubes, in the one notifier shape every primitive
// uses. Without it, a Queue rechecks waiting tubes every
// Options.PollInterval.
type Notifier interface {
	// Listen arranges for wake(tube) to be called, from any goroutine, soon
	// after a job of tube may have become ready: a put, a release, a kick, an
	// unreserve, a pause ending early. After a put of a delayed job it calls
	// wake either at once, so that waiters learn the new due time, or when
	// the job falls due, so that they need not ask to learn it. Listen returns
	// once the subscription is in effect: a change made after Listen returns
	// is never missed. stop ends the subscription.
	//
	// Wake-ups are hints: a woken reserver may find nothing, and a store
	// that may have lost wake-ups (a reconnect) calls wake for every tube
	// it listens to.
	Listen(ctx context.Context, tube string, wake func(tube string)) (stop func(), err error)
}

// Sessions is implemented by stores that several processes share (Redis). An
// owner named "<session>/<name>" belongs to session <session>: a process (a
// beanstalkd server) keeps its session alive while it runs, and when it dies
// its reservations return to ready once the session's lease lapses — in
// seconds, rather than after each job's TTR, which may be hours.
type Sessions interface {
	// KeepAlive starts or renews session for lease, on the store's clock.
	KeepAlive(ctx context.Context, session string, lease time.Duration) error
	// EndSession forgets session at once: its owners have returned their
	// jobs (a clean shutdown). It takes back the session's references
	// (Store.Hold).
	EndSession(ctx context.Context, session string) error
	// Reap returns to ready, without counting a release or a timeout, every
	// job reserved by an owner of a session whose lease has lapsed, takes
	// back the session's references (Store.Hold), forgets those sessions,
	// and reports how many jobs it returned. Any number of processes may
	// call it at once.
	Reap(ctx context.Context) (int, error)
}

// SessionOf returns the session an owner belongs to ("" for none): the part
// of its name before the first '/'.
func SessionOf(owner string) string {
	for i := 0; i < len(owner); i++ {
		if owner[i] == '/' {
			return owner[:i]
		}
	}
	return ""
}
