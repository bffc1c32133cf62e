package wait

// LockLine takes l's lock, for a test to show which calls need it; the
// returned function releases it.
func LockLine(l *Line) (unlock func()) {
	l.mu.Lock()
	return l.mu.Unlock
}
