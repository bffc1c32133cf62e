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

const maxBatch = 1000 // jobs per script call, to bound the work of one call

func ms(d time.Duration) int64 { return d.Milliseconds() }

// Put implements queue.Store.
func (s *Store) Put(ctx context.Context, tube string, jobs []queue.NewJob) ([]queue.PutResult, error) {
	k := s.partitions(tube)
	// Group the jobs by partition, keeping their order within each.
	groups := make(map[int][]int)
	var order []int
	for i, j := range jobs {
		p := 0
		if k > 1 {
			if j.UniqueKey != "" {
				p = int(fnv32(j.UniqueKey) % uint32(k))
			} else {
				p = int(s.rr.Add(1) % uint64(k))
			}
		}
		if _, ok := groups[p]; !ok {
			order = append(order, p)
		}
		groups[p] = append(groups[p], i)
	}
	out := make([]queue.PutResult, len(jobs))
	for _, p := range order {
		idx := groups[p]
		tag := tubeTag(tube, p, k)
		for start := 0; start < len(idx); start += maxBatch {
			end := min(start+maxBatch, len(idx))
			args := make([]any, 0, 2+5*(end-start))
			args = append(args, tube, tag)
			for _, i := range idx[start:end] {
				j := jobs[i]
				args = append(args, j.Priority, ms(j.Delay), ms(j.TTR), j.UniqueKey, j.Body)
			}
			ks := append(s.k.tagKeys(tag), s.k.tubeKeys(tag, tube)...)
			ks = append(ks, s.idKey(ks[0]))
			v, err := s.r.run(ctx, call{op: scripts.put, keys: ks, args: append([]any{s.now()}, args...)})
			err = queueErrs.mapErr(err)
			if err != nil {
				return nil, err
			}
			r := replyOf(scripts.put)
			a := r.arr(v, 2*(end-start))
			for n, i := range idx[start:end] {
				id := queue.ID(r.int(a[2*n]))
				out[i] = queue.PutResult{ID: id, Duplicate: r.int(a[2*n+1]) == 1}
			}
			if err := r.done(); err != nil {
				return nil, err
			}
			for _, i := range idx[start:end] {
				s.tubes.add(out[i].ID, tube)
			}
		}
	}
	return out, nil
}

func fnv32(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return h
}

// group is the tubes of one reserve that live on one tag.
type group struct {
	tag   int
	tubes []string
}

func (s *Store) groups(tubes []string) []group {
	at := map[int]int{}
	var gs []group
	for _, t := range tubes {
		k := s.partitions(t)
		for p := 0; p < k; p++ {
			tag := tubeTag(t, p, k)
			i, ok := at[tag]
			if !ok {
				i = len(gs)
				at[tag] = i
				gs = append(gs, group{tag: tag})
			}
			gs[i].tubes = append(gs[i].tubes, t)
		}
	}
	return gs
}

// Reserve implements queue.Store. The tubes are grouped by tag; each group
// is one script call, tried from a random group onwards, so (priority, ID)
// order holds within a group and is best effort across groups.
func (s *Store) Reserve(ctx context.Context, req queue.ReserveRequest) (queue.ReserveResult, error) {
	var res queue.ReserveResult
	gs := s.groups(req.Tubes)

	// Deletes of jobs in a tube of a group ride along with that group's
	// reserve; the others go first on their own.
	res.Deleted = make([]error, len(req.Delete))
	type del struct {
		i    int
		tube string
	}
	withGroup := map[int][]del{}
	var cached []bool
	if len(req.Delete) > 0 {
		located, c, err := s.locateCached(ctx, req.Delete)
		if err != nil {
			return res, err
		}
		cached = c
		var alone []int
		for i, id := range req.Delete {
			tube := located[i]
			if tube == "" {
				res.Deleted[i] = queue.ErrNotFound
				continue
			}
			g := -1
			for gi, gr := range gs {
				if gr.tag == tagOf(id) && contains(gr.tubes, tube) {
					g = gi
					break
				}
			}
			if g < 0 {
				alone = append(alone, i)
				continue
			}
			withGroup[g] = append(withGroup[g], del{i, tube})
		}
		if len(alone) > 0 {
			ids := make([]queue.ID, len(alone))
			for n, i := range alone {
				ids[n] = req.Delete[i]
			}
			errs, err := s.Delete(ctx, req.Owner, ids)
			if err != nil {
				return res, err
			}
			for n, i := range alone {
				res.Deleted[i] = errs[n]
			}
		}
	}

	res.Next = -1
	mkcall := func(gi, want int, dels []del) call {
		g := gs[gi]
		args := make([]any, 0, 6+len(g.tubes)+2*len(dels))
		args = append(args, s.now(), len(g.tubes))
		for _, t := range g.tubes {
			args = append(args, t)
		}
		args = append(args, 1, req.Owner, want, len(dels))
		for _, d := range dels {
			args = append(args, indexOf(g.tubes, d.tube)+1, idhex(req.Delete[d.i]))
		}
		ks := s.k.tagKeys(g.tag)
		for _, t := range g.tubes {
			ks = append(ks, s.k.tubeKeys(g.tag, t)...)
		}
		if sess := queue.SessionOf(req.Owner); sess != "" {
			ks = append(ks, s.k.sessionIndex(g.tag, sess))
		}
		return call{op: scripts.reserve, keys: ks, args: args}
	}
	// absorb takes in one group's reply.
	absorb := func(gi int, v any, dels []del, look bool) ([]any, error) {
		r := replyOf(scripts.reserve)
		n := 4
		if look {
			n = 6
		}
		a := r.arr(r.arr(v, 1)[0], n)
		codes := r.arr(a[0], len(dels))
		for n, d := range dels {
			res.Deleted[d.i] = deleteOutcome(r.int(codes[n]))
		}
		jobs, err := parseJobs(r, r.arr(a[1], 0))
		if err != nil {
			return nil, err
		}
		for _, j := range jobs {
			s.tubes.add(j.ID, j.Tube)
			res.Jobs = append(res.Jobs, j)
		}
		if next := r.int(a[2]); next >= 0 {
			d := time.Duration(next) * time.Microsecond
			ti := int(r.int(a[3])) - 1
			if ti < 0 || ti >= len(gs[gi].tubes) {
				r.fail("a tube index", a[3])
			} else if res.Next < 0 || d < res.Next {
				res.Next, res.NextTube = d, gs[gi].tubes[ti]
			}
		}
		return a, r.done()
	}

	order := []int{0}
	if len(gs) > 1 && len(req.Tubes) == 1 {
		// The partitions of one tube: priority order holds within a
		// partition only, so take them from a random one onwards, one call
		// each until enough jobs are found.
		start := randInt(len(gs))
		for gi := range gs {
			if len(withGroup[gi]) > 0 {
				start = gi // the partition of the job just finished: one call does both
				break
			}
		}
		order = order[:0]
		for n := range gs {
			order = append(order, (start+n)%len(gs))
		}
	} else if len(gs) > 1 {
		// Several tags: first look at every tag's best ready job (and do the
		// deletes), in one pipeline; then reserve from the tags in the
		// order of their best jobs. Exact unless another reserver takes a
		// job in between.
		calls := make([]call, len(gs))
		for gi := range gs {
			calls[gi] = mkcall(gi, 0, withGroup[gi])
		}
		replies, err := s.runMany(ctx, calls)
		if err != nil {
			return res, err
		}
		type head struct {
			gi  int
			pri int64
			id  string
		}
		var heads []head
		for gi, v := range replies {
			a, err := absorb(gi, v, withGroup[gi], true)
			if err != nil {
				return res, err
			}
			r := replyOf(scripts.reserve)
			if pri := r.int(a[4]); pri >= 0 {
				heads = append(heads, head{gi, pri, r.str(a[5])})
			}
			if err := r.done(); err != nil {
				return res, err
			}
		}
		if len(heads) == 0 {
			return s.recheckDeleted(ctx, req, cached, res)
		}
		sort.Slice(heads, func(i, j int) bool {
			if heads[i].pri != heads[j].pri {
				return heads[i].pri < heads[j].pri
			}
			return heads[i].id < heads[j].id
		})
		order = order[:0]
		for _, h := range heads {
			order = append(order, h.gi)
		}
		withGroup = nil // done
	}
	for _, gi := range order {
		want := max(req.Max-len(res.Jobs), 0)
		if want == 0 && len(withGroup[gi]) == 0 {
			continue
		}
		c := mkcall(gi, want, withGroup[gi])
		v, err := s.r.run(ctx, c)
		if err != nil {
			return res, queueErrs.mapErr(err)
		}
		if _, err := absorb(gi, v, withGroup[gi], false); err != nil {
			return res, err
		}
	}
	if len(res.Jobs) > 0 {
		res.Next, res.NextTube = -1, ""
	}
	return s.recheckDeleted(ctx, req, cached, res)
}

// recheckDeleted looks again for the finished jobs of a reserve that were
// not found in the tube the cache named, where Redis says they are.
func (s *Store) recheckDeleted(ctx context.Context, req queue.ReserveRequest, cached []bool, res queue.ReserveResult) (queue.ReserveResult, error) {
	var again []queue.ID
	var at []int
	for i, e := range res.Deleted {
		if cached[i] && errors.Is(e, queue.ErrNotFound) {
			s.tubes.drop(req.Delete[i])
			again = append(again, req.Delete[i])
			at = append(at, i)
		}
	}
	if len(again) == 0 {
		return res, nil
	}
	errs, err := s.Delete(ctx, req.Owner, again)
	if err != nil {
		return res, err
	}
	for n, i := range at {
		res.Deleted[i] = errs[n]
	}
	return res, nil
}

func contains(xs []string, x string) bool { return indexOf(xs, x) >= 0 }

func indexOf(xs []string, x string) int {
	for i, v := range xs {
		if v == x {
			return i
		}
	}
	return -1
}

func deleteOutcome(code int64) error {
	switch code {
	case 1:
		return nil
	case -1:
		return queue.ErrReserved
	default:
		return queue.ErrNotFound
	}
}

// jobValues is the length of a job reply (jobreply in lib.lua).
const jobValues = 7

// parseJobs reads the flat job replies of an operation (jobValues per job).
func parseJobs(r *reply, a []any) ([]queue.Job, error) {
	jobs := make([]queue.Job, 0, len(a)/jobValues)
	for i := 0; i+jobValues <= len(a); i += jobValues {
		jobs = append(jobs, parseJob(r, a[i:i+jobValues]))
	}
	return jobs, r.done()
}

// parseJob reads one job reply: id, tube, pri, ttr ms, reserves, body,
// unique key.
func parseJob(r *reply, v any) queue.Job {
	a := r.arr(v, jobValues)
	return queue.Job{
		ID:        queue.ID(r.int(a[0])),
		Tube:      r.str(a[1]),
		Priority:  uint32(r.int(a[2])),
		TTR:       time.Duration(r.int(a[3])) * time.Millisecond,
		Reserves:  uint32(r.int(a[4])),
		Body:      []byte(r.str(a[5])),
		UniqueKey: r.str(a[6]),
	}
}

// locate returns the tube of each job ("" when there is no such job), from
// the cache or, for the rest, one script call per tag.
func (s *Store) locate(ctx context.Context, ids []queue.ID) ([]string, error) {
	out, _, err := s.locateCached(ctx, ids)
	return out, err
}

// locateCached is locate, saying which tubes came from the cache.
func (s *Store) locateCached(ctx context.Context, ids []queue.ID) ([]string, []bool, error) {
	out := make([]string, len(ids))
	cached := make([]bool, len(ids))
	missing := map[int][]int{}
	for i, id := range ids {
		if id == 0 || id > queue.MaxID {
			continue
		}
		if t, ok := s.tubes.get(id); ok {
			out[i], cached[i] = t, true
			continue
		}
		missing[tagOf(id)] = append(missing[tagOf(id)], i)
	}
	for tag, idx := range missing {
		args := make([]any, len(idx))
		for n, i := range idx {
			args[n] = idhex(ids[i])
		}
		v, err := s.run(ctx, scripts.locate, tag, "", args...)
		if err != nil {
			return nil, nil, err
		}
		r := replyOf(scripts.locate)
		for n, t := range r.arr(v, len(idx)) {
			if t, ok := t.(string); ok { // false (nil here) when there is no such job
				out[idx[n]] = t
				s.tubes.add(ids[idx[n]], t)
			}
		}
		if err := r.done(); err != nil {
			return nil, nil, err
		}
	}
	return out, cached, nil
}

// withTube runs f on the tube of job id; f reports whether it found the
// job not there (no such job, or in another tube) with the error to return.
// A tube from this process's cache is checked, not trusted: when f finds
// the job not there, the cache forgets id and f runs once more on the tube
// Redis names now, if it is another. So a cache never makes a job that
// exists "not found".
func (s *Store) withTube(ctx context.Context, id queue.ID, f func(tube string) (notThere bool, err error)) error {
	tube, cached := s.tubes.get(id)
	if !cached {
		t, err := s.locateOne(ctx, id)
		if err != nil {
			return err
		}
		tube = t
	}
	notThere, err := f(tube)
	if !notThere || !cached {
		return err
	}
	s.tubes.drop(id)
	fresh, lerr := s.locateOne(ctx, id)
	if lerr != nil {
		return lerr
	}
	if fresh == tube {
		return err
	}
	_, err = f(fresh)
	return err
}

// locateOne returns the tube of one job, or queue.ErrNotFound.
func (s *Store) locateOne(ctx context.Context, id queue.ID) (string, error) {
	t, err := s.locate(ctx, []queue.ID{id})
	if err != nil {
		return "", err
	}
	if t[0] == "" {
		return "", fmt.Errorf("%w: %d", queue.ErrNotFound, id)
	}
	return t[0], nil
}

// Delete implements queue.Store. A job not found in the tube this
// process's cache named is looked for again in the tube Redis names.
func (s *Store) Delete(ctx context.Context, owner string, ids []queue.ID) ([]error, error) {
	out, cached, err := s.delete(ctx, owner, ids)
	if err != nil {
		return nil, err
	}
	var again []int
	for i, e := range out {
		if cached[i] && errors.Is(e, queue.ErrNotFound) {
			s.tubes.drop(ids[i])
			again = append(again, i)
		}
	}
	if len(again) == 0 {
		return out, nil
	}
	retry := make([]queue.ID, len(again))
	for n, i := range again {
		retry[n] = ids[i]
	}
	errs, _, err := s.delete(ctx, owner, retry)
	if err != nil {
		return nil, err
	}
	for n, i := range again {
		out[i] = errs[n]
	}
	return out, nil
}

// delete deletes jobs in the tubes locate names, and says which came from
// the cache.
func (s *Store) delete(ctx context.Context, owner string, ids []queue.ID) ([]error, []bool, error) {
	out := make([]error, len(ids))
	tubes, cached, err := s.locateCached(ctx, ids)
	if err != nil {
		return nil, nil, err
	}
	type key struct {
		tag  int
		tube string
	}
	groups := map[key][]int{}
	var order []key
	for i, id := range ids {
		if tubes[i] == "" {
			out[i] = queue.ErrNotFound
			continue
		}
		k := key{tagOf(id), tubes[i]}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], i)
	}
	for _, k := range order {
		idx := groups[k]
		args := make([]any, 0, 4+len(idx))
		args = append(args, k.tube, 1, owner, len(idx))
		for _, i := range idx {
			args = append(args, idhex(ids[i]))
		}
		v, err := s.runAs(ctx, scripts.delete, k.tag, k.tube, owner, args...)
		if err != nil {
			return nil, nil, err
		}
		r := replyOf(scripts.delete)
		codes := r.arr(r.arr(v, 1)[0], len(idx))
		for n, i := range idx {
			out[i] = deleteOutcome(r.int(codes[n]))
		}
		if err := r.done(); err != nil {
			return nil, nil, err
		}
	}
	return out, cached, nil
}

// codeErr turns the status of a by-ID script into an error.
func codeErr(code int64, id queue.ID) error {
	switch code {
	case 1:
		return nil
	case 0, -2:
		return fmt.Errorf("%w: %d", queue.ErrNotFound, id)
	case -1:
		return fmt.Errorf("%w: %d", queue.ErrNotReserved, id)
	case -3:
		return fmt.Errorf("%w: %d", queue.ErrNotKickable, id)
	}
	return fmt.Errorf("redisstore: unexpected script status %d", code)
}

// owned runs release, bury or touch: scripts whose ARGV are now, owner, tube, id, extra...
func (s *Store) owned(ctx context.Context, sc *op, owner string, id queue.ID, extra ...any) error {
	return s.withTube(ctx, id, func(tube string) (bool, error) {
		code, err := s.status(ctx, sc, tagOf(id), tube, owner, append([]any{owner, tube, idhex(id)}, extra...)...)
		if err != nil {
			return false, err
		}
		return code == 0 || code == -2, codeErr(code, id)
	})
}

// Release implements queue.Store.
func (s *Store) Release(ctx context.Context, owner string, id queue.ID, pri uint32, delay time.Duration, reason string) error {
	return s.owned(ctx, scripts.release, owner, id, pri, ms(delay), reason)
}

// Bury implements queue.Store.
func (s *Store) Bury(ctx context.Context, owner string, id queue.ID, pri uint32, reason string) error {
	return s.owned(ctx, scripts.bury, owner, id, pri, reason)
}

// Touch implements queue.Store.
func (s *Store) Touch(ctx context.Context, owner string, id queue.ID) error {
	return s.owned(ctx, scripts.touch, owner, id)
}

// Unreserve implements queue.Store.
func (s *Store) Unreserve(ctx context.Context, owner string, ids []queue.ID) (int, error) {
	tubes, err := s.locate(ctx, ids)
	if err != nil {
		return 0, err
	}
	type key struct {
		tag  int
		tube string
	}
	groups := map[key][]any{}
	for i, id := range ids {
		if tubes[i] != "" {
			k := key{tagOf(id), tubes[i]}
			groups[k] = append(groups[k], idhex(id))
		}
	}
	total := 0
	for k, hs := range groups {
		n, err := s.status(ctx, scripts.unreserve, k.tag, k.tube, owner, append([]any{owner, k.tube}, hs...)...)
		if err != nil {
			return total, err
		}
		total += int(n)
	}
	return total, nil
}

// ReserveJob implements queue.Store.
func (s *Store) ReserveJob(ctx context.Context, owner string, id queue.ID) (queue.Job, error) {
	var j queue.Job
	err := s.withTube(ctx, id, func(tube string) (bool, error) {
		v, err := s.runAs(ctx, scripts.reserveJob, tagOf(id), tube, owner, owner, tube, idhex(id))
		if err != nil {
			return false, err
		}
		r := replyOf(scripts.reserveJob)
		a := r.arr(v, 1)
		code := r.int(a[0])
		if err := r.done(); err != nil {
			return false, err
		}
		switch code {
		case 1:
			j = parseJob(r, r.arr(a, 2)[1])
			return false, r.done()
		case -1:
			return false, fmt.Errorf("%w: %d", queue.ErrReserved, id)
		}
		return true, fmt.Errorf("%w: %d", queue.ErrNotFound, id)
	})
	return j, err
}

// Kick implements queue.Store. A partitioned tube is kicked partition by
// partition until n jobs have moved.
func (s *Store) Kick(ctx context.Context, tube string, n int) (int, error) {
	k := s.partitions(tube)
	total := 0
	for p := 0; p < k && total < n; p++ {
		tag := tubeTag(tube, p, k)
		for total < n {
			want := min(n-total, maxBatch)
			n, err := s.status(ctx, scripts.kick, tag, tube, "", tube, want)
			if err != nil {
				return total, err
			}
			got := int(n)
			total += got
			if got < want {
				break
			}
		}
	}
	return total, nil
}

// KickJob implements queue.Store.
func (s *Store) KickJob(ctx context.Context, id queue.ID) error {
	return s.withTube(ctx, id, func(tube string) (bool, error) {
		code, err := s.status(ctx, scripts.kickJob, tagOf(id), tube, "", tube, idhex(id))
		if err != nil {
			return false, err
		}
		return code == 0 || code == -2, codeErr(code, id)
	})
}

// peekStats is how many integers peek.lua's stats hold; the last error
// follows them.
const peekStats = 18

// peek runs peek.lua: the job, its stats and its last error.
func (s *Store) peek(ctx context.Context, id queue.ID) (queue.Job, []int64, string, error) {
	var (
		j       queue.Job
		stats   []int64
		lastErr string
	)
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
		a = r.arr(a, 3)
		j = parseJob(r, a[1])
		st := r.arr(a[2], peekStats+1)
		stats = make([]int64, peekStats)
		for i, x := range st[:peekStats] {
			stats[i] = r.int(x)
		}
		lastErr = r.str(st[peekStats])
		return false, r.done()
	})
	return j, stats, lastErr, err
}

// Peek implements queue.Store.
func (s *Store) Peek(ctx context.Context, id queue.ID) (queue.Job, error) {
	j, _, _, err := s.peek(ctx, id)
	return j, err
}

// timeMS converts Unix milliseconds to a Time in UTC; 0 is the zero Time
// (never).
func timeMS(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMilli(v).UTC()
}

// StatsJob implements queue.Store.
func (s *Store) StatsJob(ctx context.Context, id queue.ID) (queue.JobStats, error) {
	j, st, lastErr, err := s.peek(ctx, id)
	if err != nil {
		return queue.JobStats{}, err
	}
	n := func(i int) int64 { return st[i] }
	d := func(i int) time.Duration { return time.Duration(n(i)) * time.Millisecond }
	return queue.JobStats{
		ID: j.ID, Tube: j.Tube, State: queue.State(n(0)), Priority: uint32(n(1)),
		Age: d(2), Delay: d(3), TTR: d(4), TimeLeft: d(5),
		Reserves: uint32(n(6)), Timeouts: uint32(n(7)), Releases: uint32(n(8)), Buries: uint32(n(9)), Kicks: uint32(n(10)),
		PutAt: timeMS(n(11)), ReservedAt: timeMS(n(12)), ReleasedAt: timeMS(n(13)), BuriedAt: timeMS(n(14)),
		KickedAt: timeMS(n(15)), TimedOutAt: timeMS(n(16)), LastErrorAt: timeMS(n(17)), LastError: lastErr,
		UniqueKey: j.UniqueKey,
	}, nil
}

// PeekState implements queue.Store. For a partitioned tube it looks at every
// partition and returns the best by the state's order.
func (s *Store) PeekState(ctx context.Context, tube string, st queue.State) (queue.Job, error) {
	jobs, err := s.PeekStateN(ctx, tube, st, 1)
	if err != nil {
		return queue.Job{}, err
	}
	if len(jobs) == 0 {
		return queue.Job{}, fmt.Errorf("%w: no %s job in tube %s", queue.ErrNotFound, st, tube)
	}
	return jobs[0], nil
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
		return queueErrs.mapErr(err)
	}
	r := replyOf(scripts.hold)
	r.int(v)
	return r.done()
}

// tagTubes reads every tag's registry in one pipeline: per tag, tube -> creation µs.
func (s *Store) tagTubes(ctx context.Context) ([]map[string]int64, error) {
	if s.closed.Load() {
		return nil, queue.ErrClosed
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
	a = r.arr(a, 14)
	n := func(i int) int64 { return r.int(a[i]) }
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
		cmds[tag] = pipe.HMGet(ctx, s.k.tagKeys(tag)[0], "seq", "timeouts")
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
