package queue

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// ID identifies a job. IDs are unique within a store and stay below 2^53,
// so clients that parse them as IEEE doubles (JavaScript) read them exactly.
type ID uint64

// MaxID is the largest ID a store may issue (2^53 - 1).
const MaxID ID = 1<<53 - 1

// String returns the decimal form of the ID, as the wire protocol writes it.
func (id ID) String() string { return strconv.FormatUint(uint64(id), 10) }

// State is where a job is in its lifecycle.
type State uint8

// The states of a job. A job is in exactly one of them at any time.
const (
	Ready    State = iota + 1 // waiting to be reserved
	Delayed                   // waiting for its delay to pass
	Reserved                  // held by a reserver until it deletes, releases, buries or touches it, or its TTR runs out
	Buried                    // set aside until it is kicked
	// Finished is the state of a job that ended and that its tube keeps
	// for its retention (KeepStore): found only by Lookup and LookupKey,
	// never by beanstalkd's commands, a reserve or a peek.
	Finished
)

var stateNames = [...]string{Ready: "ready", Delayed: "delayed", Reserved: "reserved", Buried: "buried", Finished: "finished"}

// String returns the state's name as beanstalkd writes it ("ready", "delayed", "reserved", "buried"),
// or "finished".
func (s State) String() string {
	if s >= Ready && s <= Finished {
		return stateNames[s]
	}
	return fmt.Sprintf("State(%d)", uint8(s))
}

// Job is a job as a reserve or a peek returns it.
type Job struct {
	ID       ID
	Tube     string
	Priority uint32        // 0 is the most urgent
	TTR      time.Duration // time to run: how long a reservation lasts without a touch
	Reserves uint32        // times the job has been reserved, this reservation included
	Body     []byte
	// UniqueKey is the key the job was put with (NewJob.UniqueKey); "" for
	// none. The job of a schedule's tick carries schedule.JobKey(name,
	// tick), which schedule.ParseJobKey reads back.
	UniqueKey string
	// Left is, in a job that a reserve returned, the time left on its
	// reservation, measured on the store's clock at the call (its TTR): the
	// reservation ends no later than the caller's clock at the call plus
	// Left. In a job from JobStats.Job it is the TimeLeft of a reserved
	// job; elsewhere (PeekStateN) 0.
	Left time.Duration

	// Trace context (docs/tracing.md).

	// TraceContext is the W3C trace context the job was put with
	// (NewJob.TraceContext): "traceparent" or "traceparent;tracestate",
	// "" for none. SpanContext and Context read it.
	TraceContext string
}

// DefaultPriority is the priority beanstalkd clients give a job when the
// caller names none, and the one hourglass uses wherever a priority may be
// left out: the CLI's --priority, and an absent "priority" in the HTTP
// API's put, release and bury. Go callers set NewJob.Priority to it
// themselves: the field's zero value is priority 0, the most urgent, as it
// always was.
const DefaultPriority = 1024

// KeepPriority, as the priority of a release or bury (ReleaseOptions,
// BuryOptions, Store.Release, Store.Bury), keeps the priority the job has:
// the store reads and writes it in the one atomic operation.
const KeepPriority int64 = -1

// NewJob describes a job to put.
type NewJob struct {
	Body []byte
	// Priority orders ready jobs: 0 is the most urgent, ties go by job ID.
	// The zero value means priority 0, not DefaultPriority; set
	// DefaultPriority (1024) for the priority other clients use by default.
	Priority uint32
	Delay    time.Duration // how long the job waits in the delayed state before it is ready; 0 for none
	TTR      time.Duration // time to run; 0 means DefaultTTR; otherwise at least one second
	// UniqueKey, when not empty, makes the put idempotent: while a job put
	// with the same key exists in the tube, a second put stores nothing and
	// returns the first job's ID.
	UniqueKey string
	// Group, when not empty, puts the job into that group of the tube: the
	// tube "tube;group" (GroupTube). A reserve of the tube serves its
	// groups with ready jobs in turn, and the tube's group template
	// (Limits.Group) limits each group. The unique key is per group.
	Group string

	// Trace context (docs/tracing.md).

	// TraceContext is the W3C trace context the job carries to whoever
	// reserves it: "traceparent" or "traceparent;tracestate" (see
	// CheckTraceContext), "" for none. Queue.Put fills it in, for a job
	// put without one, from the span of its ctx (its own put span when
	// tracing is on); a store keeps it with the job and returns it in
	// Job.TraceContext.
	TraceContext string

	// Keys in time (docs/keys.md): windows on the UniqueKey, which they
	// need. A store that keeps jobs (KeepStore) honours them.
	//
	// UniqueKept makes the put a duplicate also while a finished job with
	// the key is kept by its tube's retention.
	UniqueKept bool
	// UniqueFor opens a window on the key from this job's put: until
	// UniqueFor has passed, a put with the key is a duplicate of this job,
	// whether it is live, kept or ended (a throttle: at most one job per
	// key per window). An ended job is kept (without counting in any
	// retention) until its window closes. 0 for none; whole milliseconds
	// up to MaxRetention.
	UniqueFor time.Duration

	// Debounce (docs/keys.md): what a put with a UniqueKey does to the
	// key's job while it is still delayed. They need a UniqueKey; a store
	// that keeps jobs (KeepStore) honours them.
	//
	// Debounce, when not 0, makes a put whose key is held by a delayed job
	// change that job instead of being its duplicate: DebounceReplace
	// gives it this put's Body and Priority, DebounceExtend restarts its
	// delay from now (this put's Delay), never past MaxWait after the
	// job's first put. DebounceReplace|DebounceExtend is a debounce: the
	// job runs once, Delay after the last put of a burst, with the last
	// put's body. Once the key's job is ready, reserved or buried, the put
	// starts a new job, which takes the key over, unless DuplicateLive is
	// set (or the job's UniqueFor window holds): then it is a duplicate,
	// as a put without Debounce is.
	Debounce DebounceMode
	// MaxWait bounds DebounceExtend: a job's due time never moves past its
	// first put plus MaxWait (the MaxWait of the put that moves it). 0 for
	// no bound; else at least Delay, at most MaxDuration.
	MaxWait time.Duration
	// DuplicateLive makes a put with Debounce a duplicate of the key's job
	// when that job is ready, reserved or buried, rather than a new job.
	DuplicateLive bool
}

// DebounceMode says what a put does to a delayed job holding its key
// (NewJob.Debounce): a set of the flags below.
type DebounceMode uint8

// The flags of a DebounceMode.
const (
	// DebounceReplace replaces the delayed job's body and priority with
	// the put's, keeping its due time unless DebounceExtend is set too.
	DebounceReplace DebounceMode = 1 << iota
	// DebounceExtend restarts the delayed job's delay from now (the put's
	// Delay), bounded by NewJob.MaxWait, keeping its body and priority
	// unless DebounceReplace is set too.
	DebounceExtend
)

// String names the flags of m: "replace", "extend", "replace|extend", or
// "" for none.
func (m DebounceMode) String() string {
	switch m {
	case 0:
		return ""
	case DebounceReplace:
		return "replace"
	case DebounceExtend:
		return "extend"
	case DebounceReplace | DebounceExtend:
		return "replace|extend"
	}
	return fmt.Sprintf("DebounceMode(%d)", uint8(m))
}

// HasKeyOptions reports whether j asks for a window on its key or a
// debounce.
func (j NewJob) HasKeyOptions() bool {
	return j.UniqueKept || j.UniqueFor > 0 || j.Debounce != 0
}

// MaxUniqueKey is the most bytes of a NewJob.UniqueKey.
const MaxUniqueKey = 1024

// PutResult is the outcome of one job of a put.
type PutResult struct {
	ID        ID
	Duplicate bool // a job with the same UniqueKey existed; ID is that job's
	// State is, for a duplicate, the state of the job it duplicates:
	// Finished for a kept job (or one whose key's window holds), 0 when
	// the store does not say.
	State State
	// Result is, for a duplicate of a kept job (State Finished), the
	// result that job was finished with (KeepStore.Finish); nil for none.
	// Read in the same atomic step as the decision that the put is a
	// duplicate.
	Result []byte
	// Debounced says that the put changed the delayed job ID holding its
	// key (NewJob.Debounce) rather than storing a job: Duplicate is set
	// too, and State is the job's state after the change (Delayed, or
	// Ready when its MaxWait had passed).
	Debounced bool
}

// JobStats describes one job, as beanstalkd's stats-job does.
type JobStats struct {
	ID       ID
	Tube     string
	State    State
	Priority uint32
	Age      time.Duration // since the job was put
	Delay    time.Duration // the delay of the last put or release
	TTR      time.Duration
	TimeLeft time.Duration // until the reservation ends (reserved) or the delay ends (delayed); 0 otherwise
	Reserves uint32        // times reserved
	Timeouts uint32        // times its TTR ran out while reserved
	Releases uint32
	Buries   uint32
	Kicks    uint32

	// History: when the job last went through each transition, by the
	// store's clock (to the millisecond at least); the zero Time for never.
	// Each is the time of the last such transition only: a job keeps a
	// fixed set of fields, not a list.
	PutAt      time.Time // when it was put (Age ago)
	ReservedAt time.Time // its last reserve
	ReleasedAt time.Time
	BuriedAt   time.Time
	KickedAt   time.Time
	TimedOutAt time.Time // when the TTR of its last reservation that timed out ran out
	// LastError is the last reason given with a release or a bury
	// (Queue.ReleaseWithReason, BuryWithReason; a Worker gives its
	// handler's error), at most MaxReasonLen bytes; "" when none was given.
	// LastErrorAt is when it was given.
	LastError   string
	LastErrorAt time.Time
	// UniqueKey is the key the job was put with; "" for none.
	UniqueKey string
	// ReservedBy is the owner of the job's reservation (Queue.Owner of
	// the holder: a beanstalkd connection, an HTTP lease, a worker) while
	// it is reserved; "" otherwise.
	ReservedBy string
	// Body is the job's body, so that one call gives stats and peek (Job).
	Body []byte

	// Kept jobs (KeepStore: Lookup, LookupKey), State Finished.
	// Result is what the job was finished with (KeepStore.Finish; nil
	// for none), FinishedAt when it ended, KeptUntil when its tube drops
	// it.
	Result     []byte
	FinishedAt time.Time
	KeptUntil  time.Time
	// Cancelled (Queue.Cancel) says that a kept job ended by a cancel,
	// not a finish; its reason is LastError, and FinishedAt when.
	Cancelled bool

	// Trace context (docs/tracing.md).

	// TraceContext is the trace context the job was put with; "" for none.
	TraceContext string
}

// Job returns the job st describes, as a peek returns it.
func (st JobStats) Job() Job {
	j := Job{ID: st.ID, Tube: st.Tube, Priority: st.Priority, TTR: st.TTR, Reserves: st.Reserves, Body: st.Body, UniqueKey: st.UniqueKey, TraceContext: st.TraceContext}
	if st.State == Reserved {
		j.Left = st.TimeLeft
	}
	return j
}

// MaxReasonLen is the most bytes of a release's or a bury's reason a job
// keeps (JobStats.LastError).
const MaxReasonLen = 1024

// CutReason returns reason as a store keeps it: invalid UTF-8 replaced by
// U+FFFD, then cut to at most MaxReasonLen bytes at the end of a whole
// character. Queue applies it to every reason before the store sees it.
func CutReason(reason string) string {
	if !utf8.ValidString(reason) {
		reason = strings.ToValidUTF8(reason, "\uFFFD")
	}
	if len(reason) <= MaxReasonLen {
		return reason
	}
	n := MaxReasonLen
	for n > 0 && !utf8.RuneStart(reason[n]) {
		n--
	}
	return reason[:n]
}

// TubeStats describes one tube, as beanstalkd's stats-tube does.
type TubeStats struct {
	Name      string
	Urgent    int64 // ready jobs with a priority below UrgentPriority
	Ready     int64
	Reserved  int64
	Delayed   int64
	Buried    int64
	TotalJobs int64 // jobs put into the tube since it was created
	Deletes   int64 // deletes of the tube's jobs
	Pauses    int64 // times the tube was paused
	// Reserves, Buries and Timeouts count the reservations of the tube's
	// jobs, their buries and the reservations that ended because their TTR
	// ran out, while the tube exists (on the embedded engine, since it was
	// opened). beanstalkd's stats-tube has no such fields.
	Reserves, Buries, Timeouts int64
	// Cancels counts the tube's jobs cancelled (Queue.Cancel), in any
	// state, as Reserves are counted; a cancel is not a delete.
	Cancels       int64
	Pause         time.Duration // length of the current pause; 0 when not paused
	PauseTimeLeft time.Duration
	// Limits are the tube's limits (LimitStore), zero when none, and
	// LimitHolds counts the reserves that got fewer jobs than they asked
	// for while the tube's limits held back its ready jobs, while the tube
	// exists (on the embedded engine, since it was opened).
	// beanstalkd's stats-tube has no such fields.
	Limits     Limits
	LimitHolds int64
	// Groups is the number of groups of the tube that hold jobs (their
	// tubes "tube;group" exist), and GroupReady and GroupReserved their
	// ready and reserved jobs: a reserve of the tube serves them, and the
	// tube's cap counts Reserved+GroupReserved. The other fields count
	// the tube's own jobs; each group's tube has its own stats.
	// beanstalkd's stats-tube has no such fields.
	Groups, GroupReady, GroupReserved int64
}

// Stats describes the whole store.
type Stats struct {
	Urgent    int64
	Ready     int64
	Reserved  int64
	Delayed   int64
	Buried    int64
	TotalJobs int64 // jobs put since the store was created (the embedded engine: since it was opened)
	Timeouts  int64 // reservations that ended because their TTR ran out
	Tubes     int64
}

// UrgentPriority is the threshold below which a ready job counts as urgent.
const UrgentPriority = 1024
