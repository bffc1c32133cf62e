package schedule

import (
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// MinEvery is the shortest interval of an "@every" spec.
const MinEvery = 10 * time.Millisecond

// searchLimit bounds the search for a cron expression's next match: a spec
// such as "0 0 30 2 *" (February 30) never matches and yields no tick.
const searchLimit = 5 * 366 * 24 * time.Hour

// Spec is a parsed schedule spec: the ticks of a cron expression in a time
// zone, or a fixed interval.
//
// Cron ticks follow the wall clock of the zone, with one rule for the hours
// that daylight saving skips or repeats ("first instant" rule):
//   - a wall time that does not exist on a day (the clocks jump over it)
//     fires at the first instant after the jump: a daily 02:30 in
//     Europe/Berlin fires at 03:00 CEST on the last Sunday of March; several
//     skipped wall times collapse into that one tick;
//   - a wall time that happens twice fires once, at its first occurrence
//     (summer time): a daily 02:30 in Europe/Berlin fires at 02:30 CEST on
//     the last Sunday of October and not at 02:30 CET an hour later.
//
// An "@every d" spec ticks every d of elapsed time, whatever the zone, at
// anchor + k·d for whole k, where the anchor is the schedule's Start or,
// without one, the Unix epoch; so every process computes the same ticks.
type Spec struct {
	text  string
	every time.Duration
	cron  *cron.SpecSchedule // fields matched against the wall clock; Location UTC
	loc   *time.Location
}

var fieldNames5 = []string{"minute", "hour", "day of month", "month", "day of week"}
var fieldNames6 = []string{"second", "minute", "hour", "day of month", "month", "day of week"}

var parser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// ParseSpec parses spec for the time zone loc (nil means UTC). It accepts
// the standard five fields (minute hour day-of-month month day-of-week), an
// optional leading seconds field (six fields), the macros @yearly,
// @annually, @monthly, @weekly, @daily, @midnight and @hourly, and
// "@every <duration>" with a Go duration of at least MinEvery. An error
// wraps ErrInvalidSpec and names the bad field.
func ParseSpec(spec string, loc *time.Location) (*Spec, error) {
	if loc == nil {
		loc = time.UTC
	}
	text := strings.TrimSpace(spec)
	if text == "" {
		return nil, fmt.Errorf("%w: empty", ErrInvalidSpec)
	}
	if strings.HasPrefix(text, "TZ=") || strings.HasPrefix(text, "CRON_TZ=") {
		return nil, fmt.Errorf("%w: %q: give the time zone in the Zone field, not in the spec", ErrInvalidSpec, spec)
	}
	if rest, ok := strings.CutPrefix(text, "@every"); ok {
		d, err := time.ParseDuration(strings.TrimSpace(rest))
		if err != nil {
			return nil, fmt.Errorf("%w: %q: interval: %v", ErrInvalidSpec, spec, err)
		}
		if d < MinEvery {
			return nil, fmt.Errorf("%w: %q: interval %v is below the minimum %v", ErrInvalidSpec, spec, d, MinEvery)
		}
		return &Spec{text: text, every: d, loc: loc}, nil
	}
	sched, err := parser.Parse(text)
	if err != nil {
		return nil, fmt.Errorf("%w: %q: %s", ErrInvalidSpec, spec, badField(text, err))
	}
	cs, ok := sched.(*cron.SpecSchedule)
	if !ok { // the parser gives @every as a ConstantDelaySchedule; handled above
		return nil, fmt.Errorf("%w: %q", ErrInvalidSpec, spec)
	}
	c := *cs
	c.Location = time.UTC
	return &Spec{text: text, cron: &c, loc: loc}, nil
}

// badField names the field of a cron expression that fails to parse, by
// parsing each field alone with the others set to "*".
func badField(text string, err error) string {
	if strings.HasPrefix(text, "@") {
		return fmt.Sprintf("unknown macro %q", strings.Fields(text)[0])
	}
	fields := strings.Fields(text)
	var names []string
	switch len(fields) {
	case 5:
		names = fieldNames5
	case 6:
		names = fieldNames6
	default:
		return fmt.Sprintf("has %d fields, want 5 (minute hour day-of-month month day-of-week) or 6 (with seconds first)", len(fields))
	}
	for i := range fields {
		probe := make([]string, len(fields))
		for j := range probe {
			probe[j] = "*"
		}
		probe[i] = fields[i]
		if _, e := parser.Parse(strings.Join(probe, " ")); e != nil {
			return fmt.Sprintf("%s field %q: %v", names[i], fields[i], e)
		}
	}
	return err.Error()
}

// String returns the spec as given (trimmed).
func (s *Spec) String() string { return s.text }

// Every returns the interval of an "@every" spec, 0 for a cron expression.
func (s *Spec) Every() time.Duration { return s.every }

// Location returns the time zone the spec's wall clock is read in.
func (s *Spec) Location() *time.Location { return s.loc }

// NextAfter returns the first tick strictly after t, with anchor the
// start of an "@every" spec's ticks (zero: the Unix epoch). It returns the
// zero Time when a cron expression has no tick within five years.
func (s *Spec) NextAfter(t, anchor time.Time) time.Time {
	if s.every > 0 {
		if anchor.IsZero() {
			anchor = time.Unix(0, 0)
		}
		if t.Before(anchor) {
			return anchor
		}
		k := t.Sub(anchor)/s.every + 1
		return anchor.Add(k * s.every)
	}
	// Walk the matching wall-clock times (civil times, carried as UTC)
	// upwards from t's own wall time; the fire instant of a civil time
	// never decreases as the civil time increases, and no civil time before
	// t's wall time fires after t, so the first one firing after t is the
	// answer.
	wall := civil(t.In(s.loc))
	limit := wall.Add(searchLimit)
	c := wall.Truncate(time.Second).Add(-time.Second)
	for {
		c = s.cron.Next(c)
		if c.IsZero() || c.After(limit) {
			return time.Time{}
		}
		if f := fireInstant(c, s.loc); f.After(t) {
			return f
		}
	}
}

// Next returns up to n ticks strictly after t (see NextAfter).
func (s *Spec) Next(t, anchor time.Time, n int) []time.Time {
	var out []time.Time
	for len(out) < n {
		t = s.NextAfter(t, anchor)
		if t.IsZero() {
			break
		}
		out = append(out, t)
	}
	return out
}

// civil returns t's wall clock as the same fields in UTC.
func civil(t time.Time) time.Time {
	y, mo, d := t.Date()
	h, mi, sec := t.Clock()
	return time.Date(y, mo, d, h, mi, sec, t.Nanosecond(), time.UTC)
}

// fireInstant returns the instant that the wall time c (fields in UTC)
// fires at in loc: its first occurrence, or the end of the gap when the
// clocks skip it.
func fireInstant(c time.Time, loc *time.Location) time.Time {
	var best time.Time
	minOff := 1 << 30
	for _, probe := range []time.Duration{-48 * time.Hour, 0, 48 * time.Hour} {
		_, off := c.Add(probe).In(loc).Zone()
		minOff = min(minOff, off)
		cand := c.Add(-time.Duration(off) * time.Second)
		if civil(cand.In(loc)).Equal(c) && (best.IsZero() || cand.Before(best)) {
			best = cand
		}
	}
	if !best.IsZero() {
		return best
	}
	// A gap: read c with the offset before the jump; that instant lies
	// after the jump, whose start is the fire instant.
	x := c.Add(-time.Duration(minOff) * time.Second).In(loc)
	start, _ := x.ZoneBounds()
	if start.IsZero() {
		return x
	}
	return start
}
