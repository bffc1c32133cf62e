package redisstore

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/schedule"
)

// Schedules is the schedule.Store on Redis. A schedule lives on the hash
// tag of partition 0 of its job's tube, beside the tube's keys, so firing a
// tick (putting the job and advancing the schedule) is one script on one
// slot. Per tag: sc (a hash of definitions, job bodies and states), scd (the
// due sorted set: name -> next tick, µs) and scn (names, for listing). Two
// keys outside the tags find them: scdir (name -> tube) and sctags (the
// tags that hold schedules). Get it with Store.Schedules.
type Schedules struct{ s *Store }

// Schedules returns the Store's schedule.Store.
func (s *Store) Schedules() *Schedules { return &Schedules{s: s} }

var scScripts = struct {
	set, get, del, pause, due, fire *op
}{
	set: operation("sc_set"), get: operation("sc_get"), del: operation("sc_delete"),
	pause: operation("sc_pause"), due: operation("sc_due"), fire: operation("sc_fire"),
}

// Script status codes.
const (
	scOK        = 0
	scNotFound  = 1
	scConflict  = 2
	scNotDue    = 3
	scUnchanged = 4
	scOverlap   = 5 // sc_fire: the overlap policy put nothing
	scPausedBy  = 6 // sc_fire: paused itself (pause on failure)
)

func (k keys) scKeys(tag int) []string {
	b := k.base(tag)
	return []string{b + "sc", b + "scd", b + "scn"}
}
func (k keys) scDir() string  { return k.prefix + "scdir" }
func (k keys) scTags() string { return k.prefix + "sctags" }

// scChannel is the sharded pub/sub channel on which a change of any
// schedule is announced, so running Clients re-read the earliest due tick.
func (k keys) scChannel() string { return k.prefix + "sc:w" }

// announce tells running Clients that a schedule changed. It is a hint:
// a lost one costs a Client at most its PollInterval.
func (c *Schedules) announce(ctx context.Context) {
	c.s.c.SPublish(ctx, c.s.k.scChannel(), "1")
}

// Listen implements schedule.Notifier: wake is called soon after any
// process sets or resumes a schedule of this store's prefix, and after the
// subscription reconnects. The listeners of a process share one
// subscription (the store's notifier, as the queue's and the locks' do).
func (c *Schedules) Listen(ctx context.Context, topic string, wake func(topic string)) (func(), error) {
	if topic != schedule.TopicDue {
		return nil, fmt.Errorf("redisstore: %w: %q (want %q)", schedule.ErrNoTopic, topic, schedule.TopicDue)
	}
	undo, err := c.s.notify.add(ctx, schedulesFamily, 0, c.s.k.scChannel(), topic, &wake)
	if err != nil {
		return nil, err
	}
	return undo, nil
}

// open fails with schedule.ErrClosed once the store is closed. The
// commands sent outside the runner (the directory of names, the set of
// tags, TIME) check it first, as the runner does for every script, so a
// closed store neither answers from the directory nor writes to it.
func (c *Schedules) open() error { return c.s.r.open(schedulesFamily) }

// call runs one schedule script: every script call of this file goes
// through it.
func (c *Schedules) call(ctx context.Context, o *op, ks []string, args ...any) (any, error) {
	v, err := c.s.r.run(ctx, call{op: o, keys: ks, args: append([]any{c.s.now()}, args...)})
	return v, err
}

func (c *Schedules) tag(tube string) int { return tubeTag(tube, 0, c.s.partitions(tube)) }

// tubeOf returns the tube of schedule name from the directory, or
// ErrNotFound.
func (c *Schedules) tubeOf(ctx context.Context, name string) (string, error) {
	if err := c.open(); err != nil {
		return "", err
	}
	tube, err := c.s.c.HGet(ctx, c.s.k.scDir(), name).Result()
	if errors.Is(err, redis.Nil) {
		return "", schedule.ErrNotFound
	}
	if err != nil {
		return "", c.s.r.fail(ctx, schedulesFamily, err)
	}
	return tube, nil
}

// definition encodes the definition of s without its body, with times in
// UTC, so equal definitions encode equally.
func definition(s schedule.Schedule) (string, error) {
	s.Job.Body = nil
	if !s.Start.IsZero() {
		s.Start = time.UnixMicro(s.Start.UnixMicro()).UTC()
	}
	if !s.End.IsZero() {
		s.End = time.UnixMicro(s.End.UnixMicro()).UTC()
	}
	b, err := json.Marshal(s)
	return string(b), err
}

func micro(t time.Time) int64 {
	if t.IsZero() {
		return -1
	}
	return t.UnixMicro()
}

func fromMicro(v int64) time.Time {
	if v < 0 {
		return time.Time{}
	}
	return time.UnixMicro(v)
}

// Set implements schedule.Store. The tube of an existing schedule cannot
// change (delete the schedule first): moving it between tags could not be
// atomic.
func (c *Schedules) Set(ctx context.Context, st schedule.State) (schedule.State, error) {
	tube := st.Job.Tube
	old, err := c.tubeOf(ctx, st.Name)
	isNew := errors.Is(err, schedule.ErrNotFound)
	switch {
	case err == nil && old != tube:
		// The directory is written before the schedule: it may name a
		// schedule whose Set failed half-way. Only a stored one holds its tube.
		if _, gerr := c.Get(ctx, st.Name); gerr == nil {
			return schedule.State{}, fmt.Errorf("%w: Job.Tube: schedule %q puts into tube %q; delete it to move it to %q", schedule.ErrInvalidOption, st.Name, old, tube)
		} else if !errors.Is(gerr, schedule.ErrNotFound) {
			return schedule.State{}, gerr
		}
		isNew = true
	case err != nil && !isNew:
		return schedule.State{}, err
	}
	def, err := definition(st.Schedule)
	if err != nil {
		return schedule.State{}, err
	}
	tag := c.tag(tube)
	if isNew {
		if _, err := c.s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
			p.SAdd(ctx, c.s.k.scTags(), tag)
			p.HSet(ctx, c.s.k.scDir(), st.Name, tube)
			return nil
		}); err != nil {
			return schedule.State{}, c.s.r.fail(ctx, schedulesFamily, err)
		}
	}
	v, err := c.call(ctx, scScripts.set, c.s.k.scKeys(tag), st.Name, def, micro(st.Next), st.Job.Priority, ms(cmp.Or(st.Job.TTR, queue.DefaultTTR)), st.Job.Body, st.Job.Tube, int(st.Overlap), boolInt(st.PauseOnFailure))
	if err != nil {
		return schedule.State{}, err
	}
	r := replyOf(scScripts.set)
	a := r.arr(v, 13)
	code := r.int(a[0])
	out, _, err := decodeState(r, st.Name, a[2:])
	if code == scOK && err == nil {
		c.announce(ctx)
	}
	return out, err
}

// decodeState reads {definition, body, version, next, paused, fires,
// misfires, skips, pause reason, last job, #last, last...} through r and
// returns the state and the rest of a; its error is r's first.
func decodeState(r *reply, name string, a []any) (schedule.State, []any, error) {
	a = r.arr(a, 11)
	def, body := r.str(a[0]), r.str(a[1])
	var n [6]int64
	for i := range 5 {
		n[i] = r.int(a[2+i])
	}
	skips, reason, lastJob := r.int(a[7]), r.str(a[8]), r.int(a[9])
	n[5] = r.int(a[10])
	if err := r.done(); err != nil {
		return schedule.State{}, nil, err
	}
	var st schedule.State
	if err := json.Unmarshal([]byte(def), &st.Schedule); err != nil {
		return schedule.State{}, nil, fmt.Errorf("redisstore: schedule %q: malformed state: %v", name, err)
	}
	st.Job.Body = []byte(body)
	st.Version, st.Next, st.Paused, st.Fires, st.Misfires = uint64(n[0]), fromMicro(n[1]), n[2] == 1, uint64(n[3]), uint64(n[4])
	st.Skips, st.PauseReason, st.LastJob = uint64(skips), reason, uint64(lastJob)
	a = a[11:]
	if n[5] < 0 || int64(len(a)) < 4*n[5] {
		r.fail(fmt.Sprintf("%d fires of 4 values", n[5]), a)
		return schedule.State{}, nil, r.done()
	}
	for i := range int(n[5]) {
		f := a[4*i : 4*i+4]
		tick, id, late, man := r.int(f[0]), r.int(f[1]), r.int(f[2]), r.int(f[3])
		st.Last = append(st.Last, schedule.Fire{Tick: time.UnixMicro(tick), JobID: uint64(id), Lateness: time.Duration(late) * time.Microsecond, Manual: man == 1})
	}
	return st, a[4*n[5]:], r.done()
}

// decodeStates reads a flat list of {name, state...} through r.
func decodeStates(r *reply, a []any) ([]schedule.State, error) {
	var out []schedule.State
	for len(a) > 0 {
		name := r.str(a[0])
		st, rest, err := decodeState(r, name, a[1:])
		if err != nil {
			return nil, err
		}
		st.Name = name
		out = append(out, st)
		a = rest
	}
	return out, nil
}

// Get implements schedule.Store.
func (c *Schedules) Get(ctx context.Context, name string) (schedule.State, error) {
	tube, err := c.tubeOf(ctx, name)
	if err != nil {
		return schedule.State{}, err
	}
	tag := c.tag(tube)
	v, err := c.call(ctx, scScripts.get, []string{c.s.k.scKeys(tag)[0], c.s.k.scKeys(tag)[2]}, "name", name)
	if err != nil {
		return schedule.State{}, err
	}
	r := replyOf(scScripts.get)
	sts, err := decodeStates(r, r.arr(v, 0))
	if err != nil {
		return schedule.State{}, err
	}
	if len(sts) == 0 {
		return schedule.State{}, schedule.ErrNotFound
	}
	return sts[0], nil
}

// tags returns the tags that hold schedules.
func (c *Schedules) tags(ctx context.Context) ([]int, error) {
	if err := c.open(); err != nil {
		return nil, err
	}
	ms, err := c.s.c.SMembers(ctx, c.s.k.scTags()).Result()
	if err != nil {
		return nil, c.s.r.fail(ctx, schedulesFamily, err)
	}
	out := make([]int, 0, len(ms))
	for _, m := range ms {
		t, err := strconv.Atoi(m)
		if err != nil || t < 0 || t >= NumTags {
			return nil, fmt.Errorf("redisstore: %s holds %q, not a tag", c.s.k.scTags(), m)
		}
		out = append(out, t)
	}
	slices.Sort(out)
	return out, nil
}

// List implements schedule.Store: it merges the lists of every tag that
// holds schedules (a view that is not atomic across tags).
func (c *Schedules) List(ctx context.Context, after string, limit int) ([]schedule.State, error) {
	tags, err := c.tags(ctx)
	if err != nil {
		return nil, err
	}
	var all []schedule.State
	for _, tag := range tags {
		ks := c.s.k.scKeys(tag)
		v, err := c.call(ctx, scScripts.get, []string{ks[0], ks[2]}, "list", after, limit)
		if err != nil {
			return nil, err
		}
		r := replyOf(scScripts.get)
		sts, err := decodeStates(r, r.arr(v, 0))
		if err != nil {
			return nil, err
		}
		all = append(all, sts...)
	}
	slices.SortFunc(all, func(a, b schedule.State) int { return cmp.Compare(a.Name, b.Name) })
	return all[:min(limit, len(all))], nil
}

// Delete implements schedule.Store.
func (c *Schedules) Delete(ctx context.Context, name string) error {
	tube, err := c.tubeOf(ctx, name)
	if err != nil {
		return err
	}
	v, err := c.call(ctx, scScripts.del, c.s.k.scKeys(c.tag(tube)), name)
	if err != nil {
		return err
	}
	if err := c.s.c.HDel(ctx, c.s.k.scDir(), name).Err(); err != nil {
		return c.s.r.fail(ctx, schedulesFamily, err)
	}
	r := replyOf(scScripts.del)
	if n := r.int(v); r.done() == nil && n == 0 {
		return schedule.ErrNotFound
	}
	return r.done()
}

// SetPaused implements schedule.Store.
func (c *Schedules) SetPaused(ctx context.Context, name string, paused bool, next time.Time) (schedule.State, error) {
	tube, err := c.tubeOf(ctx, name)
	if err != nil {
		return schedule.State{}, err
	}
	p := 0
	if paused {
		p = 1
	}
	ks := c.s.k.scKeys(c.tag(tube))
	v, err := c.call(ctx, scScripts.pause, ks[:2], name, p, micro(next))
	if err != nil {
		return schedule.State{}, err
	}
	st, _, _, _, err := c.stateReply(scScripts.pause, name, v)
	if err == nil && !paused {
		c.announce(ctx)
	}
	return st, err
}

// stateReply reads a {status, job id, state...} reply of o: the state,
// the job's ID, the status and what follows the state.
func (c *Schedules) stateReply(o *op, name string, v any) (schedule.State, int64, int64, []any, error) {
	r := replyOf(o)
	code := r.int(r.arr(v, 1)[0])
	if err := r.done(); err != nil {
		return schedule.State{}, 0, 0, nil, err
	}
	switch code {
	case scOK, scUnchanged, scOverlap, scPausedBy:
	case scNotFound:
		return schedule.State{}, 0, 0, nil, schedule.ErrNotFound
	case scConflict:
		return schedule.State{}, 0, 0, nil, schedule.ErrConflict
	case scNotDue:
		return schedule.State{}, 0, 0, nil, schedule.ErrNotDue
	default:
		return schedule.State{}, 0, 0, nil, fmt.Errorf("redisstore: %s: status %d", o.file, code)
	}
	a := r.arr(v, 13)
	id := r.int(a[1])
	st, rest, err := decodeState(r, name, a[2:])
	st.Name = name
	return st, id, code, rest, err
}

// Fire implements schedule.Store in one script on the tag of the tube.
func (c *Schedules) Fire(ctx context.Context, req schedule.FireRequest) (schedule.FireResult, error) {
	tube := req.Tube
	if tube == "" {
		var err error
		if tube, err = c.tubeOf(ctx, req.Name); err != nil {
			return schedule.FireResult{}, err
		}
	}
	tag := c.tag(tube)
	ks := append(append(c.s.k.tagKeys(tag), c.s.k.tubeKeys(tag, tube)...), c.s.k.scKeys(tag)[:2]...)
	ks = append(ks, c.s.idKey(ks[0]))
	manual := 0
	if req.Manual {
		manual = 1
	}
	v, err := c.call(ctx, scScripts.fire, ks, tube, tag, req.Name, req.Version, micro(req.Next), micro(req.Tick),
		micro(req.NewNext), req.Skipped, manual, "schedule:"+req.Name+":", schedule.KeepFires, ms(queue.DefaultTTR),
		schedule.CancelReason(req.Name, req.Tick), req.TraceContext)
	if err != nil {
		return schedule.FireResult{}, err
	}
	st, id, code, rest, err := c.stateReply(scScripts.fire, req.Name, v)
	if err != nil {
		return schedule.FireResult{}, err
	}
	r := replyOf(scScripts.fire)
	cancelled := r.int(r.arr(rest, 1)[0])
	if err := r.done(); err != nil {
		return schedule.FireResult{}, err
	}
	if id > 0 {
		c.s.tubes.add(queue.ID(id), tube)
	}
	return schedule.FireResult{Fired: id > 0, JobID: uint64(id), State: st,
		Overlapped: code == scOverlap, SelfPaused: code == scPausedBy, CancelledPrevious: uint64(cancelled)}, nil
}

// Due implements schedule.Store over every tag that holds schedules, asked
// in one pipeline; Now is the clock of the first tag's master. Each tag is
// asked for its share of limit (at least 4) and the first limit are
// returned; a Client asks again while schedules stay due.
// When more are due on a tag than asked for, the tag returns a window at a
// random place among them, so Clients firing at once mostly take different
// schedules.
func (c *Schedules) Due(ctx context.Context, limit int) (schedule.DueResult, error) {
	tags, err := c.tags(ctx)
	if err != nil {
		return schedule.DueResult{}, err
	}
	per := limit
	if len(tags) > 1 {
		per = max(limit/len(tags), min(limit, 4))
	}
	calls := make([]call, len(tags))
	for i, tag := range tags {
		ks := c.s.k.scKeys(tag)[:2]
		calls[i] = call{op: scScripts.due, keys: ks, args: []any{c.s.now(), per, rand.IntN(1_000_000)}}
	}
	vals, err := c.s.r.runMany(ctx, calls)
	if err != nil {
		return schedule.DueResult{}, err
	}
	var res schedule.DueResult
	for _, v := range vals {
		r := replyOf(scScripts.due)
		a := r.arr(v, 2)
		now, earliest := r.int(a[0]), r.int(a[1])
		if err := r.done(); err != nil {
			return schedule.DueResult{}, err
		}
		if res.Now.IsZero() {
			res.Now = time.UnixMicro(now)
		}
		if e := fromMicro(earliest); !e.IsZero() && (res.Earliest.IsZero() || e.Before(res.Earliest)) {
			res.Earliest = e
		}
		sts, err := decodeStates(r, a[2:])
		if err != nil {
			return schedule.DueResult{}, err
		}
		res.Due = append(res.Due, sts...)
	}
	if len(res.Due) > limit {
		res.Due = res.Due[:limit]
	}
	if res.Now.IsZero() {
		if res.Now, err = c.Now(ctx); err != nil {
			return schedule.DueResult{}, err
		}
	}
	return res, nil
}

// Now implements schedule.Store: Redis's TIME (of the node the client asks:
// a Cluster's masters keep their own clocks, which NTP keeps close), or the
// injected Options.Clock.
func (c *Schedules) Now(ctx context.Context) (time.Time, error) {
	if err := c.open(); err != nil {
		return time.Time{}, err
	}
	if c.s.clock != nil {
		return c.s.clock(), nil
	}
	t, err := c.s.c.Time(ctx).Result()
	if err != nil {
		return time.Time{}, c.s.r.fail(ctx, schedulesFamily, err)
	}
	return t, nil
}

func boolInt(v bool) int {
	if v {
		return 1
	}
	return 0
}
