package redisstore

import (
	"context"

	"github.com/hourglass-io/hourglass/ratelimit"
)

// Library returns the functions library's name and source, and the name of
// the function of every operation, by file, for tests.
func Library() (name, source string, functions map[string]string) {
	assemble()
	functions = map[string]string{}
	for file, o := range ops {
		functions[file] = o.fn
	}
	return library.name, library.source, functions
}

// Subscriptions reports the channels s is subscribed to and the
// connections they use.
func Subscriptions(s *Store) (channels, conns int) { return s.notify.channels() }

// Channel is the wake-up channel of a tube of one partition.
func Channel(s *Store, tube string) string { return s.k.channel(tubeTag(tube, 0, 1), tube) }

// SetMaxInflight sets how many batches the main lane and the rate limits'
// lane may have in flight at once, until the function it returns restores
// them.
func SetMaxInflight(n int) (restore func()) {
	old, oldLimits := maxInflight, limitsInflight
	maxInflight, limitsInflight = n, n
	return func() { maxInflight, limitsInflight = old, oldLimits }
}

// TubeTag is the tag of a tube of one partition.
func TubeTag(tube string) int { return tubeTag(tube, 0, 1) }

// KeySlot is the Redis Cluster slot of a key, as the GCRA merger computes it.
func KeySlot(key string) int { return keySlot(key) }

// HoldHashesLane takes every turn of the expiring hashes' lane, as that
// many long sweeps in flight would, until the function it returns hands
// them on.
func HoldHashesLane(s *Store) (release func()) { return holdLane(&s.r.hashes) }

// HoldMainLane takes every turn of the main lane (the queue's and the
// other primitives'), as that many long calls in flight would, until the
// function it returns hands them on.
func HoldMainLane(s *Store) (release func()) { return holdLane(&s.r.main) }

func holdLane(l *lane) (release func()) {
	l.mu.Lock()
	n := l.max() - l.inflight
	l.inflight += n
	l.mu.Unlock()
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		for range n {
			l.handOffLocked()
		}
	}
}

// HashShard is the shard of a hash name and the key prefix of that shard,
// for tests that write the stored layout by hand.
func HashShard(h *Hashes, name string) (shard int, base string) {
	shard = h.shardOf(name)
	return shard, h.base(shard)
}

// LedgerTags are the tags Reservations would read for owner.
func LedgerTags(s *Store, owner string) []int {
	tags, _ := s.held.tags(owner)
	return tags
}

// GCRAOneCall makes the decisions reqs on keys in one function call, merged
// as the runner merges concurrent callers' decisions, in order.
func GCRAOneCall(ctx context.Context, l *RateLimits, keys []string, reqs []ratelimit.GCRARequest) ([]ratelimit.Decision, error) {
	m := rlScripts.gcra.merge
	cs := make([]call, len(keys))
	batch := make([]*request, len(keys))
	for i, k := range keys {
		cs[i] = l.gcraCall(k, reqs[i])
		batch[i] = &request{call: cs[i]}
	}
	v, err := l.s.r.execOne(ctx, m.join(cs))
	if err != nil {
		return nil, err
	}
	m.split(v, batch)
	out := make([]ratelimit.Decision, len(keys))
	for i, q := range batch {
		if q.err != nil {
			return nil, q.err
		}
		if out[i], err = decision(q.val); err != nil {
			return nil, err
		}
	}
	return out, nil
}
