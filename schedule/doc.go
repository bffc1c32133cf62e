// Package schedule implements schedules: cron expressions and fixed
// intervals, read in an IANA time zone, that put a job into a tube on each
// tick, exactly once per tick across every process sharing a store.
//
// A Schedule declares a name, a spec (ParseSpec: five cron fields, an
// optional leading seconds field, the macros @yearly … @hourly, or
// "@every <duration>"), a time zone, an optional Start and End, the Job to
// put, and a misfire Policy for ticks that passed while nothing fired them:
// Skip, FireOnce or CatchUp(n). Time zones and daylight saving follow the
// "first instant" rule described on Spec.
//
// A Client manages schedules in a Store (Set, Get, List, Delete, Pause,
// Resume, Trigger, NextTimes) and Run fires their ticks. Firing is one
// atomic Store operation that puts the tick's job and advances the
// schedule, compared on the schedule's version and next tick, so any number
// of Clients may Run against one store with no leader and no lock: each
// tick is put once, and a Client that loses the race changes nothing. The
// job of a tick carries the unique key JobKey(name, tick), so its put is
// idempotent on (schedule, tick) even when a store call is retried, and a
// worker reads the tick back from the job (ParseJobKey of
// queue.Job.UniqueKey).
//
// Time: ticks are computed in Go from the spec; whether a tick is due, and
// the first tick of a schedule set or resumed, are decided by the store's
// clock (Store.Now; Redis: TIME; the embedded engine: its clock), so
// processes with skewed clocks agree: a Client has no clock of its own. Run waits until the
// earliest due tick, and is woken sooner when a schedule changes: through
// its Client, or in any process when the store is a Notifier (topic
// TopicDue). Without one it rechecks every Options.PollInterval.
//
// Errors: ErrNotFound, ErrConflict and ErrNotDue for outcomes; bad input
// wraps ErrInvalidName, ErrInvalidSpec, ErrInvalidZone or ErrInvalidOption
// and names the field; nothing is changed when one is returned. A closed
// store fails with ErrClosed; a Notifier asked for a topic other than
// TopicDue fails with ErrNoTopic.
//
// A Client is safe for concurrent use.
package schedule
