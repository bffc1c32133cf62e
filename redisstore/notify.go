package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// notifier shares sharded pub/sub subscriptions among the listeners of a
// process: one subscription connection per tag listened to (a shard channel
// lives in its tag's slot, and a cluster connection serves the slots of one
// node), and any number of listeners per channel. Channels are counted: a
// channel whose last listener leaves is unsubscribed, and a tag whose last
// channel goes has its connection closed, so what a process holds follows
// what it listens to now, not everything it ever listened to.
type notifier struct {
	s *Store

	mu     sync.Mutex
	subs   map[int]*tagSub // by tag
	closed bool
}

// The subscriptions of a notifier are numbered: one number, one
// subscription connection, so every channel under one number must lie in
// one slot. Each primitive that listens has its range here, the one place
// they are allotted, and names it in its family (families.go; the
// ranges' sizes are there), through which every listener subscribes.
const (
	// subQueue + tag: the channels of the tube partitions on a tag.
	subQueue = 0
	// subLock + slot: the wake-up channels of the locks in a slot.
	subLock = subQueue + NumTags
	// subSchedules: the one channel of the schedules' announcements.
	subSchedules = subLock + 16384
	// subHashes + tag: the expiring hashes' channels of the shard on a
	// tag.
	subHashes = subSchedules + 1
)

type tagSub struct {
	ctx       context.Context // of the connection's commands: the first listener's, without its cancellation
	ps        *redis.PubSub
	handlers  map[string]map[*func(string)]string // channel -> handler -> tube
	confirmed map[string]bool
	waiting   map[string][]chan struct{}
	done      chan struct{}
	// timers wake a channel's listeners when a job it was told of ('d<ms>')
	// falls due: the earliest such time per channel.
	timers map[string]*dueTimer
}

// dueTimer is a channel's pending wake-up at a time.
type dueTimer struct {
	at time.Time
	t  *time.Timer
}

func (n *notifier) init(s *Store) {
	n.s = s
	n.subs = map[int]*tagSub{}
}

// Listen implements queue.Notifier: wake(tube) is called after every
// message on the channels of tube's partitions, and for every channel once
// more after a reconnect (messages may have been lost while it was down).
func (s *Store) Listen(ctx context.Context, tube string, wake func(tube string)) (stop func(), err error) {
	k := s.partitions(tube)
	subs := make([]channelSub, k)
	for p := range subs {
		tag := tubeTag(tube, p, k)
		subs[p] = channelSub{i: tag, ch: s.k.channel(tag, tube), topic: tube}
	}
	return s.notify.addAll(ctx, queueFamily, subs, &wake)
}

// channelSub is one channel of addAll: the subscription number i of the
// family's range it goes through, and the topic its handler is told.
type channelSub struct {
	i         int
	ch, topic string
}

// addAll subscribes h to every channel of subs, as add does, all or none:
// when one fails, those made are undone. It returns the function that
// undoes them all.
func (n *notifier) addAll(ctx context.Context, f *family, subs []channelSub, h *func(string)) (func(), error) {
	undos := make([]func(), 0, len(subs))
	undo := func() {
		for _, u := range undos {
			u()
		}
	}
	for _, c := range subs {
		u, err := n.add(ctx, f, c.i, c.ch, c.topic, h)
		if err != nil {
			undo()
			return nil, err
		}
		undos = append(undos, u)
	}
	return undo, nil
}

// add subscribes h to channel ch under the subscription number i of f's
// range; its failures are f's (errTable).
func (n *notifier) add(ctx context.Context, f *family, i int, ch, tube string, h *func(string)) (func(), error) {
	undo, err := n.addSub(ctx, f.subs.at(i), ch, tube, h)
	if err != nil {
		return nil, f.errs.mapErr(err)
	}
	return undo, nil
}

func (n *notifier) addSub(ctx context.Context, tag int, ch, tube string, h *func(string)) (func(), error) {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil, errStoreClosed
	}
	ts := n.subs[tag]
	var confirm chan struct{}
	if ts == nil {
		ts = &tagSub{
			handlers: map[string]map[*func(string)]string{}, confirmed: map[string]bool{},
			waiting: map[string][]chan struct{}{}, done: make(chan struct{}),
			timers: map[string]*dueTimer{},
		}
		n.subs[tag] = ts
		ts.ctx = context.WithoutCancel(ctx)
		ts.ps = n.s.c.SSubscribe(ts.ctx, ch)
		confirm = make(chan struct{})
		ts.waiting[ch] = append(ts.waiting[ch], confirm)
		go n.read(ts)
	} else if _, ok := ts.handlers[ch]; !ok {
		confirm = make(chan struct{})
		ts.waiting[ch] = append(ts.waiting[ch], confirm)
		if err := ts.ps.SSubscribe(ctx, ch); err != nil {
			n.mu.Unlock()
			return nil, fmt.Errorf("redisstore: subscribing to %s: %w", ch, err)
		}
	} else if !ts.confirmed[ch] {
		confirm = make(chan struct{})
		ts.waiting[ch] = append(ts.waiting[ch], confirm)
	}
	if ts.handlers[ch] == nil {
		ts.handlers[ch] = map[*func(string)]string{}
	}
	ts.handlers[ch][h] = tube
	n.mu.Unlock()

	var once sync.Once
	undo := func() { once.Do(func() { n.remove(tag, ts, ch, h) }) }
	if confirm != nil {
		select {
		case <-confirm:
		case <-ctx.Done():
			undo()
			return nil, ctx.Err()
		}
	}
	return undo, nil
}

// remove takes listener h of channel ch away; the channel's last listener
// unsubscribes it, and the tag's last channel closes its connection.
func (n *notifier) remove(tag int, ts *tagSub, ch string, h *func(string)) {
	n.mu.Lock()
	delete(ts.handlers[ch], h)
	if len(ts.handlers[ch]) > 0 || n.subs[tag] != ts {
		n.mu.Unlock()
		return
	}
	delete(ts.handlers, ch)
	delete(ts.confirmed, ch)
	if d := ts.timers[ch]; d != nil {
		d.t.Stop()
		delete(ts.timers, ch)
	}
	for _, c := range ts.waiting[ch] {
		close(c)
	}
	delete(ts.waiting, ch)
	if len(ts.handlers) > 0 {
		// Under n.mu, so that a listener arriving for ch subscribes after
		// this unsubscription, on the same connection.
		_ = ts.ps.SUnsubscribe(ts.ctx, ch)
		n.mu.Unlock()
		return
	}
	delete(n.subs, tag)
	n.mu.Unlock()
	_ = ts.ps.Close()
	<-ts.done
}

// channels reports how many channels the process is subscribed to, on how
// many connections (for tests and diagnostics).
func (n *notifier) channels() (channels, conns int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, ts := range n.subs {
		channels += len(ts.handlers)
		conns++
	}
	return channels, conns
}

// read delivers the messages of one tag's subscription until it is closed.
func (n *notifier) read(ts *tagSub) {
	defer close(ts.done)
	for m := range ts.ps.ChannelWithSubscriptions() {
		var ch string
		switch m := m.(type) {
		case *redis.Subscription:
			if m.Kind != "ssubscribe" {
				continue
			}
			ch = m.Channel
			n.mu.Lock()
			again := ts.confirmed[ch]
			ts.confirmed[ch] = true
			for _, c := range ts.waiting[ch] {
				close(c)
			}
			delete(ts.waiting, ch)
			n.mu.Unlock()
			if !again {
				continue
			}
			// A resubscription after a reconnect: wake-ups may have been lost.
		case *redis.Message:
			ch = m.Channel
			if ms, ok := dueIn(m.Payload); ok {
				n.wakeAt(ts, ch, time.Now().Add(ms))
				continue
			}
			n.deliver(ts, ch, m.Payload)
			continue
		default:
			continue
		}
		n.deliver(ts, ch, "")
	}
}

// dueIn reads a message that a job falls due after a delay: 'd' and the
// milliseconds.
func dueIn(payload string) (time.Duration, bool) {
	v, ok := strings.CutPrefix(payload, "d")
	if !ok {
		return 0, false
	}
	ms, err := strconv.ParseInt(v, 10, 64)
	if err != nil || ms < 0 {
		return 0, false
	}
	return time.Duration(ms) * time.Millisecond, true
}

// withPayload, as the tube of a listener (add), has it called with each
// message's payload instead of a tube: "" after a resubscription.
const withPayload = "\x00payload"

// deliver calls the listeners of channel ch of ts; payload is the
// message's ("" for a resubscription or a timer).
func (n *notifier) deliver(ts *tagSub, ch, payload string) {
	n.mu.Lock()
	var calls []func()
	for h, tube := range ts.handlers[ch] {
		f, t := *h, tube
		if t == withPayload {
			t = payload
		}
		calls = append(calls, func() { f(t) })
	}
	n.mu.Unlock()
	for _, c := range calls {
		c()
	}
}

// wakeAt delivers a wake-up of channel ch at at, unless one is already
// pending no later: the waiter woken then asks, and learns any later time
// from the store.
func (n *notifier) wakeAt(ts *tagSub, ch string, at time.Time) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return
	}
	if d := ts.timers[ch]; d != nil {
		if !at.Before(d.at) {
			return
		}
		d.t.Stop()
	}
	d := &dueTimer{at: at}
	d.t = time.AfterFunc(time.Until(at), func() {
		n.mu.Lock()
		if ts.timers[ch] == d {
			delete(ts.timers, ch)
		}
		n.mu.Unlock()
		n.deliver(ts, ch, "")
	})
	ts.timers[ch] = d
}

func (n *notifier) close() {
	n.mu.Lock()
	n.closed = true
	subs := n.subs
	n.subs = map[int]*tagSub{}
	for _, ts := range subs {
		for ch, d := range ts.timers {
			d.t.Stop()
			delete(ts.timers, ch)
		}
	}
	n.mu.Unlock()
	for _, ts := range subs {
		_ = ts.ps.Close()
		<-ts.done
	}
}
