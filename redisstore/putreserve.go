package redisstore

import (
	"context"
	"errors"
	"sort"
	"strconv"
	"time"

	"github.com/hourglass-io/hourglass/queue"
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
			args := make([]any, 0, 2+6*(end-start))
			args = append(args, tube, tag)
			for _, i := range idx[start:end] {
				j := jobs[i]
				args = append(args, j.Priority, ms(j.Delay), ms(j.TTR), putKey(j), j.TraceContext, j.Body)
			}
			ks := append(s.k.tagKeys(tag), s.k.tubeKeys(tag, tube)...)
			ks = append(ks, s.idKey(ks[0]))
			v, err := s.r.run(ctx, call{op: scripts.put, keys: ks, args: append([]any{s.now()}, args...)})
			if err != nil {
				return nil, err
			}
			r := replyOf(scripts.put)
			a := r.arr(v, 2*(end-start))
			for n, i := range idx[start:end] {
				id := queue.ID(r.int(a[2*n]))
				out[i] = queue.PutResult{ID: id}
				if res, ok := a[2*n+1].(string); ok {
					// a kept job's result
					out[i].Duplicate, out[i].State = true, queue.Finished
					if res != "" {
						out[i].Result = []byte(res)
					}
					continue
				}
				switch f := r.int(a[2*n+1]); {
				case f >= 20:
					out[i].Duplicate, out[i].Debounced, out[i].State = true, true, queue.State(f-20)
				case f >= 10:
					out[i].Duplicate, out[i].State = true, queue.State(f-10)
				case f > 0:
					out[i].Duplicate, out[i].State = true, queue.Finished
				}
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

// putKey is the unique key argument of put.lua: the key, or for a job
// with windows on its key or a debounce NUL, "<unique for ms>:<kept 1|0>",
// then for a debounce ":<mode>:<max wait ms>:<duplicate live 1|0>", NUL,
// the key.
func putKey(j queue.NewJob) string {
	if !j.HasKeyOptions() {
		return j.UniqueKey
	}
	head := "\x00" + strconv.FormatInt(j.UniqueFor.Milliseconds(), 10) + ":" + flag(j.UniqueKept)
	if j.Debounce != 0 {
		head += ":" + strconv.Itoa(int(j.Debounce)) + ":" + strconv.FormatInt(j.MaxWait.Milliseconds(), 10) + ":" + flag(j.DuplicateLive)
	}
	return head + "\x00" + j.UniqueKey
}

func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
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
	rr := &reserveRun{s: s, ctx: ctx, req: req, gs: s.groups(req.Tubes)}
	rr.res.Deleted = make([]error, len(req.Delete))
	if err := rr.routeDeletes(); err != nil {
		return rr.res, err
	}
	rr.res.Next = -1
	order := []int{0}
	if len(rr.gs) > 1 && len(req.Tubes) == 1 {
		order = rr.partitionOrder()
	} else if len(rr.gs) > 1 {
		var err error
		if order, err = rr.lookAhead(); err != nil || len(order) == 0 {
			if err != nil {
				return rr.res, err
			}
			return s.recheckDeleted(ctx, req, rr.cached, rr.res)
		}
		rr.withGroup = nil // done
	}
	for _, gi := range order {
		if err := rr.reserveIn(gi); err != nil {
			return rr.res, err
		}
	}
	if len(rr.res.Jobs) > 0 && !rr.res.Drained {
		rr.res.Next, rr.res.NextTube = -1, ""
	}
	return s.recheckDeleted(ctx, req, rr.cached, rr.res)
}

// reserveRun is one Reserve: its request, the tags of its tubes, the
// deletes riding with each tag's call, and the result it builds.
type reserveRun struct {
	s   *Store
	ctx context.Context
	req queue.ReserveRequest
	gs  []group
	res queue.ReserveResult
	// withGroup are the deletes of jobs in a tube of a group, which ride
	// along with that group's reserve, by group.
	withGroup map[int][]reserveDel
	cached    []bool
}

// reserveDel is a delete riding with a reserve: its index in
// req.Delete and its job's tube.
type reserveDel struct {
	i    int
	tube string
}

// routeDeletes sorts the request's deletes: those of jobs in a tube of a
// group ride along with that group's reserve; the others go first on
// their own.
func (rr *reserveRun) routeDeletes() error {
	rr.withGroup = map[int][]reserveDel{}
	if len(rr.req.Delete) == 0 {
		return nil
	}
	s, req := rr.s, rr.req
	located, c, err := s.locateCached(rr.ctx, req.Delete)
	if err != nil {
		return err
	}
	rr.cached = c
	var alone []int
	for i, id := range req.Delete {
		tube := located[i]
		if tube == "" {
			rr.res.Deleted[i] = queue.ErrNotFound
			continue
		}
		g := -1
		for gi, gr := range rr.gs {
			if gr.tag == tagOf(id) && contains(gr.tubes, tube) {
				g = gi
				break
			}
		}
		if g < 0 {
			alone = append(alone, i)
			continue
		}
		rr.withGroup[g] = append(rr.withGroup[g], reserveDel{i, tube})
	}
	if len(alone) == 0 {
		return nil
	}
	ids := make([]queue.ID, len(alone))
	for n, i := range alone {
		ids[n] = req.Delete[i]
	}
	errs, err := s.Delete(rr.ctx, req.Owner, ids)
	if err != nil {
		return err
	}
	for n, i := range alone {
		rr.res.Deleted[i] = errs[n]
	}
	return nil
}

// call is the reserve of up to want jobs from group gi, with the deletes
// riding along with it.
func (rr *reserveRun) call(gi, want int) call {
	s, g, dels := rr.s, rr.gs[gi], rr.withGroup[gi]
	args := make([]any, 0, 6+len(g.tubes)+2*len(dels))
	args = append(args, s.now(), len(g.tubes))
	for _, t := range g.tubes {
		args = append(args, t)
	}
	args = append(args, 1, rr.req.Owner, want, len(dels))
	for _, d := range dels {
		args = append(args, indexOf(g.tubes, d.tube)+1, idhex(rr.req.Delete[d.i]))
	}
	ks := s.k.tagKeys(g.tag)
	for _, t := range g.tubes {
		ks = append(ks, s.k.tubeKeys(g.tag, t)...)
	}
	return call{op: scripts.reserve, keys: ks, args: args}
}

// absorb takes in group gi's reply (a look ahead's, when look is set).
func (rr *reserveRun) absorb(gi int, v any, look bool) ([]any, error) {
	s, dels := rr.s, rr.withGroup[gi]
	r := replyOf(scripts.reserve)
	n := 4
	if look {
		n = 6
	}
	a := r.arr(r.arr(v, 1)[0], n)
	codes := r.arr(a[0], len(dels))
	for n, d := range dels {
		code := r.int(codes[n])
		rr.res.Deleted[d.i] = deleteOutcome(code)
		if code == 2 {
			s.keep.noteAsync(rr.ctx, rr.gs[gi].tag)
		}
	}
	jobs, err := parseJobs(r, r.arr(a[1], 0))
	if err != nil {
		return nil, err
	}
	for _, j := range jobs {
		s.tubes.add(j.ID, j.Tube)
		rr.res.Jobs = append(rr.res.Jobs, j)
	}
	if !look && len(a) > 4 && r.int(a[4]) == 1 && len(rr.gs) == 1 {
		rr.res.Drained = true
	}
	if next := r.int(a[2]); next >= 0 {
		d := time.Duration(next) * time.Microsecond
		ti := int(r.int(a[3])) - 1
		if ti < 0 || ti >= len(rr.gs[gi].tubes) {
			r.fail("a tube index", a[3])
		} else if rr.res.Next < 0 || d < rr.res.Next {
			rr.res.Next, rr.res.NextTube = d, rr.gs[gi].tubes[ti]
		}
	}
	return a, r.done()
}

// partitionOrder is the order in which to try the partitions of one
// tube: priority order holds within a partition only, so take them from a
// random one onwards, one call each until enough jobs are found.
func (rr *reserveRun) partitionOrder() []int {
	start := randInt(len(rr.gs))
	for gi := range rr.gs {
		if len(rr.withGroup[gi]) > 0 {
			start = gi // the partition of the job just finished: one call does both
			break
		}
	}
	order := make([]int, 0, len(rr.gs))
	for n := range rr.gs {
		order = append(order, (start+n)%len(rr.gs))
	}
	return order
}

// lookAhead, for several tags, first looks at every tag's best ready job
// (and does the deletes), in one pipeline, and returns the tags with a
// job in the order of their best jobs (none: nothing is ready). Exact
// unless another reserver takes a job in between.
func (rr *reserveRun) lookAhead() ([]int, error) {
	calls := make([]call, len(rr.gs))
	for gi := range rr.gs {
		calls[gi] = rr.call(gi, 0)
	}
	replies, err := rr.s.runMany(rr.ctx, calls)
	if err != nil {
		return nil, err
	}
	type head struct {
		gi  int
		pri int64
		id  string
	}
	var heads []head
	for gi, v := range replies {
		a, err := rr.absorb(gi, v, true)
		if err != nil {
			return nil, err
		}
		r := replyOf(scripts.reserve)
		if pri := r.int(a[4]); pri >= 0 {
			heads = append(heads, head{gi, pri, r.str(a[5])})
		}
		if err := r.done(); err != nil {
			return nil, err
		}
	}
	sort.Slice(heads, func(i, j int) bool {
		if heads[i].pri != heads[j].pri {
			return heads[i].pri < heads[j].pri
		}
		return heads[i].id < heads[j].id
	})
	order := make([]int, 0, len(heads))
	for _, h := range heads {
		order = append(order, h.gi)
	}
	return order, nil
}

// reserveIn reserves what the request still wants from group gi, with
// the deletes riding along with it.
func (rr *reserveRun) reserveIn(gi int) error {
	s, req, dels := rr.s, rr.req, rr.withGroup[gi]
	want := max(req.Max-len(rr.res.Jobs), 0)
	if want == 0 && len(dels) == 0 {
		return nil
	}
	c := rr.call(gi, want)
	tag := rr.gs[gi].tag
	if want > 0 {
		s.held.begin(req.Owner, tag)
	}
	had := len(rr.res.Jobs)
	v, err := s.r.run(rr.ctx, c)
	if err == nil {
		_, err = rr.absorb(gi, v, false)
	}
	if want > 0 {
		var got []queue.ID
		for _, j := range rr.res.Jobs[had:] {
			got = append(got, j.ID)
		}
		s.held.end(req.Owner, tag, got, err)
	}
	if err != nil {
		return err
	}
	for _, d := range dels {
		if rr.res.Deleted[d.i] == nil {
			s.held.ended(req.Owner, req.Delete[d.i])
		}
	}
	return nil
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
	case 1, 2: // 2: kept (keep.go)
		return nil
	case -1:
		return queue.ErrReserved
	default:
		return queue.ErrNotFound
	}
}

// jobValues is the length of a job reply (jobreply in lib.lua).
const jobValues = 9

// parseJobs reads the flat job replies of an operation (jobValues per job).
func parseJobs(r *reply, a []any) ([]queue.Job, error) {
	jobs := make([]queue.Job, 0, len(a)/jobValues)
	for i := 0; i+jobValues <= len(a); i += jobValues {
		jobs = append(jobs, parseJob(r, a[i:i+jobValues]))
	}
	return jobs, r.done()
}

// parseJob reads one job reply: id, tube, pri, ttr ms, reserves, body,
// unique key, ms left on the reservation (0 but for a reserve), trace
// context.
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
		Left:      time.Duration(r.int(a[7])) * time.Millisecond,

		TraceContext: r.str(a[8]),
	}
}
