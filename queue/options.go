package queue

import (
	"fmt"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/hourglass-io/hourglass/internal/wait"
)

// Defaults used when the corresponding Options field is zero.
const (
	DefaultMaxJobSize   = 65535
	DefaultTTR          = time.Minute
	DefaultPollInterval = 5 * time.Second
	// MaxJobSizeLimit is the largest MaxJobSize accepted (1 GiB, as beanstalkd).
	MaxJobSizeLimit = 1 << 30
	// MinTTR is the shortest time to run.
	MinTTR = time.Second
	// MaxDuration bounds delays, TTRs and pauses: 2^32-1 seconds, the largest
	// value the beanstalkd protocol can carry.
	MaxDuration = time.Duration(1<<32-1) * time.Second
)

// Options configure a Queue. The zero value (or nil) means the defaults.
type Options struct {
	// MaxJobSize is the largest body accepted, in bytes. Default 65535.
	MaxJobSize int
	// DefaultTTR is the TTR of a job put with TTR 0. Default one minute.
	DefaultTTR time.Duration
	// PollInterval bounds how long a waiting reserver can miss a job when a
	// wake-up is lost (a reconnect to Redis, a store that cannot notify):
	// each tube with waiters is rechecked this often. Default 5 s.
	PollInterval time.Duration
	// Owner names the reservations made through this Queue value. Default: a
	// random name, unique per Queue. WithOwner gives other names.
	Owner string
	// TracerProvider makes the spans of puts and of a Worker's handlers
	// (docs/tracing.md); nil means OpenTelemetry's global provider. While
	// neither is set (or the provider is a no-op one), no span is made and
	// a call costs what it did without tracing.
	TracerProvider trace.TracerProvider
	// Clock is the time a waiting reserve reads and waits on (its
	// Timeout, the due times the store names, the polls) and a Worker's
	// touches and pauses wait on; nil means the machine's. A suite passes
	// a manual clock (storetest.Clock), with the store on the same clock,
	// to drive time. What the store stores is on the store's clock
	// whatever Clock is.
	Clock wait.Clock
}

func (o *Options) maxJobSize() int {
	if o == nil || o.MaxJobSize == 0 {
		return DefaultMaxJobSize
	}
	return o.MaxJobSize
}

func (o *Options) defaultTTR() time.Duration {
	if o == nil || o.DefaultTTR == 0 {
		return DefaultTTR
	}
	return o.DefaultTTR
}

func (o *Options) pollInterval() time.Duration {
	if o == nil || o.PollInterval == 0 {
		return DefaultPollInterval
	}
	return o.PollInterval
}

func (o *Options) validate() error {
	if o == nil {
		return nil
	}
	if o.MaxJobSize < 0 || o.MaxJobSize > MaxJobSizeLimit {
		return invalid("Options.MaxJobSize", "is %d, want 0 (default) to %d", o.MaxJobSize, MaxJobSizeLimit)
	}
	if o.DefaultTTR != 0 && (o.DefaultTTR < MinTTR || o.DefaultTTR > MaxDuration) {
		return invalid("Options.DefaultTTR", "is %v, want 0 (default) or %v to %v", o.DefaultTTR, MinTTR, MaxDuration)
	}
	if o.PollInterval < 0 {
		return invalid("Options.PollInterval", "is %v, want >= 0", o.PollInterval)
	}
	return nil
}

// ReserveOptions say where and how long Reserve waits.
type ReserveOptions struct {
	// Tubes to take a job from; default the single tube "default".
	Tubes []string
	// Timeout bounds the wait: 0 waits until ctx ends; a negative value does
	// not wait (one attempt, ErrTimeout if nothing is ready).
	Timeout time.Duration
}

// checkDuration validates a delay or pause: not negative, at most MaxDuration.
func checkDuration(field string, d time.Duration) error {
	if d < 0 || d > MaxDuration {
		return invalid(field, "is %v, want 0 to %v", d, MaxDuration)
	}
	return nil
}

func checkTTR(d time.Duration) error {
	if d < MinTTR || d > MaxDuration {
		return invalid("TTR", "is %v, want 0 (default) or %v to %v", d, MinTTR, MaxDuration)
	}
	return nil
}

// truncMS drops sub-millisecond precision: stores keep milliseconds.
func truncMS(d time.Duration) time.Duration { return d.Truncate(time.Millisecond) }

// checkTubes checks the names of tubes and returns them without
// duplicates, in order: tubes itself when it has none (a reserve's usual
// case, which then copies nothing), ["default"] when it is empty.
func checkTubes(tubes []string) ([]string, error) {
	if len(tubes) == 0 {
		return []string{"default"}, nil
	}
	if len(tubes) <= 8 && distinct(tubes) {
		for _, t := range tubes {
			if err := CheckTube(t); err != nil {
				return nil, err
			}
		}
		return tubes, nil
	}
	out := make([]string, 0, len(tubes))
	seen := make(map[string]bool, len(tubes))
	for _, t := range tubes {
		if err := CheckTube(t); err != nil {
			return nil, err
		}
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out, nil
}

// distinct reports whether no name of a short list is there twice.
func distinct(tubes []string) bool {
	for i, t := range tubes {
		for _, u := range tubes[:i] {
			if t == u {
				return false
			}
		}
	}
	return true
}

func checkID(id ID) error {
	if id == 0 || id > MaxID {
		return fmt.Errorf("%w: no job has ID %d", ErrNotFound, id)
	}
	return nil
}
