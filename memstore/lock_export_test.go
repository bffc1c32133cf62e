package memstore

// HeldLocks reports how many names l keeps.
func HeldLocks(l *Locks) int { return l.heldLocks() }

// FireLocks runs l's timer now, as if it had fired.
func FireLocks(l *Locks) { l.e.fire() }

// Compact writes a snapshot of s now.
func Compact(s *Store) error { return s.compactNow() }
