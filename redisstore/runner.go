package redisstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// runner is the one way the store runs server-side code: every operation
// of every primitive goes through it. It loads the library once on every
// master, runs calls singly or pipelined, loads the library again when a
// node has lost it (a restart without persistence, a new node), and turns
// failures into each primitive's own errors through that primitive's
// errTable.
//
// Calls made through run are committed in groups: a call that arrives
// while another is in flight waits for it and goes out with every other
// call that arrived meanwhile, in one pipeline, and puts to one tube
// partition in that pipeline are merged into one function call. An idle
// caller goes out at once, in one round trip.
//
// The calls go out in three lanes, each with its own queue and its own
// batches in flight: the expiring hashes' (whose sweeps can run long), the
// rate limits' (short calls, many callers, where the round trip rather
// than Redis bounds the rate) and everyone else's, so that a sweep never
// holds up a put, a put never holds up a decision, and the queue's lane
// can keep one batch in flight, which merges the most.
type runner struct {
	c      redis.UniversalClient
	closed *atomic.Bool

	// replicas, when above 0, is how many replicas must acknowledge the
	// calls of operations that wait for them (op.waits), within
	// replicaTimeout (Options.Replicas).
	replicas       int
	replicaTimeout time.Duration

	loadMu sync.Mutex

	main, hashes, limits lane
}

// lane is a queue of calls and the batches it has in flight.
type lane struct {
	r        *runner
	max      func() int // how many batches may be in flight at once
	mu       sync.Mutex
	inflight int        // batches in flight, at most max()
	pending  []*request // calls waiting for the next batch
}

// laneOf returns the lane of o's calls.
func (r *runner) laneOf(o *op) *lane {
	switch o.family.lane {
	case laneHashes:
		return &r.hashes
	case laneLimits:
		return &r.limits
	}
	return &r.main
}

// call is one function call: its operation, KEYS and ARGV (the time first).
type call struct {
	op   *op
	keys []string
	args []any
	// scope limits which calls a merger may merge this one with: those of
	// the same scope ("" on one Redis; the keys' slot on a cluster, where
	// one call cannot reach two slots). Mergers that need the same KEYS
	// leave it empty.
	scope string
}

// errTable maps the runner's failures to the sentinels of one primitive,
// so that no primitive returns another's errors.
type errTable struct {
	closed error // the store is closed
	full   error // Redis refused a write for lack of memory (nil: a plain error)
	// notReplicated: fewer replicas than asked acknowledged a change
	// (Options.Replicas; nil: a plain error).
	notReplicated error
}

var errStoreClosed = errors.New("redisstore: store closed")

// errOOM marks Redis's refusal of a write for lack of memory.
var errOOM = errors.New("redisstore: Redis is out of memory")

// mapErr gives err, a failure of the runner, the primitive's sentinel. The
// runner calls it for every call (run, runMany), the notifier for every
// subscription, and fail and open for the plain commands a store sends
// itself.
func (t errTable) mapErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, errStoreClosed):
		return t.closed
	case errors.Is(err, errOOM) && t.full != nil:
		return fmt.Errorf("%w: %w", t.full, err)
	case errors.Is(err, errNotReplicated) && t.notReplicated != nil:
		return fmt.Errorf("%w: %w", t.notReplicated, err)
	}
	return err
}

// errNotReplicated marks a change that fewer replicas than asked
// acknowledged in time.
var errNotReplicated = errors.New("redisstore: not acknowledged by the replicas")

func newRunner(c redis.UniversalClient, closed *atomic.Bool) *runner {
	r := &runner{c: c, closed: closed}
	r.main = lane{r: r, max: func() int { return maxInflight }}
	r.hashes = lane{r: r, max: func() int { return hashesInflight }}
	r.limits = lane{r: r, max: func() int { return limitsInflight }}
	return r
}

// load loads the library on every master (a no-op where it is loaded).
func (r *runner) load(ctx context.Context) error {
	assemble()
	r.loadMu.Lock()
	defer r.loadMu.Unlock()
	one := func(ctx context.Context, c redis.Cmdable) error {
		err := c.FunctionLoad(ctx, library.source).Err()
		if err != nil && strings.Contains(err.Error(), "already exists") {
			return nil
		}
		return err
	}
	if cc, ok := r.c.(*redis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error { return one(ctx, c) })
	}
	return one(ctx, r.c)
}

// run runs one call, committed with whatever other calls of its lane are
// waiting.
// Its failures are those of the call's family (errTable).
func (r *runner) run(ctx context.Context, c call) (any, error) {
	errs := &c.op.family.errs
	if r.closed.Load() {
		return nil, errs.closed
	}
	v, err := r.laneOf(c.op).run(ctx, c)
	if err != nil {
		return v, errs.mapErr(err)
	}
	return v, nil
}

// open fails with f's error for a closed store: for the plain commands a
// store sends itself, outside the runner, which check it as the runner
// does for every call.
func (r *runner) open(f *family) error {
	if r.closed.Load() {
		return f.errs.closed
	}
	return nil
}

// fail gives a failure of a plain command that a store sends itself (not
// an operation of the library) f's errors, as the runner's are.
func (r *runner) fail(ctx context.Context, f *family, err error) error {
	return f.errs.mapErr(r.failure(ctx, err))
}

func (r *lane) run(ctx context.Context, c call) (any, error) {
	r.mu.Lock()
	if len(r.pending) == 0 && r.inflight < r.max() {
		// Nothing waits and a turn is free: the call goes out alone, at
		// once, without a place in the queue. Calls that arrive meanwhile
		// wait for the turn it hands on.
		r.inflight++
		r.mu.Unlock()
		v, err := r.r.execOne(context.WithoutCancel(ctx), c)
		r.mu.Lock()
		r.handOffLocked()
		r.mu.Unlock()
		return v, err
	}
	req := &request{call: c, done: make(chan struct{}), lead: make(chan struct{}, 1)}
	r.pending = append(r.pending, req)
	if r.inflight < r.max() {
		r.inflight++
		req.turn = true
		req.lead <- struct{}{}
	}
	r.mu.Unlock()
	cancelled := ctx.Done()
	for {
		select {
		case <-req.done:
			r.doneWaiting(req)
			return req.val, req.err
		case <-req.lead:
			r.commit(ctx, req)
		case <-cancelled:
			// Leave the queue if the call has not gone out yet; once it
			// has, its outcome is awaited (it may have changed state, a
			// job reserved, say).
			cancelled = nil
			r.mu.Lock()
			if i := slices.Index(r.pending, req); i >= 0 {
				r.pending = slices.Delete(r.pending, i, i+1)
				if req.turn {
					req.turn = false
					r.handOffLocked() // the turn it was given goes to the next
				}
				r.mu.Unlock()
				return nil, ctx.Err()
			}
			r.mu.Unlock()
		}
	}
}

// doneWaiting is for a call whose batch ended while it waited: a turn it
// was given meanwhile goes to the next.
func (r *lane) doneWaiting(req *request) {
	r.mu.Lock()
	if req.turn {
		req.turn = false
		r.handOffLocked()
	}
	r.mu.Unlock()
}

// request is a call waiting in the queue of run.
type request struct {
	call
	taken bool          // in a batch (guarded by runner.mu)
	turn  bool          // holds a turn to send a batch, not yet used (guarded by runner.mu)
	val   any           // the reply, set before done is closed
	err   error         // the failure, set before done is closed
	done  chan struct{} // closed when val and err are set
	lead  chan struct{} // told to send a batch
	// asDelete marks a delete that rides in a reserve of its tube
	// (mergeCalls): its reply is turned back into a delete's.
	asDelete bool
}

// Bounds of one batch, so that no pipeline or merged call runs long.
const (
	maxBatchCalls = 256
)

// maxInflight is how many batches the main lane may have in flight at
// once. Fewer merge more: every call that arrives while the batches are
// out goes in the next, so Redis runs fewer, larger function calls; more
// keep Redis busy while the client reads replies. Measured side by side
// on 2 cores at load average 15–20 (BenchmarkGroupCommit, 1 / 2 / 4 in
// flight): 8 goroutines' puts carried 4.5–4.8 / 2.8–2.9 / 1.75 puts a
// call at 15–25 / 20–31 / 26–38 µs of Redis CPU a put; GCRA decisions on
// one key from 16 goroutines 8.3 / 5.2 / 3.1 a call.
var maxInflight = 1

// limitsInflight is how many batches the rate limits' lane may have in
// flight at once: two, so that Redis runs one batch of decisions while the
// client reads the replies of the other and its callers make their next
// calls. With one, Redis and the client take turns and each waits for the
// other. Measured side by side (queuebench gcra, 16 goroutines, quiet
// machine): one / two in flight gave 36–46k / 64–65k decisions a second on
// one key and 31–38k / 48–56k on 10k keys, at the same Redis CPU a
// decision (7–11 µs on one key, 10–16 µs on 10k keys).
var limitsInflight = 2

// hashesInflight is how many batches the expiring hashes' lane may have in
// flight at once: more than one, so that a long sweep does not hold up
// the consumers' acknowledgements (TestTTLHashSharedSweep).
const hashesInflight = 4

// handOffLocked gives the turn its caller holds to the first waiting call
// that has none, or ends it.
func (r *lane) handOffLocked() {
	for _, q := range r.pending {
		if !q.turn {
			q.turn = true
			q.lead <- struct{}{}
			return
		}
	}
	r.inflight--
}

// commit is a turn of req's: it sends the waiting calls (the oldest
// first, up to a batch), then hands the turn on. When another turn's batch
// already took req, it only hands the turn on.
func (r *lane) commit(ctx context.Context, req *request) {
	r.mu.Lock()
	req.turn = false
	if req.taken {
		r.handOffLocked()
		r.mu.Unlock()
		return
	}
	n := min(len(r.pending), maxBatchCalls)
	batch := slices.Clone(r.pending[:n])
	r.pending = slices.Delete(r.pending, 0, n)
	for _, q := range batch {
		q.taken = true
	}
	r.mu.Unlock()

	// The batch is everyone's: one caller's cancellation must not fail the
	// others' calls (go-redis's timeouts bound it).
	r.r.send(context.WithoutCancel(ctx), batch)

	r.mu.Lock()
	r.handOffLocked()
	r.mu.Unlock()
	for _, q := range batch {
		close(q.done)
	}
}

// send runs a batch in one pipeline, merging what can be merged, and
// delivers each request's reply.
func (r *runner) send(ctx context.Context, batch []*request) {
	calls, parts := mergeCalls(batch)
	vals, errs := r.exec(ctx, calls)
	for i, p := range parts {
		for _, q := range p.reqs {
			if errs[i] != nil {
				q.err = errs[i]
				continue
			}
			if p.split == nil {
				q.val = vals[i]
			}
		}
		if errs[i] == nil && p.split != nil {
			p.split(vals[i], p.reqs)
		}
		for _, q := range p.reqs {
			if q.asDelete && q.err == nil {
				q.val = deleteReplyOf(q.val)
			}
		}
	}
}

// deleteAsReserve is a delete call (ARGV: now, tube, 1 request: owner, C,
// C ids) as a reserve of that tube that deletes them and reserves nothing
// (max -1; reserve.lua).
func deleteAsReserve(c call) call {
	ids := c.args[5:]
	args := make([]any, 0, 7+2*len(ids))
	args = append(args, c.args[0], 1, c.args[1], 1, c.args[3], -1, len(ids))
	for _, id := range ids {
		args = append(args, 1, id)
	}
	return call{op: scripts.reserve, keys: c.keys, args: args, scope: c.scope}
}

// deleteReplyOf turns a reserve's reply to one request ([{outcomes, jobs,
// ...}]) into a delete's ([outcomes]); a reply of another shape is left
// for the delete's own check to refuse.
func deleteReplyOf(v any) any {
	a, ok := v.([]any)
	if !ok || len(a) != 1 {
		return v
	}
	r, ok := a[0].([]any)
	if !ok || len(r) == 0 {
		return v
	}
	return []any{r[0]}
}

// part is what became of one or more requests in a batch: one call.
type part struct {
	reqs  []*request
	split func(v any, reqs []*request) // shares a merged reply out, nil when not merged
}

// mergeCalls turns a batch into calls: requests that an operation knows
// how to merge (the same operation, the same KEYS, and what its merger
// says) become one call, up to its limit; the rest stay as they are. The
// requests of one batch come from callers that wait at the same time, so
// their order among themselves is free; each caller has one request in
// a batch at most, so a caller's own order is kept.
//
// A delete of one tube rides in a reserve of that tube alone that goes in
// the same batch (a reserve deletes before it reserves): one function call
// for both, as a worker's "done, next" is.
func mergeCalls(batch []*request) ([]call, []part) {
	var parts []part
	open := map[string]int{} // merge group -> its part, while it has room
	sizes := []int{}
	var reserves map[string]bool // the reserve groups of the batch
	for _, q := range batch {
		if q.op == scripts.reserve {
			if reserves == nil {
				reserves = map[string]bool{}
			}
			reserves[q.op.merge.group(q.call)] = true
		}
	}
	for _, q := range batch {
		if q.op == scripts.delete && reserves != nil && !q.asDelete {
			if rc := deleteAsReserve(q.call); reserves[scripts.reserve.merge.group(rc)] {
				q.call, q.asDelete = rc, true
			}
		}
		m := q.op.merge
		if m == nil {
			parts = append(parts, part{reqs: []*request{q}})
			sizes = append(sizes, 0)
			continue
		}
		k := m.group(q.call)
		if i, ok := open[k]; ok && sizes[i]+m.size(q.call) <= m.limit() {
			parts[i].reqs = append(parts[i].reqs, q)
			sizes[i] += m.size(q.call)
			continue
		}
		open[k] = len(parts)
		parts = append(parts, part{reqs: []*request{q}})
		sizes = append(sizes, m.size(q.call))
	}
	calls := make([]call, len(parts))
	for i := range parts {
		p := &parts[i]
		if len(p.reqs) == 1 {
			calls[i] = p.reqs[0].call
			continue
		}
		cs := make([]call, len(p.reqs))
		for n, q := range p.reqs {
			cs[n] = q.call
		}
		m := p.reqs[0].op.merge
		calls[i] = m.join(cs)
		p.split = m.split
	}
	return calls, parts
}

// groupOf names what calls must share to merge: the operation, the KEYS and
// the head of the ARGV (the first head values).
func groupOf(c call, head int) string {
	var b strings.Builder
	b.WriteString(c.op.file)
	for _, k := range c.keys {
		b.WriteByte(0)
		b.WriteString(k)
	}
	b.WriteByte(1)
	for _, a := range c.args[:head] {
		b.WriteByte(0)
		writeArg(&b, a)
	}
	return b.String()
}

// writeArg writes a call's argument as go-redis sends it, without fmt for
// the types the store passes (fmt was 6% of a protocol server's CPU).
func writeArg(b *strings.Builder, a any) {
	var buf [24]byte
	switch v := a.(type) {
	case string:
		b.WriteString(v)
	case []byte:
		b.Write(v)
	case int:
		b.Write(strconv.AppendInt(buf[:0], int64(v), 10))
	case int64:
		b.Write(strconv.AppendInt(buf[:0], v, 10))
	case uint32:
		b.Write(strconv.AppendUint(buf[:0], uint64(v), 10))
	case uint64:
		b.Write(strconv.AppendUint(buf[:0], v, 10))
	default:
		fmt.Fprint(b, a)
	}
}

// A merger says which calls of one operation merge into one call, and how
// the reply is shared out.
type merger interface {
	group(c call) string          // calls of one group may merge
	size(c call) int              // the work of a call, counted against limit
	limit() int                   // the most work of a merged call
	join(cs []call) call          // the merged call
	split(v any, reqs []*request) // shares the merged reply out
}

// itemMerger merges calls whose ARGV are head values, equal in every call,
// then items of per values each, by appending their items; the reply holds
// replyPer values per item, in order. (Puts to one tube partition; GCRA
// decisions on one key.) The head is head values long, or headLen's
// answer when it is set.
type itemMerger struct {
	head, per, replyPer, max int
	headLen                  func(args []any) int
}

func (m *itemMerger) headOf(c call) int {
	if m.headLen != nil {
		return m.headLen(c.args)
	}
	return m.head
}

func (m *itemMerger) size(c call) int { return (len(c.args) - m.headOf(c)) / m.per }

func (m *itemMerger) limit() int { return m.max }

func (m *itemMerger) group(c call) string { return groupOf(c, m.headOf(c)) }

func (m *itemMerger) join(cs []call) call {
	args := slices.Clone(cs[0].args)
	for _, c := range cs[1:] {
		args = append(args, c.args[m.headOf(c):]...)
	}
	return call{op: cs[0].op, keys: cs[0].keys, args: args}
}

func (m *itemMerger) split(v any, reqs []*request) {
	shareOut(v, reqs, func(q *request) int { return m.size(q.call) * m.replyPer })
}

// concatMerger merges calls of one scope whose ARGV are a head (head values,
// equal in every call) and one request each, by appending the requests and
// their KEYS; the reply holds replyPer values per call, in order. (GCRA
// decisions.)
type concatMerger struct {
	head, replyPer, max int
}

func (m *concatMerger) size(c call) int { return 1 }

func (m *concatMerger) limit() int { return m.max }

func (m *concatMerger) group(c call) string {
	var b strings.Builder
	b.WriteString(c.op.file)
	b.WriteByte(0)
	b.WriteString(c.scope)
	for _, a := range c.args[:m.head] {
		b.WriteByte(0)
		writeArg(&b, a)
	}
	return b.String()
}

func (m *concatMerger) join(cs []call) call {
	var nk, na int
	for _, c := range cs {
		nk += len(c.keys)
		na += len(c.args) - m.head
	}
	keys := make([]string, 0, nk)
	args := make([]any, m.head, m.head+na)
	copy(args, cs[0].args[:m.head])
	for _, c := range cs {
		keys = append(keys, c.keys...)
		args = append(args, c.args[m.head:]...)
	}
	return call{op: cs[0].op, keys: keys, args: args, scope: cs[0].scope}
}

func (m *concatMerger) split(v any, reqs []*request) {
	shareOut(v, reqs, func(*request) int { return m.replyPer })
}

// listMerger merges calls whose ARGV are a head (equal in every call; its
// length given by headLen), a count of requests, and the requests, by
// summing the counts and appending the requests; the reply is a list with
// one entry per request, in order. (Reserves on one tag; deletes in one
// tube.)
type listMerger struct {
	headLen func(args []any) int
	max     int
}

func (m *listMerger) size(c call) int {
	n, _ := c.args[m.headLen(c.args)].(int)
	return n
}

func (m *listMerger) limit() int { return m.max }

func (m *listMerger) group(c call) string { return groupOf(c, m.headLen(c.args)) }

func (m *listMerger) join(cs []call) call {
	h := m.headLen(cs[0].args)
	args := slices.Clone(cs[0].args[:h])
	args = append(args, 0)
	total := 0
	for _, c := range cs {
		total += m.size(c)
		args = append(args, c.args[h+1:]...)
	}
	args[h] = total
	return call{op: cs[0].op, keys: cs[0].keys, args: args}
}

func (m *listMerger) split(v any, reqs []*request) {
	shareOut(v, reqs, func(q *request) int { return m.size(q.call) })
}

// shareOut gives each request its n(q) values of the merged reply v, in order.
func shareOut(v any, reqs []*request, n func(q *request) int) {
	a, ok := v.([]any)
	at := 0
	for _, q := range reqs {
		k := n(q)
		if !ok || at+k > len(a) {
			q.err = fmt.Errorf("redisstore: %s replied %T of unexpected length to a merged call", q.op.file, v)
			continue
		}
		q.val = a[at : at+k : at+k]
		at += k
	}
}

// runMany runs calls in one pipeline of their own, without waiting for
// other callers: for work that is already a batch (every tag, every shard).
// Its failures are those of the failing call's family (errTable).
func (r *runner) runMany(ctx context.Context, calls []call) ([]any, error) {
	if r.closed.Load() {
		if len(calls) == 0 {
			return nil, errStoreClosed
		}
		return nil, calls[0].op.family.errs.closed
	}
	vals, errs := r.exec(ctx, calls)
	for i, err := range errs {
		if err != nil {
			return nil, calls[i].op.family.errs.mapErr(err)
		}
	}
	return vals, nil
}

// exec runs calls in one pipeline (one command when there is one call),
// loading the library and running again the calls that a node could not
// find it for.
func (r *runner) exec(ctx context.Context, calls []call) ([]any, []error) {
	if r.replicas > 0 && slices.ContainsFunc(calls, func(c call) bool { return c.op.waits }) {
		return r.execSplit(ctx, calls)
	}
	vals := make([]any, len(calls))
	errs := make([]error, len(calls))
	todo := make([]int, len(calls))
	for i := range todo {
		todo[i] = i
	}
	for attempt := 0; ; attempt++ {
		cmds := make([]*redis.Cmd, len(todo))
		if len(todo) == 1 {
			c := calls[todo[0]]
			cmds[0] = r.c.FCall(ctx, c.op.fn, c.keys, c.args...)
		} else {
			pipe := r.c.Pipeline()
			for n, i := range todo {
				c := calls[i]
				cmds[n] = pipe.FCall(ctx, c.op.fn, c.keys, c.args...)
			}
			_, _ = pipe.Exec(ctx)
		}
		var missing []int
		for n, i := range todo {
			v, err := cmds[n].Result()
			if err != nil && isNoFunction(err) && attempt == 0 {
				missing = append(missing, i)
				continue
			}
			vals[i], errs[i] = v, r.failure(ctx, err)
		}
		if len(missing) == 0 {
			return vals, errs
		}
		if err := r.load(ctx); err != nil {
			for _, i := range missing {
				errs[i] = r.failure(ctx, err)
			}
			return vals, errs
		}
		todo = missing
	}
}

// execOne is exec for one call, without the slices of a batch.
func (r *runner) execOne(ctx context.Context, c call) (any, error) {
	if r.replicas > 0 && c.op.waits {
		vals, errs := r.execWait(ctx, []call{c})
		return vals[0], errs[0]
	}
	for attempt := 0; ; attempt++ {
		v, err := r.c.FCall(ctx, c.op.fn, c.keys, c.args...).Result()
		if err != nil && isNoFunction(err) && attempt == 0 {
			if err := r.load(ctx); err != nil {
				return nil, r.failure(ctx, err)
			}
			continue
		}
		return v, r.failure(ctx, err)
	}
}

func isNoFunction(err error) bool {
	return strings.Contains(err.Error(), "Function not found")
}

// failure classifies a failure: Redis's refusal for lack of memory is
// errOOM; a missing key (redis.Nil) is no failure for the callers that
// expect it, and is left as it is.
//
// On a cluster, a failure that is not a reply from Redis (a node down, a
// timeout) makes the client reload the slot layout now: go-redis otherwise
// learns of a failover only on a redirect or once a minute, and with retries
// off no redirect comes while the old master is down.
func (r *runner) failure(ctx context.Context, err error) error {
	if err == nil || errors.Is(err, redis.Nil) {
		return err
	}
	var re redis.Error
	isReply := errors.As(err, &re)
	if cc, ok := r.c.(*redis.ClusterClient); ok && !isReply {
		cc.ReloadState(ctx)
	}
	if isReply && strings.HasPrefix(re.Error(), "OOM ") {
		return fmt.Errorf("%w: %v", errOOM, err)
	}
	return fmt.Errorf("redisstore: %w", err)
}

// execWait runs calls that must reach the replicas: on the connection of
// each call's master, the calls and then WAIT, in one pipeline. A call
// whose master's WAIT counts fewer than r.replicas fails with
// errNotReplicated. Like exec, it loads the library once when a function
// is missing.
func (r *runner) execWait(ctx context.Context, calls []call) ([]any, []error) {
	vals := make([]any, len(calls))
	errs := make([]error, len(calls))
	type group struct {
		node redis.Cmdable
		idx  []int
	}
	var groups []*group
	if cc, ok := r.c.(*redis.ClusterClient); ok {
		by := map[string]*group{}
		for i, c := range calls {
			m, err := cc.MasterForKey(ctx, c.keys[0])
			if err != nil {
				errs[i] = r.failure(ctx, err)
				continue
			}
			addr := m.Options().Addr
			if by[addr] == nil {
				by[addr] = &group{node: m}
				groups = append(groups, by[addr])
			}
			by[addr].idx = append(by[addr].idx, i)
		}
	} else {
		g := &group{node: r.c}
		for i := range calls {
			g.idx = append(g.idx, i)
		}
		groups = append(groups, g)
	}
	for _, g := range groups {
		for attempt := 0; ; attempt++ {
			cmds := make([]*redis.Cmd, len(g.idx))
			var wait *redis.Cmd
			_, _ = g.node.Pipelined(ctx, func(p redis.Pipeliner) error {
				for n, i := range g.idx {
					c := calls[i]
					cmds[n] = p.FCall(ctx, c.op.fn, c.keys, c.args...)
				}
				wait = p.Do(ctx, "WAIT", r.replicas, r.replicaTimeout.Milliseconds())
				return nil
			})
			if attempt == 0 && slices.ContainsFunc(cmds, func(c *redis.Cmd) bool { return c.Err() != nil && isNoFunction(c.Err()) }) {
				if err := r.load(ctx); err != nil {
					for _, i := range g.idx {
						errs[i] = r.failure(ctx, err)
					}
					break
				}
				// The library is missing on this master: none of the
				// calls ran. Again, once.
				continue
			}
			acked, werr := wait.Int()
			for n, i := range g.idx {
				v, err := cmds[n].Result()
				switch {
				case err != nil:
					errs[i] = r.failure(ctx, err)
				case werr != nil:
					errs[i] = r.failure(ctx, werr)
				case acked < r.replicas:
					errs[i] = fmt.Errorf("%w: %d of %d replicas within %v", errNotReplicated, acked, r.replicas, r.replicaTimeout)
				default:
					vals[i] = v
				}
			}
			break
		}
	}
	return vals, errs
}

// execSplit runs the calls that wait for replicas through execWait and the
// others through exec, and puts their outcomes back in order.
func (r *runner) execSplit(ctx context.Context, calls []call) ([]any, []error) {
	var wi, oi []int
	var wc, oc []call
	for i, c := range calls {
		if c.op.waits {
			wi, wc = append(wi, i), append(wc, c)
		} else {
			oi, oc = append(oi, i), append(oc, c)
		}
	}
	vals := make([]any, len(calls))
	errs := make([]error, len(calls))
	wv, we := r.execWait(ctx, wc)
	for n, i := range wi {
		vals[i], errs[i] = wv[n], we[n]
	}
	if len(oc) > 0 {
		ov, oe := r.exec(ctx, oc)
		for n, i := range oi {
			vals[i], errs[i] = ov[n], oe[n]
		}
	}
	return vals, errs
}
