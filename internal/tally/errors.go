package tally

import "errors"

// The sentinel errors of the tally stores. Test them with errors.Is.
var (
	// ErrInvalid: bad input (Check); nothing changed.
	ErrInvalid = errors.New("tally: invalid argument")
	// ErrClosed: the store is closed.
	ErrClosed = errors.New("tally: store closed")
)
