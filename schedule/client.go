package schedule

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/hourglass-io/hourglass/internal/tracing"
	"github.com/hourglass-io/hourglass/internal/wait"
)

// Options configures a Client. The zero value is usable.
type Options struct {
	// PollInterval is how often a Scheduler rechecks when its store is not
	// a Notifier (it still sleeps until the earliest due tick when that is
	// sooner). Zero means one second.
	PollInterval time.Duration
	// BatchSize is the most due schedules one Due call returns; zero means
	// 100.
	BatchSize int
	// Concurrency is how many due schedules a Client fires at once (each
	// schedule's own ticks always one after another, in order); zero
	// means 8. A store that serializes its operations (the embedded
	// engine) gains nothing from more than 1; on Redis, fires at once
	// share round trips.
	Concurrency int
	// OnFire, when set, is called after each tick the Client fires. The
	// Client calls OnFire and OnError one at a time.
	OnFire func(name string, f Fire)
	// OnError, when set, is called with errors of the Scheduler's loop
	// (the store unreachable); the loop retries after PollInterval.
	OnError func(error)
	// TracerProvider makes a span of each fire ("schedule fire",
	// docs/tracing.md), whose context the tick's job carries; nil means
	// OpenTelemetry's global provider. While neither is set (or the
	// provider is a no-op one) no span is made.
	TracerProvider trace.TracerProvider
	// Clock is the time Run reads and waits on until the next tick, the
	// next poll or a retry; nil means the machine's. A suite passes a
	// manual clock (storetest.Clock), with the store on the same clock, to
	// drive time. The ticks themselves are on the store's clock
	// (Store.Now).
	Clock wait.Clock
}

// Client manages schedules in a Store and, with Run, fires their ticks.
// Any number of Clients, in any number of processes, may share one store
// and run at once: each tick is put exactly once. A Client is safe for
// concurrent use.
type Client struct {
	store  Store
	opt    Options
	waiter *wait.Waiter // Run's: woken by a change through this Client or the Notifier
	clock  wait.Clock   // Options.Clock, or the machine's
	trace  *tracing.Source

	mu      sync.Mutex
	running bool

	hookMu sync.Mutex // serializes OnFire and OnError
}

// New returns a Client of store.
func New(store Store, opt *Options) (*Client, error) {
	c := &Client{store: store}
	if opt != nil {
		c.opt = *opt
	}
	c.clock = wait.Or(c.opt.Clock)
	c.waiter = wait.NewOn(c.clock)
	if c.opt.PollInterval < 0 {
		return nil, fmt.Errorf("%w: PollInterval %v is negative", ErrInvalidOption, c.opt.PollInterval)
	}
	if c.opt.BatchSize < 0 || c.opt.BatchSize > 10_000 {
		return nil, fmt.Errorf("%w: BatchSize %d: want 0 to 10000", ErrInvalidOption, c.opt.BatchSize)
	}
	if c.opt.Concurrency < 0 || c.opt.Concurrency > 1000 {
		return nil, fmt.Errorf("%w: Concurrency %d: want 0 to 1000", ErrInvalidOption, c.opt.Concurrency)
	}
	if c.opt.Concurrency == 0 {
		c.opt.Concurrency = 8
	}
	if c.opt.PollInterval == 0 {
		c.opt.PollInterval = time.Second
	}
	if c.opt.BatchSize == 0 {
		c.opt.BatchSize = 100
	}
	c.trace = tracing.New(c.opt.TracerProvider)
	return c, nil
}

// neverRef is where Set looks for a cron spec's first tick to tell one
// that never fires: the five years NextAfter searches from it hold two
// February 29ths.
var neverRef = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// Set creates or updates a schedule; setting an unchanged definition
// changes nothing. The first tick is the first after now on the store's
// clock (Store.Now), whatever the clock of this process says.
//
// A cron spec that no date matches ("0 0 30 2 *", February 30th) is
// refused with ErrInvalidSpec: it would never fire.
func (c *Client) Set(ctx context.Context, s Schedule) (State, error) {
	spec, err := s.Validate()
	if err != nil {
		return State{}, err
	}
	if spec.Every() == 0 && spec.NextAfter(neverRef, time.Time{}).IsZero() {
		return State{}, fmt.Errorf("Spec: %w: %q never fires: no date matches it", ErrInvalidSpec, s.Spec)
	}
	if s.Job.Body == nil {
		s.Job.Body = []byte{}
	}
	next, err := c.firstTick(ctx, &s, spec)
	if err != nil {
		return State{}, err
	}
	return c.changed(c.store.Set(ctx, State{Schedule: s, Next: next}))
}

// firstTick returns the first tick of s after now on the store's clock
// (Store.Now): where a schedule set or resumed starts.
func (c *Client) firstTick(ctx context.Context, s *Schedule, spec *Spec) (time.Time, error) {
	now, err := c.store.Now(ctx)
	if err != nil {
		return time.Time{}, err
	}
	return s.FirstTick(spec, now.Add(time.Nanosecond)), nil
}

// changed passes on the result of a change to a schedule, waking this
// Client's Run when the change was made: its next tick may be sooner.
func (c *Client) changed(st State, err error) (State, error) {
	if err == nil {
		c.waiter.Wake()
	}
	return st, err
}

// Get returns the schedule name (ErrNotFound).
func (c *Client) Get(ctx context.Context, name string) (State, error) {
	if err := checkName(name); err != nil {
		return State{}, err
	}
	return c.store.Get(ctx, name)
}

// List returns up to limit schedules (1 to 1000) named after after.
func (c *Client) List(ctx context.Context, after string, limit int) ([]State, error) {
	if limit < 1 || limit > 1000 {
		return nil, fmt.Errorf("%w: limit %d: want 1 to 1000", ErrInvalidOption, limit)
	}
	return c.store.List(ctx, after, limit)
}

// Delete removes a schedule (ErrNotFound).
func (c *Client) Delete(ctx context.Context, name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	return c.store.Delete(ctx, name)
}

// Pause stops a schedule firing; its ticks pass unfired.
func (c *Client) Pause(ctx context.Context, name string) (State, error) {
	if err := checkName(name); err != nil {
		return State{}, err
	}
	return c.store.SetPaused(ctx, name, true, time.Time{})
}

// Resume lets a paused schedule fire again from its first tick after now
// on the store's clock (Store.Now); the ticks that passed while it was
// paused are not fired.
func (c *Client) Resume(ctx context.Context, name string) (State, error) {
	st, err := c.Get(ctx, name)
	if err != nil {
		return State{}, err
	}
	spec, err := st.Schedule.Validate()
	if err != nil {
		return State{}, err
	}
	next, err := c.firstTick(ctx, &st.Schedule, spec)
	if err != nil {
		return State{}, err
	}
	return c.changed(c.store.SetPaused(ctx, name, false, next))
}

// Trigger puts the schedule's job now, outside its spec, and returns the
// fire; the schedule's next tick is unchanged.
func (c *Client) Trigger(ctx context.Context, name string) (Fire, error) {
	if err := checkName(name); err != nil {
		return Fire{}, err
	}
	res, err := c.fire(ctx, FireRequest{Name: name, Manual: true}, "")
	if err != nil {
		return Fire{}, err
	}
	if len(res.State.Last) == 0 {
		return Fire{}, fmt.Errorf("schedule: trigger of %q recorded no fire", name)
	}
	return res.State.Last[0], nil
}

// NextTimes returns up to n (1 to 1000) next fire times of schedule name
// after its stored next tick's predecessor: the stored Next first.
func (c *Client) NextTimes(ctx context.Context, name string, n int) ([]time.Time, error) {
	if n < 1 || n > 1000 {
		return nil, fmt.Errorf("%w: n %d: want 1 to 1000", ErrInvalidOption, n)
	}
	st, err := c.Get(ctx, name)
	if err != nil {
		return nil, err
	}
	spec, err := st.Schedule.Validate()
	if err != nil {
		return nil, err
	}
	if st.Next.IsZero() {
		return nil, nil
	}
	return append([]time.Time{st.Next}, st.NextTicks(spec, st.Next, n-1)...), nil
}

// recheck is how long a Run whose store is a Notifier waits at most when
// no schedule has a next tick: a safety net against an announcement lost
// while the store was unreachable.
const recheck = time.Hour

// Run fires due ticks until ctx ends, then returns ctx's error. It waits
// until the earliest due tick, and is woken sooner when a schedule changes
// (through this Client, or any process when the store is a Notifier). A
// Client runs at most one Run at a time.
func (c *Client) Run(ctx context.Context) error {
	c.mu.Lock()
	if c.running {
		c.mu.Unlock()
		return errors.New("schedule: Run already running")
	}
	c.running = true
	c.mu.Unlock()
	defer func() { c.mu.Lock(); c.running = false; c.mu.Unlock() }()

	notified := false
	if n, ok := c.store.(Notifier); ok {
		stop, err := n.Listen(ctx, TopicDue, c.waiter.WakeTopic)
		if err == nil {
			notified = true
			defer stop()
		} else {
			c.onError(err)
		}
	}
	var poll time.Duration // only for a store that cannot wake Run
	if !notified {
		poll = c.opt.PollInterval
	}
	due := c.clock.Now() // the first look at once
	for {
		if _, err := c.waiter.Wait(ctx, due, poll); err != nil {
			return err
		}
		wait, err := c.FireDue(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			c.onError(err)
			wait = c.opt.PollInterval
		}
		if wait < 0 && notified {
			wait = recheck
		}
		due = time.Time{}
		if wait >= 0 {
			due = c.clock.Now().Add(wait)
		}
	}
}

// FireDue fires every tick due now once and returns how long until the
// earliest next tick (negative when no schedule has one). Run calls it; it
// is exported for programs that drive their own loop.
func (c *Client) FireDue(ctx context.Context) (time.Duration, error) {
	for {
		res, err := c.store.Due(ctx, c.opt.BatchSize)
		if err != nil {
			return 0, err
		}
		if len(res.Due) == 0 {
			if res.Earliest.IsZero() {
				return -1, nil
			}
			return max(res.Earliest.Sub(res.Now), 0), nil
		}
		progress, err := c.fireAll(ctx, res.Due, res.Now)
		if err != nil {
			return 0, err
		}
		if !progress {
			// Due schedules that none of this Client's fires could move: another
			// process is moving them, or the store's clocks (one per Redis
			// master) disagree by a little. Look again shortly.
			return time.Millisecond, nil
		}
	}
}

// fireAll fires the due schedules sts, up to Concurrency at once, and
// reports whether any moved. It starts at a random place in sts, so that
// Clients sharing a store spread over a batch rather than race down it in
// the same order.
func (c *Client) fireAll(ctx context.Context, sts []State, now time.Time) (bool, error) {
	n := len(sts)
	start := rand.IntN(n)
	var (
		next     atomic.Int64
		progress atomic.Bool
		mu       sync.Mutex
		first    error // the first failure; the others stop at their next schedule
	)
	work := func() {
		for {
			i := int(next.Add(1) - 1)
			mu.Lock()
			stop := first != nil
			mu.Unlock()
			if i >= n || stop {
				return
			}
			fired, err := c.fireOne(ctx, sts[(start+i)%n], now)
			if err != nil {
				mu.Lock()
				first = cmp.Or(first, err)
				mu.Unlock()
				return
			}
			if fired {
				progress.Store(true)
			}
		}
	}
	var wg sync.WaitGroup
	for range min(c.opt.Concurrency, n) - 1 {
		wg.Go(work)
	}
	work()
	wg.Wait()
	return progress.Load(), first
}

// onError passes err to OnError, if set.
func (c *Client) onError(err error) {
	if c.opt.OnError != nil {
		c.hookMu.Lock()
		c.opt.OnError(err)
		c.hookMu.Unlock()
	}
}

// fireOne fires one due schedule's ticks per its policy, re-reading it
// after each fire; a conflict means another process got there first. It
// reports whether the schedule moved (a fire of this Client or another's).
func (c *Client) fireOne(ctx context.Context, st State, now time.Time) (bool, error) {
	spec, err := st.Schedule.Validate()
	if err != nil {
		return false, fmt.Errorf("schedule %q: stored definition: %w", st.Name, err)
	}
	moved := false
	for !st.Paused && !st.Next.IsZero() && !st.Next.After(now) {
		p := st.PlanFire(spec, st.Next, now)
		res, err := c.fire(ctx, FireRequest{
			Name: st.Name, Tube: st.Job.Tube, Version: st.Version, Next: st.Next,
			Tick: p.Tick, NewNext: p.Next, Skipped: p.Skipped,
		}, st.Job.Tube)
		switch {
		case errors.Is(err, ErrConflict), errors.Is(err, ErrNotFound):
			return true, nil // changed by another: the next Due sees it
		case errors.Is(err, ErrNotDue):
			return moved, nil
		case err != nil:
			return moved, err
		}
		moved = true
		if res.Fired && c.opt.OnFire != nil && len(res.State.Last) > 0 {
			c.hookMu.Lock()
			c.opt.OnFire(st.Name, res.State.Last[0])
			c.hookMu.Unlock()
		}
		st = res.State
	}
	return moved, nil
}

// equalDefinition reports whether two schedules define the same ticks and
// job; stores use it to make Set idempotent.
func equalDefinition(a, b Schedule) bool {
	return reflect.DeepEqual(normal(a), normal(b))
}

// EqualDefinition reports whether a and b define the same ticks and job
// (times compared as instants). Stores call it in Set.
func EqualDefinition(a, b Schedule) bool { return equalDefinition(a, b) }

func normal(s Schedule) Schedule {
	if s.Job.Body == nil {
		s.Job.Body = []byte{}
	}
	if !s.Start.IsZero() {
		s.Start = time.UnixMilli(s.Start.UnixMilli()).UTC()
	}
	if !s.End.IsZero() {
		s.End = time.UnixMilli(s.End.UnixMilli()).UTC()
	}
	return s
}

// JobKey returns the unique key of the job of a tick: the put of a tick is
// idempotent on it, and the job carries it (queue.Job.UniqueKey).
func JobKey(name string, tick time.Time) string {
	return fmt.Sprintf("schedule:%s:%d", name, tick.UnixMilli())
}

// CancelReason is the reason with which the tick of schedule name at tick
// cancels the previous job (OverlapCancelPrevious): the cancelled holder
// reads it in its cancel.
func CancelReason(name string, tick time.Time) string {
	return fmt.Sprintf("schedule %s: cancelled by the tick at %d", name, tick.UnixMilli())
}

// PauseReasonBuried is the PauseReason a store records when a fire finds
// the previous job id buried (PauseOnFailure); reason is the bury's, if
// it gave one.
func PauseReasonBuried(id uint64, reason string) string {
	if reason == "" {
		return fmt.Sprintf("job %d buried", id)
	}
	return fmt.Sprintf("job %d buried: %s", id, reason)
}

// ParseJobKey reads the schedule's name and the tick from the unique key
// of a job a schedule put (queue.Job.UniqueKey, queue.JobStats.UniqueKey);
// ok is false for any other key.
func ParseJobKey(key string) (name string, tick time.Time, ok bool) {
	rest, found := strings.CutPrefix(key, "schedule:")
	i := strings.LastIndexByte(rest, ':')
	if !found || i < 0 {
		return "", time.Time{}, false
	}
	ms, err := strconv.ParseInt(rest[i+1:], 10, 64)
	if err != nil || checkName(rest[:i]) != nil {
		return "", time.Time{}, false
	}
	return rest[:i], time.UnixMilli(ms).UTC(), true
}
