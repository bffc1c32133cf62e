package ptimer

import (
	"errors"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Timer calls its function once at the time Reset sets, unless Stop comes
// first. Its methods are safe for concurrent use, from its function too.
type Timer struct {
	fn   func()
	file *os.File // the timerfd, non-blocking, in the runtime's poller
	fd   int

	// An exact Timer (Exact) sets its timerfd lead before its time, and
	// the goroutine spins from the wake-up to the time itself.
	exact bool
	gen   atomic.Uint64 // counts Reset and Stop calls: a spin ends when it moves

	mu      sync.Mutex
	armed   bool // set, not yet fired or stopped
	running bool // the goroutine that reads the timerfd is alive
	closed  bool
	at      time.Time     // the time set, of an exact Timer
	lead    time.Duration // how early an exact Timer's timerfd is set
	late    time.Duration // the average lateness of its wake-ups
}

// maxLead bounds how early an exact Timer wakes, and so what one call
// spends spinning.
const maxLead = 200 * time.Microsecond

// AfterFunc returns a Timer that calls f after d (at once when d is not
// positive). When the system refuses a timerfd it falls back to
// time.AfterFunc.
func AfterFunc(d time.Duration, f func()) Stopper {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return fallback(d, f)
	}
	t := &Timer{fn: f, fd: fd, file: os.NewFile(uintptr(fd), "ptimer")}
	t.Reset(d)
	return t
}

// Exact is AfterFunc for a timer whose function must run as soon after
// its time as can be, never before: it sets the timerfd before the time,
// by about twice what its recent wake-ups were late (at most 200 µs), and
// spins from the wake-up to the time, so that the wake-up's latency (a
// sleeping CPU, the scheduler) falls before the time rather than after
// it. It costs that spin's CPU at each firing.
func Exact(d time.Duration, f func()) Stopper {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return fallback(d, f)
	}
	t := &Timer{fn: f, fd: fd, file: os.NewFile(uintptr(fd), "ptimer"), exact: true}
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
	t.gen.Add(1)
	if t.exact {
		t.at = time.Now().Add(d)
		d -= t.lead
	}
	t.settime(max(d, 1))
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
	t.gen.Add(1)
	t.settime(0)
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
		case err == nil && t.armed && t.exact:
			t.armed = false
			at, gen := t.at, t.gen.Load()
			now := time.Now()
			t.learn(now.Sub(at.Add(-t.lead)))
			t.mu.Unlock()
			if t.spin(at, gen) {
				t.fn()
			}
			continue
		case err == nil && t.armed:
			t.armed = false
			t.mu.Unlock()
			t.fn()
			continue
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

// learn notes how late a wake-up of an exact Timer was and sets its lead
// for the next: twice the average lateness, at most maxLead.
func (t *Timer) learn(late time.Duration) {
	late = min(max(late, 0), 4*maxLead)
	t.late += (late - t.late) / 8
	t.lead = min(2*t.late, maxLead)
}

// spin waits until at and reports whether the timer was neither set again
// nor stopped meanwhile (then it fires on its own, or not at all).
func (t *Timer) spin(at time.Time, gen uint64) bool {
	for time.Now().Before(at) {
		if t.gen.Load() != gen {
			return false
		}
		runtime.Gosched()
	}
	return t.gen.Load() == gen
}
