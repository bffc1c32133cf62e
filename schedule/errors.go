package schedule

import "errors"

// Outcomes callers branch on. Test them with errors.Is.
var (
	// ErrNotFound: no schedule has the name.
	ErrNotFound = errors.New("schedule: not found")
	// ErrConflict: the schedule changed (another process fired a tick or
	// updated it) between reading it and firing; nothing was changed.
	ErrConflict = errors.New("schedule: changed concurrently")
	// ErrNotDue: the tick to fire is still in the future by the store's
	// clock; nothing was changed.
	ErrNotDue = errors.New("schedule: tick not due")
	// ErrNoTopic: a Notifier does not announce the topic given to
	// Listen (it announces TopicDue alone).
	ErrNoTopic = errors.New("schedule: the store does not announce this topic")
	// ErrClosed: the store or the Scheduler was closed.
	ErrClosed = errors.New("schedule: closed")
)

// Errors for bad input. Nothing is changed when one is returned; the
// returned error wraps one of these and names the field.
var (
	// ErrInvalidSpec: a spec that is not a cron expression, a macro or
	// "@every <duration>".
	ErrInvalidSpec = errors.New("schedule: invalid spec")
	// ErrInvalidName: a name that is empty, longer than MaxNameLen bytes or
	// holds a byte outside printable ASCII.
	ErrInvalidName = errors.New("schedule: invalid name")
	// ErrInvalidZone: a time zone that is not in the IANA database.
	ErrInvalidZone = errors.New("schedule: invalid time zone")
	// ErrInvalidOption: another field out of range (the error names it).
	ErrInvalidOption = errors.New("schedule: invalid option")
)
