// Package queue implements a delayed-job queue with beanstalkd's job
// lifecycle over a pluggable Store.
//
// # Model
//
// Jobs live in named tubes. A job is put with a priority (0 is the most
// urgent), an optional delay and a time to run (TTR). It is delayed until its
// delay passes, then ready. Reserve hands a ready job to one reserver — the
// lowest priority number first, ties by ID — and the job is reserved by that
// owner until the owner deletes, releases (back to ready, or delayed) or
// buries it (set aside until kicked), or until its TTR runs out, when it goes
// back to ready and its timeout count rises. Touch restarts the TTR. Kick
// moves buried jobs (or, when a tube has none, delayed jobs) back to ready.
// A tube can be paused: reserves skip it until the pause ends. A tube
// lives, with its counters and its pause, while it holds a job or a
// reference (Hold: a beanstalkd connection holds the tubes it uses and
// watches); when the last of these goes it is gone, as in beanstalkd.
//
//	ready ──reserve──► reserved ──delete──► gone
//	  ▲                  │ release / TTR runs out ──► ready
//	  │ delay passes     │ release with delay ──► delayed
//	delayed              │ bury ──► buried ──kick──► ready
//
// # Cancel
//
// Cancel (CancelStore; both back ends are) stops a job wherever it is: a
// ready, delayed or buried job is removed; a reserved job is removed and
// its holder told, pushed through the store to whatever process holds it
// (ListenCancel; on Redis a shard channel of the job's tag). A Worker's
// handler context then ends with a *CancelError (errors.Is ErrCancelled)
// carrying the reason, and the Worker neither deletes, releases nor buries
// the job; any other holder's later Delete, Release, Bury or Touch finds no
// job (ErrNotFound; beanstalkd NOT_FOUND at the client's next command on
// it; HTTP 404 not_found), and the job is never retried or made ready
// again. A reservation whose TTR had run out ended first: the job was
// ready, and nobody is told. Cancels are counted per tube
// (TubeStats.Cancels), not as deletes. In a tube that keeps finished jobs
// (KeepStore) a cancelled job is kept like a finished one, with
// JobStats.Cancelled set and the reason as its last error. Besides a call
// (Go, POST /v1/jobs/{id}/cancel, hourglass cancel ID), a job is cancelled
// from the dashboard (its page, and the selection of a tube's list, in any
// state), and by a schedule whose overlap policy is cancel_previous, at
// its next tick (package schedule).
//
//	any state ──cancel──► gone (or kept); a reserved job's holder is told
//
// # Limits
//
// A tube may carry limits (SetLimits, LimitStore): a rate, at most so many
// reserves per period (GCRA, a ratelimit.Limit), and a cap, at most so many
// of its jobs reserved at once. The store checks them inside the reserve,
// so every client is held to them, a beanstalkd client included; a tube
// its limits hold back is skipped as a paused tube is, and a waiting
// Reserve wakes when the rate frees or a reservation ends. Limits outlive
// the tube and are cleared only by ClearLimits. See docs/tube-limits.md.
//
// # Groups
//
// A job may be put into a group of its tube (NewJob.Group): the tube
// "tube;group" (GroupTube), a name a beanstalkd client can use as it is.
// A reserve of the tube serves the tube's own jobs and its groups' in turn,
// one job per turn, the one served longest ago first, so a group with many
// jobs does not starve one with few; within a group, jobs go by
// (priority, ID). The tube's group template (Limits.Group) gives each group
// its own rate and cap, on top of the tube's rate and cap, which count the
// tube and its groups together (a LimitStore serves groups; both back ends are).
//
// # History
//
// A job keeps, at a fixed cost, what an operator asks of a failed one
// (StatsJob): its attempts (Reserves), the times of its put and of its
// last reserve, release, bury, kick and timeout, and its last error — the
// reason given to ReleaseWithReason or BuryWithReason (or ReleaseWith,
// BuryWith), at most MaxReasonLen bytes (CutReason) — and the history of
// the errors of its attempts (JobStats.Errors: each reason with its time and
// the reserve it ended, the last MaxErrors within MaxErrorBytes, AppendError).
// Release and Bury give none and leave the last error and the history as
// they were. ReleaseWith and BuryWith may
// leave out the priority: the job keeps its own, which the store reads and
// writes in one atomic step (KeepPriority in the Store contract). A Worker gives its handler's error each time it
// releases a failed job and when it buries one after its last attempt.
//
// # Owners
//
// A reservation belongs to an owner: the Queue's own name, or the name given
// to WithOwner (the beanstalkd server gives each connection its own). Only
// the owner may release, bury or touch the job; a delete of a job another
// owner holds fails with ErrReserved. The store keeps the ledger of who
// holds what: Held lists an owner's reservations with the time left on each,
// and Abandon returns all of an owner's jobs to ready at once, as beanstalkd
// does when a connection closes. A reserve and a touch return the time left
// on the reservation as the store's clock measures it (Job.Left, Touch), so
// a caller's deadline is its own clock at the call plus that time.
//
// # Time
//
// Durations are time.Duration and kept to the millisecond. Deadlines are
// computed by the store from its own clock — on Redis, the server's TIME —
// never from the caller's, so processes whose clocks disagree still agree on
// when a job is due. A job becomes reservable at its due time; a waiting
// Reserve learns of it from one timer per Queue set to the next due time the
// store reported, and of new jobs from the store's notifications
// (Notifier, whose topics are tubes), so waiting costs no store calls; a
// poll every Options.PollInterval is the safety net against a lost
// wake-up. That timer, a Reserve's Timeout and a Worker's touches run on
// Options.Clock (the machine's when nil), which a suite drives by hand.
// (Waiting works the same way in every primitive: see
// docs/architecture.md, "Waiting without polling".)
//
// # History
//
// A store that implements CounterLog (both of hourglass's do) keeps
// samples of the tubes' cumulative counters by minute, for a bounded time,
// shared by every process on it; the dashboard charts jobs processed and
// failed per tube per minute from them. JobStats.ReservedBy names who holds
// a reserved job.
//
// # Errors
//
// Outcomes callers branch on are sentinels tested with errors.Is:
// ErrNotFound, ErrNotReserved, ErrReserved, ErrNotKickable, ErrJobTooBig,
// ErrInvalidTube, ErrInvalid (a bad argument, named in the message), ErrTimeout
// (Reserve), ErrFull, ErrClosed. Bad input is refused before the store is
// called, so it changes nothing. A failure of the store (network, disk) is
// returned as it is and never as one of the outcome sentinels.
//
// # Concurrency
//
// A Queue and its WithOwner views are safe for concurrent use. Close a Queue
// before its Store. A Worker runs a Handler over jobs with a concurrency
// limit, touching long-running jobs, retrying failures with a backoff, and
// burying a job after its last attempt.
package queue
