package redisstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hourglass-io/hourglass/queue"
	"github.com/redis/go-redis/v9"
)

// peekStats is how many integers peek.lua's stats hold; the last error
// and the reservation's owner follow them.
const peekStats = 18

// peek runs peek.lua: the job and its stats.
func (s *Store) peek(ctx context.Context, id queue.ID) (queue.JobStats, error) {
	var out queue.JobStats
	err := s.withTube(ctx, id, func(tube string) (bool, error) {
		v, err := s.run(ctx, scripts.peek, tagOf(id), tube, tube, idhex(id))
		if err != nil {
			return false, err
		}
		r := replyOf(scripts.peek)
		a := r.arr(v, 1)
		if r.int(a[0]) != 1 {
			if err := r.done(); err != nil {
				return false, err
			}
			return true, fmt.Errorf("%w: %d", queue.ErrNotFound, id)
		}
		a = r.arr(a, 4)
		out = parseStats(r, parseJob(r, a[1]), a[2], a[3])
		return false, r.done()
	})
	return out, err
}

// parseStats reads the stats (peek.lua's, lookup.lua's) of job j and its
// error history (errors_reply in lib.lua).
func parseStats(r *reply, j queue.Job, stats, errs any) queue.JobStats {
	st := r.arr(stats, peekStats+2)
	n := make([]int64, peekStats)
	for i, x := range st[:peekStats] {
		n[i] = r.int(x)
	}
	out := statsOf(j, n, r.str(st[peekStats]), r.str(st[peekStats+1]))
	e := r.arr(errs, 0)
	if len(e)%3 != 0 {
		r.fail("an error history of triples", errs)
		return out
	}
	for i := 0; i < len(e); i += 3 {
		out.Errors = append(out.Errors, queue.AttemptError{At: timeMS(r.int(e[i])), Attempt: uint32(r.int(e[i+1])), Reason: r.str(e[i+2])})
	}
	return out
}

// timeMS converts Unix milliseconds to a Time in UTC; 0 is the zero Time
// (never).
func timeMS(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMilli(v).UTC()
}

// StatsJob implements queue.Store: one peek.lua call gives the job and
// its stats.
func (s *Store) StatsJob(ctx context.Context, id queue.ID) (queue.JobStats, error) {
	return s.peek(ctx, id)
}

// statsOf is the JobStats of job j with peek.lua's stats st.
func statsOf(j queue.Job, st []int64, lastErr, owner string) queue.JobStats {
	n := func(i int) int64 { return st[i] }
	d := func(i int) time.Duration { return time.Duration(n(i)) * time.Millisecond }
	return queue.JobStats{
		ID: j.ID, Tube: j.Tube, State: queue.State(n(0)), Priority: uint32(n(1)),
		Age: d(2), Delay: d(3), TTR: d(4), TimeLeft: d(5),
		Reserves: uint32(n(6)), Timeouts: uint32(n(7)), Releases: uint32(n(8)), Buries: uint32(n(9)), Kicks: uint32(n(10)),
		PutAt: timeMS(n(11)), ReservedAt: timeMS(n(12)), ReleasedAt: timeMS(n(13)), BuriedAt: timeMS(n(14)),
		KickedAt: timeMS(n(15)), TimedOutAt: timeMS(n(16)), LastErrorAt: timeMS(n(17)), LastError: lastErr,
		ReservedBy: owner,
		UniqueKey:  j.UniqueKey, Body: j.Body, TraceContext: j.TraceContext,
	}
}

// PeekStateN implements queue.Store. For a partitioned tube it takes the
// first n of every partition and merges them by the state's order.
func (s *Store) PeekStateN(ctx context.Context, tube string, st queue.State, n int) ([]queue.Job, error) {
	if st < queue.Ready || st > queue.Buried {
		return nil, fmt.Errorf("%w: PeekStateN of state %v", queue.ErrInvalid, st)
	}
	if n < 1 {
		return nil, fmt.Errorf("%w: PeekStateN of %d jobs", queue.ErrInvalid, n)
	}
	type scored struct {
		score int64
		job   queue.Job
	}
	var all []scored
	k := s.partitions(tube)
	for p := 0; p < k; p++ {
		v, err := s.run(ctx, scripts.peekState, tubeTag(tube, p, k), tube, tube, int(st), n)
		if err != nil {
			return nil, err
		}
		r := replyOf(scripts.peekState)
		a := r.arr(v, 0)
		for i := 0; i+1 < len(a); i += 2 {
			all = append(all, scored{r.int(a[i]), parseJob(r, a[i+1])})
		}
		if err := r.done(); err != nil {
			return nil, err
		}
	}
	slices.SortFunc(all, func(a, b scored) int {
		if c := cmp.Compare(a.score, b.score); c != 0 {
			return c
		}
		return cmp.Compare(a.job.ID, b.job.ID)
	})
	out := make([]queue.Job, 0, min(n, len(all)))
	for _, x := range all[:min(n, len(all))] {
		out = append(out, x.job)
	}
	return out, nil
}

// StatsTube implements queue.Store; a partitioned tube sums its partitions.
func (s *Store) StatsTube(ctx context.Context, tube string) (queue.TubeStats, error) {
	k := s.partitions(tube)
	st := queue.TubeStats{Name: tube}
	known := false
	for p := 0; p < k; p++ {
		tag := tubeTag(tube, p, k)
		v, err := s.run(ctx, scripts.statsTube, tag, tube, tube)
		if err != nil {
			return queue.TubeStats{}, err
		}
		r := replyOf(scripts.statsTube)
		if a := r.arr(v, 0); len(a) > 0 {
			addTubeStats(&st, r, a)
			known = true
		}
		if err := r.done(); err != nil {
			return queue.TubeStats{}, err
		}
	}
	if !known {
		return queue.TubeStats{}, fmt.Errorf("%w: tube %s", queue.ErrNotFound, tube)
	}
	return st, nil
}

// PauseTube implements queue.Store; a partitioned tube pauses every partition.
func (s *Store) PauseTube(ctx context.Context, tube string, d time.Duration) error {
	k := s.partitions(tube)
	for p := 0; p < k; p++ {
		if _, err := s.run(ctx, scripts.pause, tubeTag(tube, p, k), tube, tube, ms(d)); err != nil {
			return err
		}
	}
	return nil
}

// Hold implements queue.Store: the references are counted on every
// partition of the tube, each in its own tag, with the owner's session.
func (s *Store) Hold(ctx context.Context, owner, tube string, n int) error {
	k := s.partitions(tube)
	for p := 0; p < k; p++ {
		if err := s.hold(ctx, tubeTag(tube, p, k), queue.SessionOf(owner), tube, n); err != nil {
			return err
		}
	}
	return nil
}

// hold runs hold on one tube partition.
func (s *Store) hold(ctx context.Context, tag int, session, tube string, n int) error {
	ks := append(s.k.tagKeys(tag), s.k.tubeKeys(tag, tube)...)
	ks = append(ks, s.k.holds(tag, session))
	v, err := s.r.run(ctx, call{op: scripts.hold, keys: ks, args: []any{s.now(), tube, n}})
	if err != nil {
		return err
	}
	r := replyOf(scripts.hold)
	r.int(v)
	return r.done()
}

// tagTubes reads every tag's registry in one pipeline: per tag, tube -> creation µs.
func (s *Store) tagTubes(ctx context.Context) ([]map[string]int64, error) {
	if err := s.r.open(queueFamily); err != nil {
		return nil, err
	}
	pipe := s.c.Pipeline()
	zs := make([]*redis.ZSliceCmd, NumTags)
	for tag := 0; tag < NumTags; tag++ {
		zs[tag] = pipe.ZRangeWithScores(ctx, s.k.tagKeys(tag)[2], 0, -1)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, s.storeErr(ctx, err)
	}
	out := make([]map[string]int64, NumTags)
	for tag, c := range zs {
		out[tag] = map[string]int64{}
		for _, z := range c.Val() {
			out[tag][z.Member.(string)] = int64(z.Score)
		}
	}
	return out, nil
}

// allTubes brings every tube of every tag up to date and returns their
// stats, merged over partitions, oldest first: one pipeline of registry
// reads, then one pipeline of statstube calls.
func (s *Store) allTubes(ctx context.Context) ([]queue.TubeStats, error) {
	per, err := s.tagTubes(ctx)
	if err != nil {
		return nil, err
	}
	type part struct {
		tag  int
		tube string
	}
	var parts []part
	var calls []call
	for tag, m := range per {
		for tube := range m {
			parts = append(parts, part{tag, tube})
			calls = append(calls, call{op: scripts.statsTube, keys: append(s.k.tagKeys(tag), s.k.tubeKeys(tag, tube)...), args: []any{s.now(), tube}})
		}
	}
	if len(calls) == 0 {
		return nil, nil
	}
	replies, err := s.runMany(ctx, calls)
	if err != nil {
		return nil, err
	}
	byName := map[string]*queue.TubeStats{}
	created := map[string]int64{}
	for i, v := range replies {
		r := replyOf(scripts.statsTube)
		a := r.arr(v, 0)
		if len(a) == 0 {
			continue // emptied since the registry was read, or its pause ended
		}
		a = r.arr(a, 11)
		name := parts[i].tube
		st := byName[name]
		if st == nil {
			st = &queue.TubeStats{Name: name}
			byName[name] = st
			created[name] = r.int(a[10])
		}
		addTubeStats(st, r, a)
		created[name] = min(created[name], r.int(a[10]))
		if err := r.done(); err != nil {
			return nil, err
		}
	}
	out := make([]queue.TubeStats, 0, len(byName))
	for _, st := range byName {
		out = append(out, *st)
	}
	sort.Slice(out, func(i, j int) bool {
		ci, cj := created[out[i].Name], created[out[j].Name]
		if ci != cj {
			return ci < cj
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}

// addTubeStats adds one partition's statstube reply to st.
func addTubeStats(st *queue.TubeStats, r *reply, a []any) {
	a = r.arr(a, 20)
	n := func(i int) int64 { return r.int(a[i]) }
	st.Cancels += n(19)
	st.Groups += n(16)
	st.GroupReady += n(17)
	st.GroupReserved += n(18)
	st.Urgent += n(0)
	st.Ready += n(1)
	st.Reserved += n(2)
	st.Delayed += n(3)
	st.Buried += n(4)
	st.TotalJobs += n(5)
	st.Deletes += n(6)
	st.Pauses = max(st.Pauses, n(7))
	st.Pause = max(st.Pause, time.Duration(n(8))*time.Millisecond)
	st.PauseTimeLeft = max(st.PauseTimeLeft, time.Duration(n(9))*time.Millisecond)
	st.Reserves += n(11)
	st.Buries += n(12)
	st.Timeouts += n(13)
	st.LimitHolds += n(14)
	if spec := r.str(a[15]); spec != "" {
		if l, err := parseLimitSpec(spec); err == nil {
			st.Limits = l
		} else {
			r.fail("tube limits", a[15])
		}
	}
}

// Tubes implements queue.Store: the tubes of every tag, merged, oldest first.
func (s *Store) Tubes(ctx context.Context) ([]string, error) {
	all, err := s.allTubes(ctx)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(all))
	for i, st := range all {
		names[i] = st.Name
	}
	return names, nil
}

// Stats implements queue.Store. It sums the stats of every tube and the
// counters of every tag: a sum of per-node views, not one atomic snapshot.
func (s *Store) Stats(ctx context.Context) (queue.Stats, error) {
	var st queue.Stats
	all, err := s.allTubes(ctx)
	if err != nil {
		return st, err
	}
	for _, ts := range all {
		st.TotalJobs += ts.TotalJobs
		st.Urgent += ts.Urgent
		st.Ready += ts.Ready
		st.Reserved += ts.Reserved
		st.Delayed += ts.Delayed
		st.Buried += ts.Buried
		st.Tubes++
	}
	pipe := s.c.Pipeline()
	cmds := make([]*redis.SliceCmd, NumTags)
	for tag := 0; tag < NumTags; tag++ {
		cmds[tag] = pipe.HMGet(ctx, s.k.tagKeys(tag)[0], "gone", "timeouts")
	}
	if _, err := pipe.Exec(ctx); err != nil && !isNil(err) {
		return st, s.storeErr(ctx, err)
	}
	for _, c := range cmds {
		v := c.Val()
		st.TotalJobs += atoi(v[0])
		st.Timeouts += atoi(v[1])
	}
	return st, nil
}

func isNotFound(err error) bool { return errors.Is(err, queue.ErrNotFound) }

func isNil(err error) bool { return errors.Is(err, redis.Nil) }

// atoi reads an optional integer field of an HMGET reply.
func atoi(v any) int64 {
	s, ok := v.(string)
	if !ok {
		return 0
	}
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}

// CheckInvariants verifies every tag (tests and diagnostics: it reads every
// job): each job is in exactly the index its state names, every index entry
// has its job, each tube's job count and next-due mark are right, and every
// tube with jobs is registered.
func (s *Store) CheckInvariants(ctx context.Context) error {
	per, err := s.tagTubes(ctx)
	if err != nil {
		return err
	}
	pipe := s.c.Pipeline()
	lens := make([]*redis.IntCmd, NumTags)
	for tag := range NumTags {
		lens[tag] = pipe.HLen(ctx, s.k.tagKeys(tag)[1])
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return s.storeErr(ctx, err)
	}
	var problems []string
	for tag := range NumTags {
		if len(per[tag]) == 0 && lens[tag].Val() == 0 {
			continue
		}
		ks := s.k.tagKeys(tag)
		args := []any{s.now()}
		for tube := range per[tag] {
			ks = append(ks, s.k.tubeKeys(tag, tube)...)
			args = append(args, tube)
		}
		vs, err := s.runMany(ctx, []call{{op: scripts.check, keys: ks, args: args}})
		if err != nil {
			return err
		}
		r := replyOf(scripts.check)
		for _, p := range r.arr(vs[0], 0) {
			problems = append(problems, fmt.Sprintf("tag %d: %s", tag, r.str(p)))
		}
		if err := r.done(); err != nil {
			return err
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("redisstore: %d invariant violations: %s", len(problems), strings.Join(problems, "; "))
	}
	return nil
}
