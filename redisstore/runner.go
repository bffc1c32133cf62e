package redisstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

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
type runner struct {
	c      redis.UniversalClient
	closed *atomic.Bool

	loadMu sync.Mutex

	mu      sync.Mutex
	busy    bool       // a batch is in flight
	pending []*request // calls waiting for the next batch
}

// call is one function call: its operation, KEYS and ARGV (the time first).
type call struct {
	op   *op
	keys []string
	args []any
}

// errTable maps the runner's failures to the sentinels of one primitive,
// so that no primitive returns another's errors.
type errTable struct {
	closed error // the store is closed
	full   error // Redis refused a write for lack of memory (nil: a plain error)
}

var errStoreClosed = errors.New("redisstore: store closed")

// errOOM marks Redis's refusal of a write for lack of memory.
var errOOM = errors.New("redisstore: Redis is out of memory")

// mapErr gives err, a failure of the runner, the primitive's sentinel.
func (t errTable) mapErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, errStoreClosed):
		return t.closed
	case errors.Is(err, errOOM) && t.full != nil:
		return fmt.Errorf("%w: %w", t.full, err)
	}
	return err
}

func newRunner(c redis.UniversalClient, closed *atomic.Bool) *runner {
	return &runner{c: c, closed: closed}
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

// run runs one call, committed with whatever other calls are waiting.
func (r *runner) run(ctx context.Context, c call) (any, error) {
	if r.closed.Load() {
		return nil, errStoreClosed
	}
	req := &request{call: c, done: make(chan struct{}), lead: make(chan struct{}, 1)}
	r.mu.Lock()
	r.pending = append(r.pending, req)
	if !r.busy {
		r.busy = true
		r.mu.Unlock()
		r.commit(ctx)
		return req.val, req.err
	}
	r.mu.Unlock()
	select {
	case <-req.done:
		return req.val, req.err
	case <-req.lead:
		r.commit(ctx)
		return req.val, req.err
	case <-ctx.Done():
	}
	// Leave the queue if the call has not gone out yet; once it has, its
	// outcome is awaited (it may have changed state, a job reserved, say).
	r.mu.Lock()
	if i := slices.Index(r.pending, req); i >= 0 && !req.taken {
		r.pending = slices.Delete(r.pending, i, i+1)
		select {
		case <-req.lead: // it had just been given the turn: pass it on
			if len(r.pending) > 0 {
				r.pending[0].lead <- struct{}{}
			} else {
				r.busy = false
			}
		default:
		}
		r.mu.Unlock()
		return nil, ctx.Err()
	}
	r.mu.Unlock()
	select {
	case <-req.done:
	case <-req.lead:
		r.commit(ctx)
	}
	return req.val, req.err
}

// request is a call waiting in the queue of run.
type request struct {
	call
	taken bool          // in a batch (guarded by runner.mu)
	val   any           // the reply, set before done is closed
	err   error         // the failure, set before done is closed
	done  chan struct{} // closed when val and err are set
	lead  chan struct{} // told to send the next batch
}

// Bounds of one batch, so that no pipeline or merged call runs long.
const (
	maxBatchCalls = 256
)

// commit sends the waiting calls, then hands the turn to the first call
// that arrived meanwhile, or ends the run of batches.
func (r *runner) commit(ctx context.Context) {
	r.mu.Lock()
	n := min(len(r.pending), maxBatchCalls)
	batch := slices.Clone(r.pending[:n])
	r.pending = slices.Delete(r.pending, 0, n)
	for _, q := range batch {
		q.taken = true
	}
	r.mu.Unlock()

	// The batch is everyone's: one caller's cancellation must not fail the
	// others' calls (go-redis's timeouts bound it).
	r.send(context.WithoutCancel(ctx), batch)

	r.mu.Lock()
	if len(r.pending) == 0 {
		r.busy = false
	} else {
		r.pending[0].lead <- struct{}{}
	}
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
	}
}

// part is what became of one or more requests in a batch: one call.
type part struct {
	reqs  []*request
	split func(v any, reqs []*request) // shares a merged reply out, nil when not merged
}

// mergeCalls turns a batch into calls: consecutive requests that an
// operation knows how to merge (puts to one tube partition) become one
// call; the rest stay as they are.
func mergeCalls(batch []*request) ([]call, []part) {
	var calls []call
	var parts []part
	for i := 0; i < len(batch); {
		q := batch[i]
		m := q.op.merge
		j := i + 1
		if m != nil {
			items := m.items(q.args)
			for j < len(batch) && batch[j].op == q.op && m.same(q.call, batch[j].call) && items+m.items(batch[j].args) <= m.max {
				items += m.items(batch[j].args)
				j++
			}
		}
		if j == i+1 {
			calls = append(calls, q.call)
			parts = append(parts, part{reqs: []*request{q}})
			i++
			continue
		}
		group := batch[i:j]
		args := slices.Clone(q.args)
		for _, o := range group[1:] {
			args = append(args, o.args[m.head:]...)
		}
		calls = append(calls, call{op: q.op, keys: q.keys, args: args})
		parts = append(parts, part{reqs: slices.Clone(group), split: m.split})
		i = j
	}
	return calls, parts
}

// merger says how calls of one operation merge into one: calls whose KEYS
// and first head ARGV are equal merge by appending the rest of their
// ARGV, items of per ARGV each; the reply holds replyPer values per item,
// in order.
type merger struct {
	head, per, replyPer, max int
}

func (m *merger) items(args []any) int { return (len(args) - m.head) / m.per }

func (m *merger) same(a, b call) bool {
	if !slices.Equal(a.keys, b.keys) {
		return false
	}
	for i := range m.head {
		if a.args[i] != b.args[i] {
			return false
		}
	}
	return true
}

func (m *merger) split(v any, reqs []*request) {
	a, ok := v.([]any)
	at := 0
	for _, q := range reqs {
		n := m.items(q.args) * m.replyPer
		if !ok || at+n > len(a) {
			q.err = fmt.Errorf("redisstore: %s replied with %T of unexpected length", q.op.file, v)
			continue
		}
		q.val = a[at : at+n : at+n]
		at += n
	}
}

// runMany runs calls in one pipeline of their own, without waiting for
// other callers: for work that is already a batch (every tag, every shard).
func (r *runner) runMany(ctx context.Context, calls []call) ([]any, error) {
	if r.closed.Load() {
		return nil, errStoreClosed
	}
	vals, errs := r.exec(ctx, calls)
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return vals, nil
}

// exec runs calls in one pipeline (one command when there is one call),
// loading the library and running again the calls that a node could not
// find it for.
func (r *runner) exec(ctx context.Context, calls []call) ([]any, []error) {
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
