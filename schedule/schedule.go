package schedule

import (
	"fmt"
	"time"

	"github.com/hourglass-io/hourglass/queue"
)

// MaxNameLen is the longest schedule name, in bytes.
const MaxNameLen = 200

// DefaultGrace is the lateness up to which a tick counts as on time when
// Schedule.Grace is zero.
const DefaultGrace = time.Minute

// KeepFires is how many of its last fires a schedule keeps.
const KeepFires = 10

// maxPlanTicks bounds the ticks one Plan walks over; a longer run of missed
// ticks is skipped in bulk (counted approximately as maxPlanTicks).
const maxPlanTicks = 100_000

// Schedule declares a periodic job: on each tick of Spec, read in Zone, a
// job with Job's fields is put into Job.Tube.
type Schedule struct {
	// Name identifies the schedule (1 to MaxNameLen printable ASCII bytes).
	Name string
	// Spec is a cron expression, a macro or "@every <duration>" (ParseSpec).
	Spec string
	// Zone is an IANA time zone name ("Europe/Berlin"); empty means UTC.
	Zone string
	// Start, when set, is the first instant a tick may fire at, and the
	// anchor of an "@every" spec's ticks.
	Start time.Time
	// End, when set, is the instant after which no tick fires.
	End time.Time
	// Job is the job put on each tick.
	Job Job
	// Misfire says what happens to ticks that passed while nothing fired
	// them; the zero value is Skip.
	Misfire Policy
	// Grace is how late a tick may fire and still count as on time; zero
	// means DefaultGrace.
	Grace time.Duration

	// Overlap says what a tick does while the schedule's previous job is
	// still in the queue; the zero value is OverlapAllow.
	Overlap Overlap `json:",omitempty"`
	// PauseOnFailure pauses the schedule when a fire finds its previous
	// job buried: the fire puts nothing and the state records why
	// (State.PauseReason) until Resume.
	PauseOnFailure bool `json:",omitempty"`
}

// Overlap is an overlap policy: what a tick of a schedule does while the
// job of its previous fire (State.LastJob) is still in the queue. The
// store decides it in the same atomic operation that fires the tick.
type Overlap uint8

// Overlap policies.
const (
	// OverlapAllow puts every tick's job whatever the previous one is
	// doing.
	OverlapAllow Overlap = iota
	// OverlapSkip puts nothing while the previous job is ready, delayed or
	// reserved; the tick is counted in State.Skips. A buried previous job
	// does not hold the next tick back.
	OverlapSkip
	// OverlapBufferOne lets at most one job wait behind the previous one,
	// and start only once it has ended: while the previous job is
	// reserved the tick puts its job held behind it (delayed with no due
	// time), and the store makes it ready when the previous job is
	// deleted, finished, buried or cancelled (not when it is released or
	// its TTR runs out: it is still live). The tick puts nothing (counted
	// in State.Skips) while the previous job is ready, delayed or held.
	OverlapBufferOne
	// OverlapCancelPrevious cancels the previous job if it is still in
	// the queue, as queue.Cancel does (a holder is told), then puts the
	// tick's job.
	OverlapCancelPrevious
)

// String returns the policy's name as ParseOverlap reads it: "allow",
// "skip", "buffer_one" or "cancel_previous".
func (o Overlap) String() string {
	if int(o) < len(overlapNames) {
		return overlapNames[o]
	}
	return fmt.Sprintf("overlap(%d)", uint8(o))
}

var overlapNames = []string{"allow", "skip", "buffer_one", "cancel_previous"}

// ParseOverlap reads a policy's name ("" is OverlapAllow); an unknown name
// is ErrInvalidOption.
func ParseOverlap(name string) (Overlap, error) {
	if name == "" {
		return OverlapAllow, nil
	}
	for i, n := range overlapNames {
		if n == name {
			return Overlap(i), nil
		}
	}
	return 0, fmt.Errorf("%w: Overlap %q: want one of allow, skip, buffer_one, cancel_previous", ErrInvalidOption, name)
}

// Job is the job a schedule puts on each tick.
type Job struct {
	Tube     string
	Body     []byte
	Priority uint32
	// TTR is the job's time to run; 0 means queue.DefaultTTR.
	TTR time.Duration
}

// PolicyKind names a misfire policy.
type PolicyKind uint8

// Misfire policies.
const (
	// PolicySkip fires a due tick only when it is at most Grace late; the
	// others are dropped.
	PolicySkip PolicyKind = iota
	// PolicyFireOnce fires the latest due tick however late, and drops the
	// earlier ones.
	PolicyFireOnce
	// PolicyCatchUp fires the latest N due ticks, oldest first, and drops
	// the earlier ones.
	PolicyCatchUp
)

// Policy is a misfire policy: what happens to ticks that passed while no
// process fired them (all processes down, the store unreachable).
type Policy struct {
	Kind PolicyKind
	// N is the most missed ticks PolicyCatchUp fires.
	N int
}

// Skip returns the policy that drops ticks later than the grace.
func Skip() Policy { return Policy{Kind: PolicySkip} }

// FireOnce returns the policy that fires one tick for a run of missed ones.
func FireOnce() Policy { return Policy{Kind: PolicyFireOnce} }

// CatchUp returns the policy that fires at most n missed ticks.
func CatchUp(n int) Policy { return Policy{Kind: PolicyCatchUp, N: n} }

// String returns "skip", "fire-once" or "catch-up(N)".
func (p Policy) String() string {
	switch p.Kind {
	case PolicySkip:
		return "skip"
	case PolicyFireOnce:
		return "fire-once"
	case PolicyCatchUp:
		return fmt.Sprintf("catch-up(%d)", p.N)
	}
	return fmt.Sprintf("policy(%d)", p.Kind)
}

// MaxCatchUp is the largest N of CatchUp.
const MaxCatchUp = 10_000

// Validate checks every field and returns the parsed spec. Errors wrap
// ErrInvalidName, ErrInvalidSpec, ErrInvalidZone or ErrInvalidOption and
// name the field.
func (s *Schedule) Validate() (*Spec, error) {
	if err := checkName(s.Name); err != nil {
		return nil, err
	}
	loc, err := LoadZone(s.Zone)
	if err != nil {
		return nil, err
	}
	spec, err := ParseSpec(s.Spec, loc)
	if err != nil {
		return nil, fmt.Errorf("Spec: %w", err)
	}
	if !s.Start.IsZero() && !s.End.IsZero() && !s.End.After(s.Start) {
		return nil, fmt.Errorf("%w: End %v is not after Start %v", ErrInvalidOption, s.End, s.Start)
	}
	if !queue.ValidTube(s.Job.Tube) {
		return nil, fmt.Errorf("%w: Job.Tube %q is not a valid tube name", ErrInvalidOption, s.Job.Tube)
	}
	if s.Job.TTR != 0 && s.Job.TTR < time.Second {
		return nil, fmt.Errorf("%w: Job.TTR %v: want 0 (default) or at least 1s", ErrInvalidOption, s.Job.TTR)
	}
	if len(s.Job.Body) > MaxBody {
		return nil, fmt.Errorf("%w: Job.Body is %d bytes, at most %d", ErrInvalidOption, len(s.Job.Body), MaxBody)
	}
	switch s.Misfire.Kind {
	case PolicySkip, PolicyFireOnce:
	case PolicyCatchUp:
		if s.Misfire.N < 1 || s.Misfire.N > MaxCatchUp {
			return nil, fmt.Errorf("%w: Misfire: catch-up N %d: want 1 to %d", ErrInvalidOption, s.Misfire.N, MaxCatchUp)
		}
	default:
		return nil, fmt.Errorf("%w: Misfire: unknown policy %d", ErrInvalidOption, s.Misfire.Kind)
	}
	if s.Grace < 0 {
		return nil, fmt.Errorf("%w: Grace %v is negative", ErrInvalidOption, s.Grace)
	}
	if s.Overlap > OverlapCancelPrevious {
		return nil, fmt.Errorf("%w: Overlap: unknown policy %d", ErrInvalidOption, s.Overlap)
	}
	return spec, nil
}

// MaxBody is the largest job body a schedule may carry, in bytes.
const MaxBody = 64 << 10

func checkName(name string) error {
	if name == "" || len(name) > MaxNameLen {
		return fmt.Errorf("%w: Name %q: want 1 to %d bytes", ErrInvalidName, name, MaxNameLen)
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; c <= ' ' || c > '~' {
			return fmt.Errorf("%w: Name %q: byte %d is not printable ASCII", ErrInvalidName, name, i)
		}
	}
	return nil
}

// LoadZone loads an IANA time zone; "" and "UTC" are UTC. "Local" is
// refused: processes sharing a store may be in different zones.
func LoadZone(name string) (*time.Location, error) {
	if name == "" {
		return time.UTC, nil
	}
	if name == "Local" {
		return nil, fmt.Errorf("%w: Zone %q: name an IANA zone", ErrInvalidZone, name)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("%w: Zone %q: %v", ErrInvalidZone, name, err)
	}
	return loc, nil
}

func (s *Schedule) grace() time.Duration {
	if s.Grace == 0 {
		return DefaultGrace
	}
	return s.Grace
}

// FirstTick returns the first tick of s at or after the instant from,
// honouring Start and End; zero when there is none.
func (s *Schedule) FirstTick(spec *Spec, from time.Time) time.Time {
	if !s.Start.IsZero() && from.Before(s.Start) {
		from = s.Start
	}
	return s.bounded(spec.NextAfter(from.Add(-time.Nanosecond), s.Start))
}

// bounded returns t, or zero when t is past End.
func (s *Schedule) bounded(t time.Time) time.Time {
	if t.IsZero() || (!s.End.IsZero() && t.After(s.End)) {
		return time.Time{}
	}
	return t
}

// NextTicks returns up to n ticks of s strictly after t within Start and End.
func (s *Schedule) NextTicks(spec *Spec, t time.Time, n int) []time.Time {
	var out []time.Time
	next := s.FirstTick(spec, t.Add(time.Nanosecond))
	for len(out) < n && !next.IsZero() {
		out = append(out, next)
		next = s.bounded(spec.NextAfter(next, s.Start))
	}
	return out
}

// A Plan is what to do with a schedule whose next tick is due: fire Tick
// (unless zero: every due tick is dropped), drop Skipped ticks, and make
// Next the schedule's next tick (zero: none, the schedule has ended).
type Plan struct {
	Tick    time.Time
	Skipped int
	Next    time.Time
}

// PlanFire applies the misfire policy to a schedule whose stored next tick
// is next, at the store's time now (next <= now).
func (s *Schedule) PlanFire(spec *Spec, next, now time.Time) Plan {
	keep := 1
	if s.Misfire.Kind == PolicyCatchUp {
		keep = s.Misfire.N
	}
	// Walk the due ticks, keeping the latest `keep` in a ring.
	ring := make([]time.Time, 0, min(keep, 64))
	total := 0
	t := next
	for !t.IsZero() && !t.After(now) {
		if len(ring) < keep {
			ring = append(ring, t)
		} else {
			copy(ring, ring[1:])
			ring[len(ring)-1] = t
		}
		total++
		if total >= maxPlanTicks && spec.every > 0 {
			// Jump to the last due tick arithmetically.
			last := spec.NextAfter(now, s.Start).Add(-spec.every)
			if last.After(t) {
				ring = append(ring[:0], last)
				total += int(last.Sub(t) / spec.every)
				t = last
			}
		}
		t = s.bounded(spec.NextAfter(t, s.Start))
	}
	if total == 0 {
		return Plan{Next: next}
	}
	p := Plan{}
	switch s.Misfire.Kind {
	case PolicySkip:
		last := ring[len(ring)-1]
		p.Skipped = total - 1
		if now.Sub(last) <= s.grace() {
			p.Tick = last
			p.Next = t
		} else {
			p.Skipped = total
			p.Next = t
		}
		// Earlier ticks within the grace fire in order rather than being dropped.
		if total > 1 && now.Sub(next) <= s.grace() {
			p = Plan{Tick: next, Next: s.bounded(spec.NextAfter(next, s.Start))}
		}
	case PolicyFireOnce:
		p.Tick = ring[len(ring)-1]
		p.Skipped = total - 1
		p.Next = t
		if total > 1 && now.Sub(next) <= s.grace() {
			p = Plan{Tick: next, Next: s.bounded(spec.NextAfter(next, s.Start))}
		}
	case PolicyCatchUp:
		p.Tick = ring[0]
		p.Skipped = total - len(ring)
		p.Next = s.bounded(spec.NextAfter(p.Tick, s.Start))
	}
	return p
}
