package ttlhash

import (
	"context"
	"errors"

	"github.com/hourglass-io/hourglass/internal/wait"
)

// groupConsumers is what the consumers of one group in one Hashes share:
// one subscription to the store's wake-ups of events, the shards woken
// since a consumer last took them, and the consumers waiting, in a
// wait.Line. A consumer stands in the line only while it waits, so a
// wake-up goes to the oldest waiting consumer that is not awake yet, not
// to all of them and not to one that is reading: a shard's events cost
// one read however many consumers wait; a consumer that read a full batch
// passes a wake-up on.
type groupConsumers struct {
	line     *wait.Line // on TopicEvents; its subscription held while the group has consumers
	notified bool       // the store wakes consumers (else they poll)
	release  func()     // gives back the hold on the subscription
	refs     int        // Consume and ReadWait calls using it; under Hashes.gmu
	woken    shardSet   // the shards woken since the last take
}

// eventsTopic is the one topic of a group's line.
var eventsTopic = []string{TopicEvents}

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
		g.line = wait.NewLine(g.listen(n), &wait.LineOptions{Clock: h.opts.Clock})
		// Not ctx: the subscription outlives the Consume that made it
		// while other consumers of the group run.
		release, err := g.line.Hold(context.WithoutCancel(ctx), eventsTopic)
		switch {
		case err == nil:
			g.notified, g.release = true, release
		case !errors.Is(err, ErrNoTopic):
			return nil, err
		}
	}
	if !g.notified {
		g.line = wait.NewLine(nil, &wait.LineOptions{Clock: h.opts.Clock}) // woken by passOn alone; they poll
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
	if g.release != nil {
		g.release()
	}
}

// listen is the line's subscription to n: each wake-up of the store notes
// its shard (any, when the topic names none) before it wakes a consumer.
func (g *groupConsumers) listen(n Notifier) wait.ListenFunc {
	return func(ctx context.Context, topic string, wake func(string)) (func(), error) {
		return n.Listen(ctx, topic, func(t string) {
			shard, ok := ParseEventShardTopic(t)
			if !ok {
				shard = -1
			}
			g.woken.add(shard)
			wake(topic)
		})
	}
}

// passOn notes that any shard may have more events and wakes one more
// waiting consumer to help.
func (g *groupConsumers) passOn() {
	g.woken.add(-1)
	g.line.Wake(TopicEvents)
}

// take returns the shards woken since the last take, all when any may
// have events, and empties the set.
func (g *groupConsumers) take() (shards []int, all bool) { return g.woken.takeNoted() }

// enter stands a consumer in the line to wait, unless shards were woken
// meanwhile: then it returns nil, and the consumer should read at once.
// The consumer leaves with leave after its wait.
func (g *groupConsumers) enter(ctx context.Context) (*wait.Place, error) {
	p, err := g.line.Enter(ctx, eventsTopic, false)
	if err != nil {
		return nil, err
	}
	// A wake-up that noted its shard before the consumer stood in the
	// line woke another consumer or none: look at the set after entering.
	if !g.woken.empty() {
		p.Take() // the consumer reads at once: a wake-up given to it is used
		g.line.Leave(p, false)
		return nil, nil
	}
	return p, nil
}

// leave takes a waiting consumer out of the line; a wake-up it did not use
// goes to the next.
func (g *groupConsumers) leave(p *wait.Place) { g.line.Leave(p, false) }
