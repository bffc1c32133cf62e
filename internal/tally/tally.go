package tally

import (
	"context"
	"fmt"
)

// Store is what a back end provides: one method per atomic operation, no
// back end's types. It is safe for concurrent use.
type Store interface {
	// Add moves the tally name by n and returns its new value. Bad input
	// (see Check) fails with ErrInvalid and changes nothing; a closed
	// store fails with ErrClosed.
	Add(ctx context.Context, name string, n int64) (int64, error)
	// Get returns the value of the tally name, 0 when it was never added
	// to. Bad input fails with ErrInvalid.
	Get(ctx context.Context, name string) (int64, error)
}

// MaxName is the longest name, in bytes.
const MaxName = 200

// Check reports bad input of Add and Get (n is ignored by Get's check),
// wrapping ErrInvalid: an empty name, a name longer than MaxName, an
// amount of 0. Every back end calls it before it changes anything.
func Check(name string, n int64) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: empty name", ErrInvalid)
	case len(name) > MaxName:
		return fmt.Errorf("%w: a name of %d bytes (at most %d)", ErrInvalid, len(name), MaxName)
	case n == 0:
		return fmt.Errorf("%w: an amount of 0", ErrInvalid)
	}
	return nil
}
