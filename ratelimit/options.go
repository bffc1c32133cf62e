package ratelimit

import (
	"fmt"
	"os"
	"strconv"

	"go.opentelemetry.io/otel/trace"

	"github.com/hourglass-io/hourglass/internal/tracing"
	"github.com/hourglass-io/hourglass/internal/wait"
)

// Mode says whose events a limit counts.
type Mode int

// The modes. The zero value, Shared, is the default.
const (
	// Shared: one limit per key for every Limiter of every process on the
	// same store (Redisson's OVERALL).
	Shared Mode = iota
	// PerInstance: one limit per key for each instance (Options.Instance),
	// so each process gets the whole limit to itself (Redisson's
	// PER_CLIENT).
	PerInstance
)

// FailurePolicy says what a call answers when the store fails.
type FailurePolicy int

// The failure policies. The zero value, FailClosed, is the default.
const (
	// FailClosed: the call is not allowed and its error (wrapping
	// ErrStore) is returned with the Result.
	FailClosed FailurePolicy = iota
	// FailOpen: the call is allowed; Result.StoreErr carries the store's
	// error and Options.OnStoreError hears of it.
	FailOpen
	// FailLocal: Options.Local, an in-process store, decides instead;
	// Result.StoreErr carries the store's error and Options.OnStoreError
	// hears of it. Each process then applies the whole limit on its own.
	// When Options.Local fails too, the call fails as under FailClosed,
	// with one error wrapping ErrStore and both failures
	// ("<store's>; local: <local's>").
	FailLocal
)

// DefaultMaxLogEvents is the default of Options.MaxLogEvents.
const DefaultMaxLogEvents = 10000

// Options configure a Limiter. Nil or the zero value means the defaults.
type Options struct {
	// Mode is Shared (default) or PerInstance.
	Mode Mode
	// Instance names this instance in PerInstance mode. Default: the host
	// name and the process id.
	Instance string
	// Failure is the policy when the store fails (default FailClosed).
	Failure FailurePolicy
	// Local decides under FailLocal: an in-process store, such as
	// memstore.New(nil).RateLimits(). Required with FailLocal.
	Local Store
	// OnStoreError, when set, is called with every store error that the
	// FailOpen or FailLocal policy answered.
	OnStoreError func(error)
	// Partitions, when set, splits a hot key into that many partitions (1
	// to 256), each holding 1/K of the limit: on Redis Cluster each lies
	// in its own slot, so the key's load spreads over the masters. A call
	// tries one partition at random and, when denied, one other. See the
	// package documentation for the accuracy this costs.
	Partitions func(key string) int
	// MaxLogEvents bounds Events of a SlidingLog limit (default 10,000):
	// a sliding log keeps one entry per event for a whole window.
	MaxLogEvents int
	// TracerProvider makes a span of each Wait and WaitN ("ratelimit
	// wait", docs/tracing.md) with the time waited and the decision; nil
	// means OpenTelemetry's global provider. While neither is set (or the
	// provider is a no-op one) no span is made.
	TracerProvider trace.TracerProvider
	// Clock is the time a Reservation's Wait (and so Wait and WaitN)
	// waits on and TimeToAct is read from; nil means the machine's. A
	// suite passes a manual clock (storetest.Clock), with the store on the
	// same clock, to drive time. Decisions are the store's, on its clock,
	// whatever Clock is.
	Clock wait.Clock
}

// New returns a Limiter deciding on s, or an error wrapping
// ErrInvalidOption when opts are not usable (an unknown Mode or Failure,
// FailLocal without Local, a negative MaxLogEvents) or s is nil.
func New(s Store, opts *Options) (*Limiter, error) {
	l := &Limiter{store: s, parts: func(string) int { return 1 }, maxLog: DefaultMaxLogEvents}
	if opts != nil {
		l.mode, l.failure, l.local, l.onErr = opts.Mode, opts.Failure, opts.Local, opts.OnStoreError
		if opts.Partitions != nil {
			l.parts = opts.Partitions
		}
		if opts.MaxLogEvents != 0 {
			l.maxLog = opts.MaxLogEvents
		}
		l.instance = opts.Instance
		l.trace = tracing.New(opts.TracerProvider)
		l.clock = opts.Clock
	} else {
		l.trace = tracing.New(nil)
	}
	switch {
	case s == nil:
		return nil, fmt.Errorf("%w: a nil Store", ErrInvalidOption)
	case l.mode != Shared && l.mode != PerInstance:
		return nil, fmt.Errorf("%w: Options.Mode %d, want Shared or PerInstance", ErrInvalidOption, int(l.mode))
	case l.failure < FailClosed || l.failure > FailLocal:
		return nil, fmt.Errorf("%w: Options.Failure %d, want FailClosed, FailOpen or FailLocal", ErrInvalidOption, int(l.failure))
	case l.failure == FailLocal && l.local == nil:
		return nil, fmt.Errorf("%w: Options.Failure FailLocal needs Options.Local", ErrInvalidOption)
	case l.maxLog < 0:
		return nil, fmt.Errorf("%w: Options.MaxLogEvents %d, want 0 (default) or more", ErrInvalidOption, l.maxLog)
	}
	l.clock = wait.Or(l.clock)
	if l.mode == PerInstance && l.instance == "" {
		h, _ := os.Hostname()
		l.instance = h + "-" + strconv.Itoa(os.Getpid())
	}
	return l, nil
}
