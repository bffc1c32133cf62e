package ttlhash

import (
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/hourglass-io/hourglass/internal/wait"
)

// groupConsumers is what the consumers of one group in one Hashes share:
// one subscription to the store's wake-ups of events, the shards woken
// since a consumer last took them, and the consumers waiting. A wake-up
// goes to the oldest waiting consumer that is not awake yet, not to all of
// them, so a shard's events cost one read however many consumers wait; a
// consumer that read a full batch passes a wake-up on.
type groupConsumers struct {
	notified bool // the store wakes consumers (else they poll)
	stop     func()
	refs     int // Consume calls using it; under Hashes.gmu

	mu     sync.Mutex
	all    bool  // any shard may have events
	shards []int // the shards woken since the last take
	idle   []*consumerWait
}

// consumerWait is one waiting Consume.
type consumerWait struct {
	w     *wait.Waiter
	woken bool // a wake-up is pending in w
}

// joinGroup returns the group's shared state, subscribing to the store's
// wake-ups for the first consumer; leaveGroup undoes it.
func (h *Hashes) joinGroup(ctx context.Context, group string) (*groupConsumers, error) {
	h.gmu.Lock()
	defer h.gmu.Unlock()
	if g := h.groups[group]; g != nil {
		g.refs++
		return g, nil
	}
	g := &groupConsumers{refs: 1}
	if n, ok := h.s.(Notifier); ok {
		// Not ctx: the subscription outlives the Consume that made it
		// while other consumers of the group run.
		stop, err := n.Listen(context.WithoutCancel(ctx), TopicEvents, g.wake)
		switch {
		case err == nil:
			g.notified, g.stop = true, stop
		case !errors.Is(err, ErrNoTopic):
			return nil, err
		}
	}
	if h.groups == nil {
		h.groups = map[string]*groupConsumers{}
	}
	h.groups[group] = g
	return g, nil
}

func (h *Hashes) leaveGroup(group string, g *groupConsumers) {
	h.gmu.Lock()
	defer h.gmu.Unlock()
	if g.refs--; g.refs > 0 {
		return
	}
	delete(h.groups, group)
	if g.stop != nil {
		g.stop()
	}
}

// wake is the store's wake-up: it notes the shard (any, when the topic
// names none) and wakes one waiting consumer.
func (g *groupConsumers) wake(topic string) {
	shard, ok := ParseEventShardTopic(topic)
	if !ok {
		shard = -1
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.noteLocked(shard)
	g.wakeOneLocked()
}

func (g *groupConsumers) noteLocked(shard int) {
	switch {
	case shard < 0:
		g.all, g.shards = true, g.shards[:0]
	case !g.all && !slices.Contains(g.shards, shard):
		g.shards = append(g.shards, shard)
	}
}

func (g *groupConsumers) wakeOneLocked() {
	for _, c := range g.idle {
		if !c.woken {
			c.woken = true
			c.w.Wake()
			return
		}
	}
}

// passOn notes that any shard may have more events and wakes one more
// waiting consumer to help.
func (g *groupConsumers) passOn() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.noteLocked(-1)
	g.wakeOneLocked()
}

// take returns the shards woken since the last take, all when any may
// have events, and empties the set.
func (g *groupConsumers) take() (shards []int, all bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	shards, all = slices.Clone(g.shards), g.all
	g.all, g.shards = false, g.shards[:0]
	return shards, all
}

// idleWait registers c as waiting unless shards were woken meanwhile, in
// which case it reports false and c should read at once.
func (g *groupConsumers) idleWait(c *consumerWait) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.all || len(g.shards) > 0 {
		return false
	}
	g.idle = append(g.idle, c)
	return true
}

// awake takes c off the waiting list.
func (g *groupConsumers) awake(c *consumerWait) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if i := slices.Index(g.idle, c); i >= 0 {
		g.idle = slices.Delete(g.idle, i, i+1)
	}
	c.woken = false
}
