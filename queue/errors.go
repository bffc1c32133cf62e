package queue

import (
	"errors"
	"fmt"
)

// Errors returned by Queue methods and Store implementations. Callers test
// them with errors.Is; stores wrap them with context.
var (
	// ErrNotFound: no job has the given ID (or the tube has no job in the asked state).
	ErrNotFound = errors.New("queue: job not found")
	// ErrNotReserved: release, bury or touch of a job that is not reserved by the caller.
	ErrNotReserved = errors.New("queue: job not reserved by this owner")
	// ErrReserved: delete or reserve-by-ID of a job that someone else (or, for reserve-by-ID, anyone) has reserved.
	ErrReserved = errors.New("queue: job is reserved")
	// ErrNotKickable: kick of a job that is neither buried nor delayed.
	ErrNotKickable = errors.New("queue: job is neither buried nor delayed")
	// ErrJobTooBig: the body is longer than the queue's MaxJobSize.
	ErrJobTooBig = errors.New("queue: job too big")
	// ErrTimeout: a reserve found no job before its timeout passed.
	ErrTimeout = errors.New("queue: reserve timed out")
	// ErrInvalid: an argument is out of range; the error names it.
	ErrInvalid = errors.New("queue: invalid argument")
	// ErrInvalidTube: a tube name is empty, longer than 200 bytes, or has a character beanstalkd refuses.
	ErrInvalidTube = errors.New("queue: invalid tube name")
	// ErrFull: the store holds as many jobs as it was configured to hold.
	ErrFull = errors.New("queue: store is full")
	// ErrClosed: the Queue or the store has been closed.
	ErrClosed = errors.New("queue: closed")
	// ErrNotReplicated: the store made the change but fewer of its replicas
	// than asked acknowledged it in time (redisstore.Options.Replicas); a
	// failover may lose it, as after a network error.
	ErrNotReplicated = errors.New("queue: change not acknowledged by enough replicas")
)

func invalid(field, format string, args ...any) error {
	return fmt.Errorf("%w: %s %s", ErrInvalid, field, fmt.Sprintf(format, args...))
}
