package ptimer

import (
	"errors"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Timer calls its function once at the time Reset sets, unless Stop comes
// first. Its methods are safe for concurrent use, from its function too.
type Timer struct {
	fn   func()
	file *os.File // the timerfd, non-blocking, in the runtime's poller
	fd   int
	// backup is a runtime timer set for the same time. When the process
	// is idle the timerfd fires first; when its threads are all busy the
	// runtime looks at its own timers at every scheduling point but at
	// the poller only now and then, and the backup fires first. The first
	// to fire calls fn and disarms the other.
	backup *time.Timer
	// calling is held while fn runs, so that calls from the two never
	// overlap (the backup of one setting and the timerfd of the next).
	calling sync.Mutex

	mu      sync.Mutex
	armed   bool // set, not yet fired or stopped
	running bool // the goroutine that reads the timerfd is alive
	closed  bool
}

// AfterFunc returns a Timer that calls f after d (at once when d is not
// positive). When the system refuses a timerfd it falls back to
// time.AfterFunc.
func AfterFunc(d time.Duration, f func()) Stopper {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return fallback(d, f)
	}
	t := &Timer{fn: f, fd: fd, file: os.NewFile(uintptr(fd), "ptimer")}
	t.backup = time.AfterFunc(time.Hour, t.backupFired)
	t.backup.Stop()
	t.Reset(d)
	return t
}

// Reset sets the timer to call its function after d and reports whether
// it was set before.
func (t *Timer) Reset(d time.Duration) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return false
	}
	was := t.armed
	t.armed = true
	t.settime(max(d, 1))
	t.backup.Reset(d)
	_ = t.file.SetReadDeadline(time.Time{})
	if !t.running {
		t.running = true
		go t.loop()
	}
	return was
}

// Stop stops the timer and reports whether it was set.
func (t *Timer) Stop() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return false
	}
	was := t.armed
	t.armed = false
	t.settime(0)
	t.backup.Stop()
	if t.running {
		_ = t.file.SetReadDeadline(time.Unix(1, 0)) // lets the goroutine end
	}
	return was
}

// Close stops the timer for good and releases its file descriptor.
func (t *Timer) Close() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed, t.armed = true, false
	t.backup.Stop()
	t.mu.Unlock()
	return t.file.Close() // the goroutine's read fails and it ends
}

func (t *Timer) settime(d time.Duration) {
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(d))}
	_ = unix.TimerfdSettime(t.fd, 0, &spec, nil)
}

// pending reports whether the timerfd is set and has not expired.
func (t *Timer) pending() bool {
	var cur unix.ItimerSpec
	if err := unix.TimerfdGettime(t.fd, &cur); err != nil {
		return false
	}
	return cur.Value.Sec != 0 || cur.Value.Nsec != 0
}

func (t *Timer) loop() {
	var buf [8]byte
	for {
		_, err := t.file.Read(buf[:])
		t.mu.Lock()
		switch {
		case err == nil && t.armed && t.pending():
			// An expiry read before Reset set the timer again: read on.
		case err == nil && t.armed:
			t.armed = false
			t.backup.Stop()
			t.mu.Unlock()
			t.call()
			continue
		case err == nil:
			// An expiry the backup took first (or one of a timer
			// stopped and set again): read on; Stop ends the read.
		case err != nil && !errors.Is(err, os.ErrDeadlineExceeded):
			t.running = false // closed
			t.mu.Unlock()
			return
		case !t.armed:
			t.running = false
			t.mu.Unlock()
			return
		}
		t.mu.Unlock() // stopped and set again: read on
	}
}

// backupFired runs when the runtime timer fires first: it calls fn and
// disarms the timerfd, whose goroutine reads on for the next Reset.
func (t *Timer) backupFired() {
	t.mu.Lock()
	if !t.armed || t.pending() {
		// Fired already, stopped, or set again since: a Reset or Stop
		// that raced with this call has the last word.
		t.mu.Unlock()
		return
	}
	t.armed = false
	t.settime(0)
	t.mu.Unlock()
	t.call()
}

func (t *Timer) call() {
	t.calling.Lock()
	defer t.calling.Unlock()
	t.fn()
}
