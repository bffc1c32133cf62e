package lock

import (
	"fmt"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/hourglass-io/hourglass/internal/wait"
)

// Limits of names, leases and semaphores.
const (
	// MaxNameLen is the longest name, in bytes.
	MaxNameLen = 1024
	// MinTTL is the shortest lease.
	MinTTL = time.Millisecond
	// MaxTTL is the longest lease.
	MaxTTL = 30 * 24 * time.Hour
	// MaxLimit is the largest semaphore.
	MaxLimit = 1 << 20
)

// Defaults of Options.
const (
	// DefaultTTL is the lease of a lock obtained with no TTL; such a lock
	// renews itself.
	DefaultTTL = 15 * time.Second
	// DefaultQueueTTL is how long a fair waiter's place lasts unless it is
	// renewed (the waiter renews it every third of that while it waits).
	DefaultQueueTTL = 6 * time.Second
	// DefaultPollInterval is how often a waiter rechecks a busy name on a
	// store that is not a Notifier.
	DefaultPollInterval = 100 * time.Millisecond
)

// Options configure a Client. Nil or zero fields mean the defaults.
type Options struct {
	// DefaultTTL is the lease used when ObtainOptions.TTL is 0
	// (default DefaultTTL).
	DefaultTTL time.Duration
	// QueueTTL is how long the place of a fair waiter that stopped
	// renewing it (it died) blocks those behind it (default
	// DefaultQueueTTL).
	QueueTTL time.Duration
	// PollInterval bounds a waiter's sleep on a store that is not a
	// Notifier (default DefaultPollInterval).
	PollInterval time.Duration
	// TracerProvider makes a span of each obtain ("lock obtain",
	// docs/tracing.md) with the time waited and the fence; nil means
	// OpenTelemetry's global provider. While neither is set (or the
	// provider is a no-op one) no span is made.
	TracerProvider trace.TracerProvider
	// Clock is the time an obtain's wait reads and waits on (its rechecks
	// and polls) and a Lock's own view of its lease (Context's deadline)
	// and its renewals; nil means the machine's. A suite passes a manual
	// clock (storetest.Clock), with the store on the same clock, to drive
	// time.
	Clock wait.Clock
}

func (o *Options) validate() error {
	if o == nil {
		return nil
	}
	if o.DefaultTTL != 0 && (o.DefaultTTL < MinTTL || o.DefaultTTL > MaxTTL) {
		return fmt.Errorf("%w: Options.DefaultTTL %v out of [%v, %v]", ErrInvalidTTL, o.DefaultTTL, MinTTL, MaxTTL)
	}
	if o.QueueTTL != 0 && (o.QueueTTL < 10*time.Millisecond || o.QueueTTL > MaxTTL) {
		return fmt.Errorf("%w: Options.QueueTTL %v out of [10ms, %v]", ErrInvalidOption, o.QueueTTL, MaxTTL)
	}
	if o.PollInterval < 0 {
		return fmt.Errorf("%w: Options.PollInterval %v is negative", ErrInvalidOption, o.PollInterval)
	}
	return nil
}

func (o *Options) defaultTTL() time.Duration {
	if o == nil || o.DefaultTTL == 0 {
		return DefaultTTL
	}
	return o.DefaultTTL
}

func (o *Options) queueTTL() time.Duration {
	if o == nil || o.QueueTTL == 0 {
		return DefaultQueueTTL
	}
	return o.QueueTTL
}

func (o *Options) pollInterval() time.Duration {
	if o == nil || o.PollInterval == 0 {
		return DefaultPollInterval
	}
	return o.PollInterval
}

// ObtainOptions configure one Obtain, TryObtain, Acquire or TryAcquire.
// Nil or zero means the defaults: a lease of Options.DefaultTTL that
// renews itself, not fair.
type ObtainOptions struct {
	// TTL is the lease: the store drops the hold this long after the grant
	// or the last renewal. 0 means Options.DefaultTTL with AutoRenew.
	TTL time.Duration
	// AutoRenew renews the lease every third of TTL until Release, and
	// cancels the Lock's Context when a renewal finds the lock lost or the
	// lease runs out before one succeeds. It is always on when TTL is 0.
	AutoRenew bool
	// Fair makes Obtain (or Acquire) wait in line: grants go to waiters in
	// the order they arrived, across all processes. TryObtain ignores it.
	Fair bool
	// Replicas, when above 0, waits after the grant for that many replicas
	// to acknowledge it (Redis's WAIT), up to ReplicaTimeout (default one
	// second); when fewer do, the grant is undone and ErrNotReplicated
	// returned. See the package documentation for what this buys.
	Replicas       int
	ReplicaTimeout time.Duration
}

func (o *ObtainOptions) validate() error {
	if o == nil {
		return nil
	}
	if o.TTL != 0 && (o.TTL < MinTTL || o.TTL > MaxTTL) {
		return fmt.Errorf("%w: ObtainOptions.TTL %v out of [%v, %v]", ErrInvalidTTL, o.TTL, MinTTL, MaxTTL)
	}
	if o.Replicas < 0 || o.Replicas > 1000 {
		return fmt.Errorf("%w: ObtainOptions.Replicas %d out of [0, 1000]", ErrInvalidOption, o.Replicas)
	}
	if o.ReplicaTimeout < 0 || o.ReplicaTimeout > time.Hour {
		return fmt.Errorf("%w: ObtainOptions.ReplicaTimeout %v out of [0, 1h]", ErrInvalidOption, o.ReplicaTimeout)
	}
	return nil
}

func validName(name string) error {
	if name == "" || len(name) > MaxNameLen {
		return fmt.Errorf("%w: %d bytes (want 1 to %d)", ErrInvalidName, len(name), MaxNameLen)
	}
	return nil
}

func validLimit(n int) error {
	if n < 1 || n > MaxLimit {
		return fmt.Errorf("%w: %d (want 1 to %d)", ErrInvalidLimit, n, MaxLimit)
	}
	return nil
}
