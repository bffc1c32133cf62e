package ttlhash

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hourglass-io/hourglass/internal/evtrace"
	"github.com/hourglass-io/hourglass/internal/ptimer"
	"github.com/hourglass-io/hourglass/internal/wait"
)

// SweeperOptions configure a Sweeper. Nil or the zero value means the
// defaults.
type SweeperOptions struct {
	// Interval is the longest a Sweeper waits between two passes over the
	// shards. Between passes it sleeps until the next deadline the store
	// reported, and a store that announces sooner deadlines (a Notifier of
	// TopicDue: Redis is) wakes it earlier, so Interval is then only a
	// safety net, bounding how long a lost announcement could delay
	// expiry. Default 1s with such a store, 5ms with any other.
	Interval time.Duration
	// Batch is about how many due entries one Sweep call of a shard may
	// take. Default 256.
	Batch int
	// Gather is the grid, on the store's clock, on which a Sweeper of a
	// ShardSweeper (Redis) sweeps the shards due: a shard whose next
	// deadline falls between two points of the grid is swept at the
	// later one, with every other shard due by then, in one call. A field
	// may so expire up to Gather late, and in exchange the calls are
	// fewer and fuller: at 10,000 deadlines a second over 16 shards, about
	// one call per shard every Gather instead of one per field (see
	// docs/ttlhash.md, "The Redis CPU per expired field"). 1ms sweeps
	// each shard at the millisecond it falls due. Default 15ms; at most 1s.
	Gather time.Duration
	// Logger receives the store's failures (the Sweeper retries after
	// Interval). Default slog.Default().
	Logger *slog.Logger
}

// Sweeper expires due fields of a FieldStore and so emits their events: one
// goroutine, started by Start and stopped by Close. Any number of
// Sweepers, in any number of processes, may sweep the same store: each
// Sweep is atomic, so they share the work without duplicating it. (The
// embedded engine expires fields on its own timer; a Sweeper on it only
// adds passes.)
type Sweeper struct {
	s        FieldStore
	interval time.Duration // 0: the default, chosen when it starts
	batch    int
	gather   time.Duration
	log      *slog.Logger
	id       int // the Sweeper's number in this process, for evtrace

	mu      sync.Mutex
	cancel  context.CancelFunc
	done    chan struct{}
	closed  bool
	expired int64
}

// NewSweeper returns a Sweeper of s, not started. It fails with ErrInvalid
// when opts are out of range.
func NewSweeper(s FieldStore, opts *SweeperOptions) (*Sweeper, error) {
	w := &Sweeper{s: s, batch: 256, gather: DefaultGather, log: slog.Default(), id: int(sweepers.Add(1))}
	if opts != nil {
		if opts.Interval < 0 {
			return nil, invalid("SweeperOptions.Interval", "%v: want 0 (default) or positive", opts.Interval)
		}
		if opts.Batch < 0 || opts.Batch > 100000 {
			return nil, invalid("SweeperOptions.Batch", "%d: want 0 (default) to 100000", opts.Batch)
		}
		if opts.Gather < 0 || opts.Gather > time.Second || opts.Gather%time.Millisecond != 0 {
			return nil, invalid("SweeperOptions.Gather", "%v: want 0 (default) or whole milliseconds up to 1s", opts.Gather)
		}
		if opts.Interval > 0 {
			w.interval = opts.Interval
		}
		if opts.Gather > 0 {
			w.gather = opts.Gather
		}
		if opts.Batch > 0 {
			w.batch = opts.Batch
		}
		if opts.Logger != nil {
			w.log = opts.Logger
		}
	}
	return w, nil
}

// Start starts sweeping. It returns ErrClosed after Close and does nothing
// when already started.
func (w *Sweeper) Start() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return ErrClosed
	}
	if w.done != nil {
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel, w.done = cancel, make(chan struct{})
	go w.run(ctx)
	return nil
}

// Expired counts the fields this Sweeper has expired.
func (w *Sweeper) Expired() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.expired
}

// Close stops the Sweeper and waits for its goroutine to end.
func (w *Sweeper) Close() error {
	w.mu.Lock()
	w.closed = true
	cancel, done := w.cancel, w.done
	w.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
	return nil
}

func (w *Sweeper) run(ctx context.Context) {
	defer close(w.done)
	n := w.s.Shards()
	// A sooner deadline set anywhere wakes the sweeper at once; it then
	// sweeps, and sleeps until the next deadline the pass reports, or
	// Interval at most.
	waiter := wait.New()
	waiter.Wake()          // the first pass at once
	var dueShards shardSet // the shards announced since the last look
	interval, announced := w.interval, false
	if dn, ok := w.s.(Notifier); ok {
		stop, err := dn.Listen(ctx, TopicDue, func(topic string) {
			shard, ok := ParseDueShardTopic(topic)
			if !ok {
				shard = -1
			}
			dueShards.add(shard)
			waiter.Wake()
		})
		switch {
		case err == nil:
			defer stop()
			announced = true
		case !errors.Is(err, ErrNoTopic):
			announced = true // it announces them, but not to this Sweeper
			w.log.Warn("ttlhash: listening for deadlines failed; sweeping every Interval", "interval", cmp.Or(interval, time.Second), "err", err)
		}
	}
	if interval == 0 {
		interval = 5 * time.Millisecond
		if announced {
			interval = time.Second
		}
	}
	if sh, ok := w.s.(ShardSweeper); ok {
		w.runShards(ctx, sh, n, waiter, &dueShards, interval)
		return
	}
	start := 0
	var next time.Duration = -1 // until the next deadline the last pass reported, or -1
	note := func(d time.Duration) {
		if d >= 0 && (next < 0 || d < next) {
			next = d
		}
	}
	for {
		var due time.Time
		if next >= 0 {
			due = time.Now().Add(next)
		}
		if _, err := waiter.Wait(ctx, due, interval); err != nil {
			return
		}
		next = -1
		// Start each pass at another shard, so that sweepers spread out.
		start = (start + 1) % n
		for i := 0; i < n; i++ {
			shard := (start + i) % n
			for {
				r, err := w.s.Sweep(ctx, shard, w.batch)
				if err != nil {
					if ctx.Err() != nil || errors.Is(err, ErrClosed) {
						return
					}
					w.log.Warn("ttlhash: sweep failed", "shard", shard, "err", err)
					break
				}
				w.count(r)
				if !r.More {
					note(r.Next)
					break
				}
				if ctx.Err() != nil {
					return
				}
			}
		}
	}
}

// runShards is run's loop for a ShardSweeper: it keeps each shard's next
// deadline and sweeps, in one call, only the shards that are due, were
// announced (TopicDue's shard topics), or had more work, so that a pass
// costs the store one script per shard with work rather than one per
// shard. The Interval sweeps every shard. Up to maxPasses calls are in
// flight at once, each of shards not in another: a shard falling due while
// a call of others is out (one whose work is large, or a slow round trip)
// is swept at once, not after it.
func (w *Sweeper) runShards(ctx context.Context, sh ShardSweeper, n int, waiter *wait.Waiter, announced *shardSet, interval time.Duration) {
	l := &shardSweep{
		w: w, ctx: ctx, sh: sh, interval: interval,
		next: make([]time.Time, n), backup: make([]bool, n), out: make([]bool, n), again: make([]bool, n),
		storeDue: make([]time.Time, n), never: time.Now().Add(MaxTTL),
		ended: make(chan *sweepPass, maxPasses),
	}
	var due []int
	var wokeAt time.Time
	// The next deadline wakes the Sweeper through a precise timer (the
	// runtime's rounds its wait to whole milliseconds).
	tm := ptimer.AfterFunc(time.Hour, func() { waiter.Wake() })
	defer tm.Close()
	tm.Stop()
	defer l.drain()
	for {
		if !l.takeEnded() {
			return
		}
		now := time.Now()
		var earliest time.Time
		due, earliest = l.dueAt(now, due[:0])
		if len(due) > 0 && l.flying < maxPasses {
			l.start(due, now, wokeAt, waiter)
			wokeAt = time.Time{} // the calls after the first follow at once
			continue
		}
		if earliest.Before(l.never) {
			tm.Reset(earliest.Sub(now))
		}
		r, err := waiter.Wait(ctx, time.Time{}, interval)
		if err != nil {
			return
		}
		wokeAt = time.Now()
		if r == wait.Polled || !announced.empty() {
			shards, all := announced.take()
			l.announce(shards, all || r == wait.Polled)
		}
	}
}

// shardSweep is the state of runShards: each shard's next deadline and
// the calls in flight.
type shardSweep struct {
	w        *Sweeper
	ctx      context.Context
	sh       ShardSweeper
	interval time.Duration

	next   []time.Time // per shard; zero: sweep at once
	backup []bool      // another Sweeper sweeps the shard
	out    []bool      // in a call in flight
	again  []bool      // announced while out: sweep again at once
	never  time.Time

	// A deadline on the store's clock, of a shard whose sweep reported
	// one (zero otherwise), and the estimate that turns it into next: all
	// of them are converted again with each new estimate, so that shards
	// due at one millisecond of the store's stay due at one moment here
	// and go in one call.
	ahead    clockAhead
	storeDue []time.Time

	ended  chan *sweepPass // calls that ended
	flying int             // calls in flight
}

// sweepPass is a call's shards, the time it started, whether each was
// swept at its deadline, and its results; a call that ends wakes the
// loop.
type sweepPass struct {
	shards  []int
	planned []bool
	start   time.Time
	end     time.Time // when the call returned
	rs      []SweepResult
	err     error
	tr      evtrace.Pass
}

// drain waits for the calls still out, and counts what they expired.
func (l *shardSweep) drain() {
	for ; l.flying > 0; l.flying-- {
		if p := <-l.ended; p.err == nil {
			for _, r := range p.rs {
				l.w.count(r)
			}
		}
	}
}

// takeEnded takes the results of the calls that ended, without waiting;
// false when the loop must stop.
func (l *shardSweep) takeEnded() bool {
	for {
		select {
		case p := <-l.ended:
			if !l.take(p) {
				return false
			}
		default:
			return true
		}
	}
}

// dueAt appends to due the shards due at now and not out, and returns the
// earliest deadline of the others (never when none).
func (l *shardSweep) dueAt(now time.Time, due []int) ([]int, time.Time) {
	earliest := l.never
	for i, t := range l.next {
		switch {
		case l.out[i]:
		case !t.After(now):
			due = append(due, i)
		case t.Before(earliest):
			earliest = t
		}
	}
	return due, earliest
}

// start sends a call sweeping the shards due.
func (l *shardSweep) start(due []int, now, wokeAt time.Time, waiter *wait.Waiter) {
	p := &sweepPass{shards: slices.Clone(due), planned: make([]bool, len(due)), start: now}
	for k, s := range due {
		l.out[s] = true
		p.planned[k] = !l.next[s].IsZero()
	}
	if evtrace.OnPass != nil {
		p.tr = evtrace.Pass{Woken: wokeAt, Calls: 1, Start: now}
		for _, s := range due {
			if !l.next[s].IsZero() && (p.tr.Planned.IsZero() || l.next[s].Before(p.tr.Planned)) {
				p.tr.Planned = l.next[s]
			}
		}
	}
	l.flying++
	go func() {
		p.rs, p.err = l.sh.SweepShards(l.ctx, p.shards, l.w.batch)
		p.end = time.Now()
		p.tr.End = p.end
		l.ended <- p
		waiter.Wake()
	}()
}

// announce makes the shards announced (every one when all) due at once,
// or again at once when they are out.
func (l *shardSweep) announce(shards []int, all bool) {
	for s := range l.next {
		if all || slices.Contains(shards, s) {
			if l.out[s] {
				l.again[s] = true
			} else {
				l.next[s], l.storeDue[s] = time.Time{}, time.Time{}
			}
		}
	}
}

// take records what an ended call found: each shard's next deadline;
// false when the loop must stop (ctx ended, the store closed).
func (l *shardSweep) take(p *sweepPass) bool {
	l.flying--
	for _, s := range p.shards {
		l.out[s] = false
	}
	if p.err != nil {
		if l.ctx.Err() != nil || errors.Is(p.err, ErrClosed) {
			return false
		}
		l.w.log.Warn("ttlhash: sweep failed", "err", p.err)
		for _, s := range p.shards {
			l.next[s], l.storeDue[s] = p.start.Add(l.interval), time.Time{}
		}
		return true
	}
	converted := false
	for k, r := range p.rs {
		l.w.count(r)
		p.tr.Expired += r.Expired
		p.tr.Looked += r.Looked
		if l.record(p, k, r) {
			converted = true
		}
	}
	if converted {
		est := l.ahead.est()
		for s, d := range l.storeDue {
			if !d.IsZero() {
				l.next[s] = d.Add(-est)
			}
		}
	}
	if evtrace.OnPass != nil {
		evtrace.OnPass(p.tr)
	}
	return true
}

// record sets the next deadline of the k-th shard of p from its result r;
// true when r gave a deadline on the store's clock (storeDue).
func (l *shardSweep) record(p *sweepPass, k int, r SweepResult) (converted bool) {
	w, s := l.w, p.shards[k]
	// A shard swept at its deadline with nothing due was swept by
	// another Sweeper first: this one stands by, sweeping it at
	// most every backupEvery, until a sweep of its finds work again
	// (the other stopped, or this one came first). Any work counts,
	// refining too: the Sweeper that did it has just made the other
	// stand by, so one Sweeper of a shard always sweeps it on time.
	// (Counting only expiries, the two took turns at refining the
	// coarse buckets ahead of the first fields due and each lost a
	// turn sooner or later: when the first fields fell due both stood
	// by, for every shard, and swept them up to backupEvery late.)
	was := l.backup[s]
	switch {
	case r.Expired > 0 || r.Looked > 0:
		l.backup[s] = false
	case p.planned[k] && r.Looked == 0 && !r.More:
		l.backup[s] = true
	}
	if evtrace.OnStandby != nil && l.backup[s] != was {
		evtrace.OnStandby(evtrace.Standby{Sweeper: w.id, Shard: s, On: l.backup[s], At: p.end})
	}
	l.storeDue[s] = time.Time{}
	switch {
	case r.More || l.again[s]:
		l.next[s] = time.Time{}
	case r.Next >= 0 && !r.At.IsZero():
		// The deadline, on the store's clock, at the next point of
		// the gathering grid, then on this clock: the store's
		// clock less what it is at least ahead of this one.
		d := onGrid(r.At.Truncate(time.Millisecond).Add(r.Next), w.gather)
		if l.backup[s] {
			// Half way between two points of the grid, when the
			// Sweeper sweeping the shard has swept it: a look
			// that finds nothing unless that one stopped.
			d = onGrid(r.At.Add(max(r.Next, backupEvery)), w.gather).Add(w.gather / 2)
		}
		l.storeDue[s] = d
		l.ahead.of(r.At, p.end)
		converted = true
	case r.Next >= 0 && l.backup[s]:
		l.next[s] = p.start.Add(max(r.Next, backupEvery))
	case r.Next >= 0:
		// From the call's start: the store's clock read the due
		// time then, to the millisecond.
		l.next[s] = p.start.Add(r.Next)
	default:
		l.next[s] = l.never
	}
	l.again[s] = false
	return converted
}

// clockAhead estimates how far a store's clock is ahead of this process's
// (negative: behind), from sweeps that reported it: at most by what it
// is, so that a deadline on the store's clock converted with it is never
// earlier here. Each sweep gives a bound, its reading less the time its
// reply arrived (the reading came before); the estimate is the largest
// bound of the last second or two, so that it follows a clock that steps.
type clockAhead struct {
	cur, prev time.Duration
	since     time.Time // when cur began
}

// of takes the bound of a store reading at that arrived here at end, and
// returns the estimate.
func (c *clockAhead) of(at, end time.Time) time.Duration {
	b := at.Sub(end)
	switch {
	case c.since.IsZero():
		c.cur, c.prev, c.since = b, b, end
	case end.Sub(c.since) >= time.Second:
		c.prev, c.cur, c.since = c.cur, b, end
	default:
		c.cur = max(c.cur, b)
	}
	return c.est()
}

// est is the estimate.
func (c *clockAhead) est() time.Duration { return max(c.cur, c.prev) }

// sweepers numbers the Sweepers of this process (Sweeper.id).
var sweepers atomic.Int64

// DefaultGather is SweeperOptions.Gather when it is 0.
const DefaultGather = 15 * time.Millisecond

// onGrid is t, or the first point of the grid of g (from the Unix epoch)
// after it.
func onGrid(t time.Time, g time.Duration) time.Time {
	if r := time.Duration(t.UnixNano() % int64(g)); r != 0 {
		return t.Add(g - r)
	}
	return t
}

// maxPasses is how many sweep calls a Sweeper keeps in flight at once.
const maxPasses = 4

// backupEvery is how often a Sweeper sweeps a shard that another Sweeper
// sweeps on time: about the longest its fields wait when that one stops.
// Each of those sweeps finds nothing while the other runs, so it is paid
// for in calls: at 10 ms a standing-by Sweeper made a third of all the
// calls at 10,000 expiries a second, and at 50 ms about a quarter of them
// (57,000 of 221,000 over TTLHashLag's 1M-field run).
const backupEvery = 150 * time.Millisecond

func (w *Sweeper) count(r SweepResult) {
	if r.Expired > 0 {
		w.mu.Lock()
		w.expired += int64(r.Expired)
		w.mu.Unlock()
	}
}
