package lock

import "errors"

// Outcomes callers branch on. Test them with errors.Is.
var (
	// ErrNotObtained: the lock (or every slot of the semaphore) is held by
	// others; TryObtain and TryAcquire return it at once, Obtain and Acquire
	// when their context ends first (then the error also matches the
	// context's error).
	ErrNotObtained = errors.New("lock: not obtained")
	// ErrNotHeld: Release, Refresh or TTL by a token that does not hold the
	// lock: another owner's, or one whose lease has run out or that was
	// released. Nothing is changed.
	ErrNotHeld = errors.New("lock: not held")
	// ErrNotReplicated: the lock was granted but fewer replicas than
	// ObtainOptions.Replicas acknowledged it in time; the grant was undone.
	ErrNotReplicated = errors.New("lock: grant not acknowledged by enough replicas")
	// ErrLeaseExpired is the cause of a Lock's Context when its lease ran
	// out without a renewal.
	ErrLeaseExpired = errors.New("lock: lease expired")
	// ErrReleased is the cause of a Lock's Context after Release.
	ErrReleased = errors.New("lock: released")
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("lock: store closed")
)

// Errors for bad input. Nothing is changed when one is returned.
var (
	// ErrInvalidName: a name that is empty or longer than MaxNameLen bytes.
	ErrInvalidName = errors.New("lock: invalid name")
	// ErrInvalidTTL: a lease (or a Refresh's duration) shorter than
	// MinTTL, longer than MaxTTL, or negative.
	ErrInvalidTTL = errors.New("lock: invalid TTL")
	// ErrInvalidLimit: a semaphore size below 1 or above MaxLimit.
	ErrInvalidLimit = errors.New("lock: invalid semaphore limit")
	// ErrInvalidOption: another option out of range (the error names it).
	ErrInvalidOption = errors.New("lock: invalid option")
)
