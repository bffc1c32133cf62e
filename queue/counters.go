package queue

import (
	"context"
	"fmt"
	"time"
)

// CounterLog is implemented by stores that keep a history of the tubes'
// counters, shared by every process using the store and kept across
// restarts as the jobs are: samples of each tube's cumulative counters,
// by minute, each minute kept for a bounded time. The dashboard charts
// jobs processed and failed per tube per minute from the differences
// between successive samples, so that any number of servers may record
// the same minute without counting anything twice.
//
// Time: a minute is named by the caller (Unix time divided by one
// minute); how long a minute is kept runs on the store's clock from its
// first record.
type CounterLog interface {
	// RecordCounters stores samples, all of one minute, under (minute,
	// tube), replacing any sample of the same pair, and keeps the
	// minute's samples for keep after its first record. At most
	// MaxCounterSamples samples; keep from one minute to MaxCounterKeep.
	RecordCounters(ctx context.Context, minute int64, keep time.Duration, samples []CounterSample) error
	// CounterHistory returns the kept samples of the minutes from to to,
	// both included (at most MaxCounterMinutes of them), ordered by
	// minute, then tube.
	CounterHistory(ctx context.Context, from, to int64) ([]CounterSample, error)
}

// CounterSample is a tube's cumulative counters (TubeStats) as read at a
// minute.
type CounterSample struct {
	Minute int64
	Tube   string
	// The counters of TubeStats of the same names (Puts: TotalJobs).
	Puts, Reserves, Deletes, Buries, Timeouts int64
}

// Bounds of a CounterLog's arguments.
const (
	MaxCounterSamples = 1000
	MaxCounterMinutes = 2 * 24 * 60
	MaxCounterKeep    = 7 * 24 * time.Hour
)

// CheckCounters returns an error wrapping ErrInvalid (or ErrInvalidTube)
// when a RecordCounters call's arguments are out of bounds.
func CheckCounters(minute int64, keep time.Duration, samples []CounterSample) error {
	switch {
	case minute < 0:
		return fmt.Errorf("%w: counter minute %d: want 0 or more", ErrInvalid, minute)
	case keep < time.Minute || keep > MaxCounterKeep:
		return fmt.Errorf("%w: counter keep %v: want 1m to %v", ErrInvalid, keep, MaxCounterKeep)
	case len(samples) > MaxCounterSamples:
		return fmt.Errorf("%w: %d counter samples: want at most %d", ErrInvalid, len(samples), MaxCounterSamples)
	}
	for _, s := range samples {
		if err := CheckTube(s.Tube); err != nil {
			return err
		}
		if s.Minute != minute {
			return fmt.Errorf("%w: a counter sample of minute %d in a record of minute %d", ErrInvalid, s.Minute, minute)
		}
	}
	return nil
}

// CheckCounterRange returns an error wrapping ErrInvalid when a CounterHistory call's range is
// empty, negative or longer than MaxCounterMinutes.
func CheckCounterRange(from, to int64) error {
	if from < 0 || to < from || to-from >= MaxCounterMinutes {
		return fmt.Errorf("%w: counter minutes %d to %d: want 0 <= from <= to, at most %d minutes", ErrInvalid, from, to, MaxCounterMinutes)
	}
	return nil
}
