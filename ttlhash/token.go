package ttlhash

import (
	"fmt"
	"strconv"
	"strings"
)

// MaxEventIDLen is the longest event ID a Store makes.
const MaxEventIDLen = 64

// CheckEventID returns an error wrapping ErrInvalidEventID unless id has the
// form every Store's event IDs keep to: one to three runs of ASCII digits,
// the second after a ':' and the third after a '-' ("17", "3:1700000000000-4"),
// each below 2^64, at most MaxEventIDLen bytes in all. A Store may refuse
// more (an ID it did not make), with the same error; Hashes.Ack checks this
// before the store is called, so a malformed ID never reaches it.
func CheckEventID(id string) error {
	if len(id) == 0 || len(id) > MaxEventIDLen {
		return fmt.Errorf("%w: %d bytes (want 1 to %d)", ErrInvalidEventID, len(id), MaxEventIDLen)
	}
	bad := fmt.Errorf("%w: %q", ErrInvalidEventID, id)
	head, tail, colon := strings.Cut(id, ":")
	if !digits(head) {
		return bad
	}
	if !colon {
		return nil
	}
	ms, seq, dash := strings.Cut(tail, "-")
	if !digits(ms) || dash && !digits(seq) {
		return bad
	}
	return nil
}

// digits reports whether s is a decimal number below 2^64.
func digits(s string) bool {
	if s == "" || s[0] == '+' || s[0] == '-' {
		return false
	}
	_, err := strconv.ParseUint(s, 10, 64)
	return err == nil
}

// CheckCursor returns an error wrapping ErrInvalid unless cursor has a
// form a Store's Scan returns: "" (the start), a decimal number below 2^64,
// or 'k' followed by a field name (at most MaxFieldLen bytes). Servers
// check a client's cursor with it before the store is called.
func CheckCursor(cursor string) error {
	switch {
	case cursor == "", digits(cursor):
		return nil
	case cursor[0] == 'k' && len(cursor) <= MaxFieldLen+1:
		return nil
	}
	if len(cursor) > 40 {
		cursor = cursor[:40] + "…"
	}
	return invalid("cursor", "%q: not a cursor a scan returned", cursor)
}
