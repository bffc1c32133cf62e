package queue

import (
	"context"
	"errors"
	"fmt"

	"github.com/hourglass-io/hourglass/ratelimit"
)

// MaxCap is the largest concurrency cap a tube may have.
const MaxCap = 1 << 30

// ErrNoLimits is returned by the limit methods of a Queue whose store does
// not implement LimitStore.
var ErrNoLimits = errors.New("queue: the store does not limit tubes")

// Limits bound the reserves of one tube. The store checks them in the same
// atomic step that reserves, so every client is held to them, a beanstalkd
// client included. The zero value limits nothing.
type Limits struct {
	// Rate is at most Rate.Events reserves per Rate.Per, with up to
	// Rate.BurstOrDefault() at one instant, counted by GCRA as package
	// ratelimit counts (Rate.Algorithm must be GCRA and Rate.Quota 0 or 1).
	// The zero Limit is no rate.
	Rate ratelimit.Limit
	// Cap is at most Cap jobs of the tube reserved at once, across every
	// client; 0 is no cap. A job counts from its reserve until it is
	// deleted, released, buried or its TTR ends.
	Cap int
	// Group is the group template: the limits of each group of the tube
	// (its jobs put with a NewJob.Group, in the tube "tube;group"), each
	// group counted on its own, on top of Rate and Cap, which count the
	// tube and all its groups together. The zero value limits no group.
	Group GroupLimits
}

// IsZero reports whether l limits nothing.
func (l Limits) IsZero() bool { return l == Limits{} }

// HasRate reports whether l has a rate.
func (l Limits) HasRate() bool { return l.Rate != (ratelimit.Limit{}) }

// Validate reports why l cannot be set, as an error wrapping ErrInvalid, or
// nil.
func (l Limits) Validate() error {
	if err := validateLimit("", l.Rate, l.Cap); err != nil {
		return err
	}
	return validateLimit("group ", l.Group.Rate, l.Group.Cap)
}

func validateLimit(what string, r ratelimit.Limit, cap int) error {
	if cap < 0 || cap > MaxCap {
		return invalid(what+"cap", "%d, want 0 (none) to %d", cap, MaxCap)
	}
	if r == (ratelimit.Limit{}) {
		return nil
	}
	if r.Algorithm != ratelimit.GCRA {
		return invalid(what+"rate", "algorithm %v, want gcra", r.Algorithm)
	}
	if r.QuotaOrDefault() != 1 {
		return invalid(what+"rate", "quota %d, want 1: each reserve costs one", r.Quota)
	}
	if err := r.Validate(); err != nil {
		return fmt.Errorf("%w: %srate: %v", ErrInvalid, what, err)
	}
	return nil
}

// normal returns l with its bursts written out, as stores keep them.
func (l Limits) normal() Limits {
	if l.HasRate() {
		l.Rate.Burst = l.Rate.BurstOrDefault()
		l.Rate.Quota = 0
	}
	if l.Group.HasRate() {
		l.Group.Rate.Burst = l.Group.Rate.BurstOrDefault()
		l.Group.Rate.Quota = 0
	}
	return l
}

// String describes l, e.g. "rate 100/1s burst 100, cap 5" or "cap 50;
// per group rate 1/1s burst 1, cap 2".
func (l Limits) String() string {
	if l.Group.IsZero() {
		return l.tubeString()
	}
	if l.Rate == (ratelimit.Limit{}) && l.Cap == 0 {
		return "per group " + l.Group.String()
	}
	return l.tubeString() + "; per group " + l.Group.String()
}

func (l Limits) tubeString() string {
	switch {
	case l.IsZero():
		return "none"
	case !l.HasRate():
		return fmt.Sprintf("cap %d", l.Cap)
	case l.Cap == 0:
		return fmt.Sprintf("rate %d/%v burst %d", l.Rate.Events, l.Rate.Per, l.Rate.BurstOrDefault())
	}
	return fmt.Sprintf("rate %d/%v burst %d, cap %d", l.Rate.Events, l.Rate.Per, l.Rate.BurstOrDefault(), l.Cap)
}

// LimitStore is implemented by stores that limit tubes (both back ends do).
// The limits of a tube outlive the tube: they stay set while the tube comes
// and goes, until cleared.
//
// Store.Reserve honours them: it takes a job of a limited tube only when
// fewer than Cap of the tube's jobs are reserved and the rate allows one
// more reserve at that instant, and it charges the rate for each job it
// takes. A tube its limits hold back is skipped as a paused tube is; when a
// rate holds back a tube with ready jobs and the reserve gets nothing, Next
// is no later than the time the rate frees. A delete or bury of a reserved
// job of a capped tube wakes the tube's waiters (Notifier). ReserveJob is
// not held back (as by a pause) and does not charge the rate, but the job
// counts toward the cap while reserved. TubeStats.Limits and LimitHolds
// report them.
//
// A LimitStore serves a tube's groups in turn and holds each to the
// tube's group template (Limits.Group): a reserve of the tube takes from
// its own jobs and its groups' in rotation, one job per turn, the one
// served longest ago first, skipping groups their limits hold back; the
// tube's cap and rate count the tube and its groups together; a wake-up
// of a group's tube wakes the tube's waiters.
type LimitStore interface {
	// SetLimits sets tube's limits (l is valid and its Rate's Burst
	// written out), or clears them when l is zero, and wakes the tube's
	// waiters. A store that cannot enforce a limit on tube atomically (a
	// tube of several partitions on Redis) returns an error wrapping
	// ErrInvalid and changes nothing.
	SetLimits(ctx context.Context, tube string, l Limits) error
	// TubeLimits returns tube's limits: zero when it has none.
	TubeLimits(ctx context.Context, tube string) (Limits, error)
	// LimitedTubes returns every tube with limits and its limits. On a
	// store spread over several nodes it is eventually consistent.
	LimitedTubes(ctx context.Context) (map[string]Limits, error)
}

func (q *Queue) limitStore() (LimitStore, error) {
	ls, ok := q.store.(LimitStore)
	if !ok {
		return nil, ErrNoLimits
	}
	return ls, nil
}

// SetLimits sets tube's limits, or clears them when l is zero (ClearLimits).
// Reserves of every client are held to them from the moment it returns. It
// returns ErrInvalidTube for a bad name, ErrInvalid for bad limits, and
// ErrNoLimits when the store cannot limit tubes.
func (q *Queue) SetLimits(ctx context.Context, tube string, l Limits) error {
	if err := CheckTube(tube); err != nil {
		return err
	}
	if IsGroupTube(tube) {
		return errGroupLimits(tube)
	}
	if err := l.Validate(); err != nil {
		return err
	}
	ls, err := q.limitStore()
	if err != nil {
		return err
	}
	return ls.SetLimits(ctx, tube, l.normal())
}

// ClearLimits removes tube's limits (SetLimits with zero Limits).
func (q *Queue) ClearLimits(ctx context.Context, tube string) error {
	return q.SetLimits(ctx, tube, Limits{})
}

// TubeLimits returns tube's limits, zero when it has none.
func (q *Queue) TubeLimits(ctx context.Context, tube string) (Limits, error) {
	if err := CheckTube(tube); err != nil {
		return Limits{}, err
	}
	ls, err := q.limitStore()
	if err != nil {
		return Limits{}, err
	}
	return ls.TubeLimits(ctx, tube)
}

// LimitedTubes returns every tube with limits, and its limits.
func (q *Queue) LimitedTubes(ctx context.Context) (map[string]Limits, error) {
	ls, err := q.limitStore()
	if err != nil {
		return nil, err
	}
	return ls.LimitedTubes(ctx)
}
