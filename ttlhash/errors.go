package ttlhash

import (
	"errors"
	"fmt"
)

// Errors returned by the methods of this package and by Store
// implementations. Test them with errors.Is; stores wrap them with context.
var (
	// ErrInvalid: an argument is out of range (a TTL that is not positive
	// or too long, a count below 1, an unknown condition); the error names it.
	ErrInvalid = errors.New("ttlhash: invalid argument")
	// ErrInvalidName: a hash name is empty or longer than MaxNameLen, or a
	// field name is longer than MaxFieldLen.
	ErrInvalidName = errors.New("ttlhash: invalid hash or field name")
	// ErrTooBig: a value is longer than MaxValueLen.
	ErrTooBig = errors.New("ttlhash: value too big")
	// ErrInvalidGroup: a consumer group or consumer name is empty or longer
	// than MaxNameLen.
	ErrInvalidGroup = errors.New("ttlhash: invalid group or consumer name")
	// ErrNoGroup: the consumer group does not exist.
	ErrNoGroup = errors.New("ttlhash: no such consumer group")
	// ErrInvalidEventID: an event ID was not made by this store.
	ErrInvalidEventID = errors.New("ttlhash: invalid event ID")
	// ErrNoTopic: a Notifier does not announce the topic given to
	// Listen.
	ErrNoTopic = errors.New("ttlhash: the store does not announce this topic")
	// ErrClosed: the Hashes, the Sweeper or the store has been closed.
	ErrClosed = errors.New("ttlhash: closed")
)

func invalid(field, format string, args ...any) error {
	return fmt.Errorf("%w: %s %s", ErrInvalid, field, fmt.Sprintf(format, args...))
}
