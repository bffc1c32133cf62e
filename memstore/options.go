package memstore

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/hourglass-io/hourglass/internal/ptimer"
	"github.com/hourglass-io/hourglass/internal/wal"
	"github.com/hourglass-io/hourglass/queue"
)

// FsyncPolicy says when a change written to the log reaches the disk, and so
// what a crash of the machine can lose. A crash of the process alone (kill
// -9, a panic) loses nothing acknowledged under any policy: every method
// returns only after its records are written to the operating system.
type FsyncPolicy int

// The fsync policies. The zero value, FsyncAlways, is the default.
const (
	// FsyncAlways: a method returns after its records are fsynced. Nothing
	// acknowledged is ever lost. Concurrent callers share one write and one
	// fsync (group commit).
	FsyncAlways FsyncPolicy = iota
	// FsyncEverySec: a method returns after its records are written; a
	// goroutine of the Store fsyncs once a second. A crash of the machine
	// can lose about the last second of acknowledged changes.
	FsyncEverySec
	// FsyncNo: a method returns after its records are written; the
	// operating system decides when they reach the disk (on Linux, within
	// about 30 seconds). A crash of the machine can lose that much.
	FsyncNo
)

var fsyncNames = [...]string{FsyncAlways: "always", FsyncEverySec: "everysec", FsyncNo: "no"}

// String returns the policy's name as ParseFsync reads it.
func (p FsyncPolicy) String() string {
	if p >= FsyncAlways && p <= FsyncNo {
		return fsyncNames[p]
	}
	return fmt.Sprintf("FsyncPolicy(%d)", int(p))
}

// ParseFsync reads a policy name: "always", "everysec" or "no".
func ParseFsync(s string) (FsyncPolicy, error) {
	for p, name := range fsyncNames {
		if s == name {
			return FsyncPolicy(p), nil
		}
	}
	return 0, fmt.Errorf("%w: fsync policy %q, want always, everysec or no", queue.ErrInvalid, s)
}

func (p FsyncPolicy) sync() wal.SyncPolicy {
	switch p {
	case FsyncEverySec:
		return wal.SyncEverySec
	case FsyncNo:
		return wal.SyncNever
	}
	return wal.SyncAlways
}

// DefaultCompactBytes is the default Options.CompactBytes.
const DefaultCompactBytes = 4 << 20

// Options configure a Store. Nil or the zero value means the defaults.
type Options struct {
	// Clock is where every deadline comes from. Default time.Now. Tests
	// inject a manual clock; a Store keeps nanoseconds.
	Clock func() time.Time
	// AfterFunc is how the Store waits on Clock: like time.AfterFunc for
	// time.Now, it calls f in its own goroutine once Clock has moved d on,
	// and returns a Timer that Reset and Stop move and stop. The Store has
	// one such timer, set to the earliest deadline of all its primitives.
	// Default when Clock is nil: a timer like time.AfterFunc's that fires
	// within tens of microseconds of its time where the runtime's can be a
	// millisecond late (internal/ptimer: a timerfd on Linux, time.AfterFunc
	// elsewhere), so a delayed job reaches a waiting reserve well within a
	// millisecond of its due time. When Clock is set and
	// AfterFunc is not, nothing waits on Clock: what falls due is applied
	// by the next operation (and Hashes.Sweep) instead.
	AfterFunc func(d time.Duration, f func()) Timer
	// Fsync is the durability of the log (Open only; New ignores it).
	// Default FsyncAlways.
	Fsync FsyncPolicy
	// MaxJobs caps the number of jobs: a Put that would store more returns
	// queue.ErrFull and stores nothing. 0 means no cap.
	MaxJobs int
	// CompactBytes is the size the log may reach before the Store writes a
	// snapshot and deletes the log behind it; the threshold is the larger of
	// CompactBytes and twice the size of the live data, so the directory
	// stays within about three times the live data, or CompactBytes plus the
	// live data when that is small. Default 4 MiB (DefaultCompactBytes).
	CompactBytes int64
	// MaxEvents caps the expiry events of expiring hash fields (Hashes)
	// kept; past it the oldest are dropped, acknowledged or not, and
	// counted. Default 1,000,000 (DefaultMaxEvents).
	MaxEvents int
	// Logger receives what recovery and compaction have to say (a torn tail
	// cut, a snapshot written, a failed write). Default: nothing is logged.
	Logger *slog.Logger

	// moreParts, set by the package's tests only, returns parts to add
	// after the table of register: the worked example of CONTRIBUTING.md
	// (tally_test.go) is a part that no production Store has.
	moreParts func(s *Store) []registration
	// fs, set by the package's tests only, is the log's file layer.
	fs wal.FS
}

func (o *Options) clock() func() time.Time {
	if o == nil || o.Clock == nil {
		return time.Now
	}
	return o.Clock
}

// Timer is the timer of Options.AfterFunc; *time.Timer is one.
type Timer = interface {
	Reset(d time.Duration) bool
	Stop() bool
}

// noTimer is the timer of a clock nothing waits on: it never fires.
type noTimer struct{}

func (noTimer) Reset(time.Duration) bool { return false }
func (noTimer) Stop() bool               { return false }

func (o *Options) afterFunc() func(d time.Duration, f func()) Timer {
	switch {
	case o != nil && o.AfterFunc != nil:
		return o.AfterFunc
	case o != nil && o.Clock != nil:
		return func(time.Duration, func()) Timer { return noTimer{} }
	}
	return func(d time.Duration, f func()) Timer { return ptimer.AfterFunc(d, f) }
}

func (o *Options) fsync() FsyncPolicy {
	if o == nil {
		return FsyncAlways
	}
	return o.Fsync
}

func (o *Options) fileLayer() wal.FS {
	if o == nil {
		return nil
	}
	return o.fs
}

func (o *Options) maxJobs() int {
	if o == nil {
		return 0
	}
	return o.MaxJobs
}

func (o *Options) compactBytes() int64 {
	if o == nil || o.CompactBytes == 0 {
		return DefaultCompactBytes
	}
	return o.CompactBytes
}

func (o *Options) maxEvents() int {
	if o == nil || o.MaxEvents == 0 {
		return DefaultMaxEvents
	}
	return o.MaxEvents
}

func (o *Options) logger() *slog.Logger {
	if o == nil || o.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return o.Logger
}

func (o *Options) validate() error {
	if o == nil {
		return nil
	}
	if o.Fsync < FsyncAlways || o.Fsync > FsyncNo {
		return fmt.Errorf("%w: Options.Fsync is %d, want FsyncAlways, FsyncEverySec or FsyncNo", queue.ErrInvalid, int(o.Fsync))
	}
	if o.MaxJobs < 0 {
		return fmt.Errorf("%w: Options.MaxJobs is %d, want 0 (no cap) or more", queue.ErrInvalid, o.MaxJobs)
	}
	if o.CompactBytes < 0 {
		return fmt.Errorf("%w: Options.CompactBytes is %d, want 0 (default) or more", queue.ErrInvalid, o.CompactBytes)
	}
	if o.MaxEvents < 0 {
		return fmt.Errorf("%w: Options.MaxEvents is %d, want 0 (default) or more", queue.ErrInvalid, o.MaxEvents)
	}
	return nil
}
