package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/hourglass-io/hourglass/queue"
	"github.com/redis/go-redis/v9"
)

// Kept jobs (queue.KeepStore): see "Kept jobs" in scripts/lib.lua and
// docs/redis-data-model.md. A tube's retention is kept in its tag's m
// (k:<tube>) and copied to its hash (kr); a delete or a finish in a tube
// with a retention keeps the job (delete_one), and the store's keeper
// drops it at its time.

var keepScripts = struct {
	finish, retain, lookup, lookupKey, dropKept *op
}{
	finish: operation("finish"), retain: operation("retain"), lookup: operation("lookup"),
	lookupKey: operation("lookupkey"), dropKept: operation("dropkept"),
}

func init() {
	keepScripts.finish.waits = true
	keepScripts.retain.waits = true
	keepScripts.dropKept.waits = true
}

// keepTags is the set of the tags whose tubes keep jobs, or did: every
// process's keeper reads it, so that a process drops what another one
// kept.
func (k keys) keepTags() string { return k.prefix + "ktags" }

// keepIndex is a tag's sorted set of its tubes with kept jobs, each
// scored no later than its first drop (ms).
func (k keys) keepIndex(tag int) string { return k.base(tag) + "kt" }

// SetRetention implements queue.KeepStore: on every partition of tube.
func (s *Store) SetRetention(ctx context.Context, tube string, d time.Duration) error {
	k := s.partitions(tube)
	for p := 0; p < k; p++ {
		tag := tubeTag(tube, p, k)
		if d > 0 {
			if err := s.keep.note(ctx, tag); err != nil {
				return err
			}
		}
		if _, err := s.status(ctx, keepScripts.retain, tag, tube, tube, d.Milliseconds()); err != nil {
			return err
		}
	}
	return nil
}

// Retention implements queue.KeepStore: partition 0's, which SetRetention
// sets with the others.
func (s *Store) Retention(ctx context.Context, tube string) (time.Duration, error) {
	tag := tubeTag(tube, 0, s.partitions(tube))
	v, err := s.c.HGet(ctx, s.k.tagKeys(tag)[0], "k:"+tube).Result()
	if err != nil {
		if errors.Is(err, redis.Nil) {
			return 0, nil
		}
		return 0, s.storeErr(ctx, err)
	}
	ms, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("redisstore: retention of tube %q is %q", tube, v)
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// Finish implements queue.KeepStore.
func (s *Store) Finish(ctx context.Context, owner string, id queue.ID, result []byte) error {
	return s.withTube(ctx, id, func(tube string) (bool, error) {
		code, err := s.status(ctx, keepScripts.finish, tagOf(id), tube, tube, owner, idhex(id), result)
		if err != nil {
			return false, err
		}
		switch code {
		case 2:
			if err := s.keep.note(ctx, tagOf(id)); err != nil {
				return false, err
			}
			fallthrough
		case 1:
			s.held.ended(owner, id)
			return false, nil
		case -1:
			return false, fmt.Errorf("%w: %d", queue.ErrReserved, id)
		}
		return code == 0 || code == -2, fmt.Errorf("%w: %d", queue.ErrNotFound, id)
	})
}

// Lookup implements queue.KeepStore: a live job is StatsJob's, a kept one
// lookup.lua's.
func (s *Store) Lookup(ctx context.Context, id queue.ID) (queue.JobStats, error) {
	js, err := s.StatsJob(ctx, id)
	if err == nil || !errors.Is(err, queue.ErrNotFound) {
		return js, err
	}
	v, err := s.r.run(ctx, call{op: keepScripts.lookup, keys: s.k.tagKeys(tagOf(id))[:2], args: []any{s.now(), idhex(id)}})
	if err != nil {
		return queue.JobStats{}, queueErrs.mapErr(err)
	}
	r := replyOf(keepScripts.lookup)
	a := r.arr(v, 1)
	if r.int(a[0]) != 1 {
		if err := r.done(); err != nil {
			return queue.JobStats{}, err
		}
		return queue.JobStats{}, fmt.Errorf("%w: %d", queue.ErrNotFound, id)
	}
	a = r.arr(a, 9)
	out := parseStats(r, parseJob(r, a[2]), a[3], a[8])
	result := r.str(a[4])
	ended, drop, how := r.int(a[5]), r.int(a[6]), r.int(a[7])
	if err := r.done(); err != nil {
		return queue.JobStats{}, err
	}
	out.State = queue.Finished
	if result != "" {
		out.Result = []byte(result)
	}
	out.FinishedAt, out.KeptUntil = timeMS(ended), timeMS(drop)
	out.Cancelled = how == 2
	return out, nil
}

// LookupKey implements queue.KeepStore: the key's partition's lookupkey.lua
// names the job, and Lookup describes it.
func (s *Store) LookupKey(ctx context.Context, tube, key string) (queue.JobStats, error) {
	k := s.partitions(tube)
	p := 0
	if k > 1 {
		p = int(fnv32(key) % uint32(k))
	}
	v, err := s.run(ctx, keepScripts.lookupKey, tubeTag(tube, p, k), tube, tube, key)
	if err != nil {
		return queue.JobStats{}, err
	}
	r := replyOf(keepScripts.lookupKey)
	idh := r.str(v)
	if err := r.done(); err != nil {
		return queue.JobStats{}, err
	}
	if idh == "" {
		return queue.JobStats{}, fmt.Errorf("%w: no job of tube %q holds key %q", queue.ErrNotFound, tube, key)
	}
	id, err := strconv.ParseUint(idh, 16, 64)
	if err != nil {
		return queue.JobStats{}, fmt.Errorf("redisstore: key %q of tube %q names job %q", key, tube, idh)
	}
	return s.Lookup(ctx, queue.ID(id))
}

// keeper drops the kept jobs of every tag in the key set keepTags at
// their time: one goroutine per Store, started when the store first sees
// a tag that keeps jobs (New reads the set; a retention set or a job kept
// through this store adds to it), stopped by Close. Each round runs
// dropkept on every such tag in one pipeline and sleeps until the
// earliest next drop they report, but at most keepPoll, so that jobs other
// processes keep are dropped on time too.
type keeper struct {
	s *Store

	mu      sync.Mutex
	tags    map[int]bool // the tags this process knows to keep jobs
	pending []int        // of those, the ones the keeper is to add to keepTags
	started bool
	cancel  context.CancelFunc
	wake    chan struct{}
	done    chan struct{}
}

// keepPoll bounds a keeper's sleep: a job is dropped at most this long
// after its time.
const keepPoll = 500 * time.Millisecond

func (k *keeper) init(s *Store) {
	k.s = s
	k.tags = map[int]bool{}
	k.wake = make(chan struct{}, 1)
}

// start reads the tags that keep jobs, and starts the keeper when there
// are any.
func (k *keeper) start(ctx context.Context) error {
	ms, err := k.s.c.SMembers(ctx, k.s.k.keepTags()).Result()
	if err != nil {
		return fmt.Errorf("redisstore: reading the tags that keep jobs: %w", err)
	}
	for _, m := range ms {
		if tag, err := strconv.Atoi(m); err == nil && tag >= 0 && tag < NumTags {
			if err := k.note(ctx, tag); err != nil {
				return err
			}
		}
	}
	return nil
}

// note records that tag keeps jobs, in keepTags the first time this
// process sees it, and starts or wakes the keeper.
func (k *keeper) note(ctx context.Context, tag int) error {
	k.mu.Lock()
	known := k.tags[tag]
	k.mu.Unlock()
	if !known {
		if err := k.s.c.SAdd(ctx, k.s.k.keepTags(), tag).Err(); err != nil {
			return k.s.storeErr(ctx, err)
		}
	}
	k.noteAsync(ctx, tag)
	return nil
}

// noteAsync is note for a job kept by a delete or a reserve: the keeper
// adds tag to keepTags in its next round, so the call that kept the job
// waits for nothing.
func (k *keeper) noteAsync(ctx context.Context, tag int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	known := k.tags[tag]
	if known && k.started || k.s.closed.Load() {
		return
	}
	k.tags[tag] = true
	if !known {
		k.pending = append(k.pending, tag)
	}
	if !k.started {
		k.started = true
		lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		k.cancel = cancel
		k.done = make(chan struct{})
		go k.loop(lctx)
	}
	if !known {
		select {
		case k.wake <- struct{}{}:
		default:
		}
	}
}

func (k *keeper) loop(ctx context.Context) {
	defer close(k.done)
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-k.wake:
			t.Stop()
		}
		wait := k.round(ctx)
		t.Reset(wait)
	}
}

// round drops what is due on every known tag (and on the tags other
// processes added) and returns how long to sleep.
func (k *keeper) round(ctx context.Context) time.Duration {
	k.mu.Lock()
	pending := k.pending
	k.pending = nil
	k.mu.Unlock()
	if len(pending) > 0 {
		add := make([]any, len(pending))
		for i, tag := range pending {
			add[i] = tag
		}
		if err := k.s.c.SAdd(ctx, k.s.k.keepTags(), add...).Err(); err != nil {
			k.mu.Lock()
			k.pending = append(k.pending, pending...)
			k.mu.Unlock()
		}
	}
	if ms, err := k.s.c.SMembers(ctx, k.s.k.keepTags()).Result(); err == nil {
		k.mu.Lock()
		for _, m := range ms {
			if tag, err := strconv.Atoi(m); err == nil && tag >= 0 && tag < NumTags {
				k.tags[tag] = true
			}
		}
		k.mu.Unlock()
	}
	k.mu.Lock()
	tags := make([]int, 0, len(k.tags))
	for tag := range k.tags {
		tags = append(tags, tag)
	}
	k.mu.Unlock()
	_, wait, err := k.drop(ctx)
	if err != nil {
		return keepPoll
	}
	return wait
}

// drop runs dropkept on every tag the keeper knows, in one pipeline, and
// returns how many jobs it dropped and how long until the next drop (at
// most keepPoll; 0 when a tag had more due than one call drops).
func (k *keeper) drop(ctx context.Context) (int, time.Duration, error) {
	k.mu.Lock()
	tags := make([]int, 0, len(k.tags))
	for tag := range k.tags {
		tags = append(tags, tag)
	}
	k.mu.Unlock()
	if len(tags) == 0 {
		return 0, keepPoll, nil
	}
	calls := make([]call, len(tags))
	now := k.s.now()
	for i, tag := range tags {
		calls[i] = call{op: keepScripts.dropKept, keys: append(k.s.k.tagKeys(tag), k.s.k.keepIndex(tag)), args: []any{now}}
	}
	vs, err := k.s.runMany(ctx, calls)
	if err != nil {
		return 0, keepPoll, err
	}
	wait, n := keepPoll, 0
	for _, v := range vs {
		r := replyOf(keepScripts.dropKept)
		a := r.arr(v, 3)
		dropped, next, at := r.int(a[0]), r.int(a[1]), r.int(a[2])
		if err := r.done(); err != nil {
			return n, keepPoll, err
		}
		n += int(dropped)
		switch {
		case dropped >= dropLimit:
			wait = 0 // more are due
		case next >= 0:
			wait = min(wait, max(time.Duration(next-at)*time.Millisecond, 0))
		}
	}
	return n, wait, nil
}

// DropKept drops now, on every tag that keeps jobs, the kept jobs whose
// time has come, as the store's keeper does by itself within keepPoll
// (500 ms) of their time, and returns how many it dropped. The keeper
// makes calling it unnecessary; tests call it to see the drops at once.
func (s *Store) DropKept(ctx context.Context) (int, error) {
	if err := s.keep.start(ctx); err != nil {
		return 0, err
	}
	n := 0
	for {
		d, _, err := s.keep.drop(ctx)
		if err != nil {
			return n, err
		}
		n += d
		if d == 0 {
			return n, nil
		}
	}
}

// dropLimit is dropkept.lua's DROP_LIMIT: a round that dropped as many
// runs again at once.
const dropLimit = 1000

func (k *keeper) close() {
	k.mu.Lock()
	started, cancel, done := k.started, k.cancel, k.done
	k.mu.Unlock()
	if started {
		cancel()
		<-done
	}
}
