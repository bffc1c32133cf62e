package schedule

import (
	"context"
	"time"
)

// State is a schedule as a store keeps it: its definition and the state of
// its ticks.
type State struct {
	Schedule
	// Version increases with every change to the schedule (an update, a
	// fire, a pause); Fire compares it.
	Version uint64
	// Next is the next tick to fire; zero when the schedule has ended.
	Next time.Time
	// Paused schedules fire nothing; their ticks pass as missed.
	Paused bool
	// Fires and Misfires count ticks fired and ticks dropped.
	Fires, Misfires uint64
	// Skips counts the ticks the overlap policy put nothing for (the
	// previous job still waiting or running), and the ticks at which
	// the schedule paused itself (PauseOnFailure).
	Skips uint64
	// PauseReason says why the schedule paused itself (PauseOnFailure:
	// "job 42 buried: <the bury's reason>"); empty when it is not paused
	// or was paused by Pause. Resume clears it.
	PauseReason string
	// LastJob is the ID of the job of the schedule's last fire (a tick's
	// or a trigger's), 0 before the first: the previous job that the
	// overlap policy and PauseOnFailure look at.
	LastJob uint64
	// Last holds the last fires, newest first, at most KeepFires.
	Last []Fire
}

// Fire records one fired tick.
type Fire struct {
	Tick time.Time
	// JobID is the job put for the tick.
	JobID uint64
	// Lateness is how long after the tick the job was put (store clock).
	Lateness time.Duration
	// Manual marks a fire by Trigger rather than by the spec.
	Manual bool
}

// FireRequest is the argument of Store.Fire.
type FireRequest struct {
	Name string
	// Tube, when set, is the schedule's tube as the caller read it; a
	// store may use it to find the schedule without a lookup (the tube of
	// a schedule never changes; a schedule deleted and re-created on
	// another tube is then ErrNotFound).
	Tube string
	// Version and Next must equal the schedule's stored ones, or Fire
	// changes nothing and returns ErrConflict. A manual fire (Manual set)
	// compares nothing and leaves Next as it is.
	Version uint64
	Next    time.Time
	// Tick is the tick to fire (zero: fire nothing, only advance); it must
	// not be after the store's clock (ErrNotDue).
	Tick time.Time
	// NewNext is the schedule's next tick afterwards; Skipped counts the
	// ticks dropped on the way, added to Misfires.
	NewNext time.Time
	Skipped int
	Manual  bool
	// TraceContext is the W3C trace context the tick's job carries
	// (queue.NewJob.TraceContext): the fire's span, when traced; "" for
	// none.
	TraceContext string
}

// FireResult is the result of Store.Fire.
type FireResult struct {
	// Fired is set when a job was put; JobID names it.
	Fired bool
	JobID uint64
	// Overlapped is set when the overlap policy put nothing for the tick
	// (counted in State.Skips).
	Overlapped bool
	// CancelledPrevious names the previous job when the tick cancelled it
	// (OverlapCancelPrevious); 0 otherwise.
	CancelledPrevious uint64
	// SelfPaused is set when the fire found the previous job buried and
	// paused the schedule (PauseOnFailure) instead of firing.
	SelfPaused bool
	// State is the schedule afterwards.
	State State
}

// Store keeps schedules and fires their ticks. Each method is one atomic
// operation; a store reads its own clock (Redis: TIME; the embedded engine:
// the process clock), never a time the caller passes except where a field
// says so, and the times a caller passes (Set's Next, SetPaused's next) are
// computed from the store's clock as Now returned it.
//
// Errors: the sentinels of this package for outcomes (ErrNotFound,
// ErrConflict, ErrNotDue); anything else is a failure of the store.
type Store interface {
	// Set creates or replaces the schedule st.Schedule. When a schedule of
	// the name exists with an equal definition, Set changes nothing and
	// returns it (a service may declare its schedules at every start).
	// Otherwise the stored definition is replaced, Version increases and
	// Next becomes st.Next (computed by the caller from the new definition);
	// counters, Paused and Last are kept. The tube of an existing schedule
	// cannot change (a schedule may live beside its tube):
	// ErrInvalidOption, and nothing changes.
	Set(ctx context.Context, st State) (State, error)

	// Get returns the schedule name, or ErrNotFound.
	Get(ctx context.Context, name string) (State, error)

	// List returns up to limit schedules whose names sort after after, in
	// name order.
	List(ctx context.Context, after string, limit int) ([]State, error)

	// Delete removes schedule name, or returns ErrNotFound.
	Delete(ctx context.Context, name string) error

	// SetPaused pauses or resumes schedule name; a resume sets Next to
	// next (the first tick after the resume, computed by the caller).
	// ErrNotFound when there is no such schedule.
	SetPaused(ctx context.Context, name string, paused bool, next time.Time) (State, error)

	// Fire puts the job of req.Tick into the schedule's tube and advances
	// the schedule to req.NewNext in one atomic operation, so that a tick
	// is put exactly once however many processes fire it: the put is
	// idempotent on (schedule, tick), and a fire whose Version and Next no
	// longer match changes nothing (ErrConflict). In the same operation
	// it reads the state of the previous job (State.LastJob) and applies
	// PauseOnFailure (a buried previous job: pause, put nothing, count a
	// skip) and the overlap policy (skip: count, put nothing; cancel: as
	// queue.Cancel with the reason "schedule <name>: cancelled by the
	// tick at <tick ms>"); a manual fire applies neither.
	Fire(ctx context.Context, req FireRequest) (FireResult, error)

	// Due returns up to limit unpaused schedules whose Next is at or before
	// the store's clock, the store's clock (Now), and the earliest Next of
	// the unpaused schedules not returned (zero when none).
	Due(ctx context.Context, limit int) (DueResult, error)

	// Now reads the store's clock: the time from which a Client computes
	// the first tick of a schedule it sets or resumes, so that every
	// process agrees on it whatever its own clock says.
	Now(ctx context.Context) (time.Time, error)
}

// DueResult is the result of Store.Due.
type DueResult struct {
	Due      []State
	Now      time.Time
	Earliest time.Time
}

// TopicDue is the one topic of a Notifier: a schedule changed (created,
// updated, resumed), so the earliest due tick may be sooner than a running
// Client knows.
const TopicDue = "due"

// Notifier is implemented by stores that can tell a running Client that a
// schedule changed so that it re-reads the earliest due tick. Without it, a
// Client rechecks every Options.PollInterval.
type Notifier interface {
	// Listen arranges for wake(topic) to be called, from any goroutine and
	// without blocking, soon after any schedule changes (in any process,
	// for a shared store); topic must be TopicDue (else an error wrapping
	// ErrNoTopic, as ttlhash's Notifier refuses a topic it does not
	// announce). A closed store fails with ErrClosed. It returns once the
	// subscription is in effect; stop ends it. Wake-ups are hints.
	Listen(ctx context.Context, topic string, wake func(topic string)) (stop func(), err error)
}
