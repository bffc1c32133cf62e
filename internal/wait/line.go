package wait

import (
	"container/list"
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// ListenFunc is a notifier's Listen method, in the one shape every
// primitive's notifier has (see the package doc).
type ListenFunc func(ctx context.Context, topic string, wake func(topic string)) (stop func(), err error)

// LineOptions configure a Line. The zero value ends a subscription with
// its last waiter.
type LineOptions struct {
	// Closed is Enter's error once Close has been called.
	Closed error
	// Linger keeps a subscription that no waiter uses any more for the
	// next waiter of its topic, for this long; 0 ends it at once.
	Linger time.Duration
	// MaxIdle bounds the subscriptions kept so (0: no bound but Linger).
	MaxIdle int
	// Clock is the clock of the waiters' Waiters (nil: the machine's).
	Clock Clock
}

// Line is the waiters of one process on the topics of one notifier. They
// share one subscription per topic, taken by the first waiter of the
// topic and ended after the last (or, with LineOptions.Linger, a while
// after), and a wake-up of a topic goes to its oldest waiter that has no
// wake-up pending, rather than to all: a change that one waiter can use
// does not set every waiter of the process racing for it. A waiter that
// entered with all set gets every wake-up of its topics (a fair lock's
// waiters: only the store knows which of them is first in line). A waiter
// that leaves without using a wake-up passes it on.
//
// The queue's blocking reserves (one Line a Queue, topics the tubes), a
// lock client's waiters (one Line a Client, topics the lock names) and
// the consumers of an expiring hash's group (one Line a group in a
// ttlhash.Hashes, topic TopicEvents, entered for each wait) wait in one.
// A Line is safe for concurrent use.
type Line struct {
	listen ListenFunc // nil: no notifier; wake-ups come from Wake alone
	opts   LineOptions

	mu     sync.Mutex
	subs   map[string]*lineSub // by topic: the subscription waiters share
	idle   list.List           // of *lineSub that no waiter uses, oldest first
	places list.List           // of *Place, oldest first
	closed bool
	// waiters is places.Len(), written under mu: Wake reads it without
	// the lock, so that a wake-up nobody waits for (a put, a reserve that
	// leaves jobs, while no reserve waits) costs no lock shared by every
	// caller.
	waiters atomic.Int64
}

type lineSub struct {
	topic string
	ready chan struct{} // closed once Listen has returned
	stop  func()        // set before ready is closed; nil when Listen failed
	err   error         // Listen's error, set before ready is closed
	refs  int           // the waiters using it
	since time.Time     // when refs fell to 0
	elem  *list.Element // in idle while refs is 0
}

// Place is one waiter in a Line: wait on its Waiter, then ask the store
// again, until done; then Leave.
type Place struct {
	*Waiter
	topics []string
	all    bool
	subs   []*lineSub
	elem   *list.Element
}

// NewLine returns a Line whose subscriptions listen is (nil when the store
// cannot notify: waiters are woken by Wake and Poke only).
func NewLine(listen ListenFunc, opts *LineOptions) *Line {
	l := &Line{listen: listen, subs: map[string]*lineSub{}}
	if opts != nil {
		l.opts = *opts
	}
	return l
}

// Enter adds a waiter on topics, the newest, and returns once the
// subscription of each topic is in effect: a change after Enter returns
// wakes a waiter. It fails, adding none, with the subscription's error,
// ctx's, or LineOptions.Closed after Close. The caller must Leave the
// Place it returns.
func (l *Line) Enter(ctx context.Context, topics []string, all bool) (*Place, error) {
	p := &Place{Waiter: NewOn(l.opts.Clock), topics: topics, all: all}
	subs, err := l.subscribeAll(ctx, topics)
	if err != nil {
		return nil, err
	}
	p.subs = subs
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, l.opts.Closed // Close ended the subscriptions
	}
	p.elem = l.places.PushBack(p)
	l.waiters.Add(1)
	return p, nil
}

// Hold takes the subscription of each of topics, as Enter does, without
// adding a waiter, and returns once each is in effect; release gives them
// back. A waiter that stands in the Line only while it waits (an expiring
// hash's consumer, which is not woken while it reads) holds its topics
// between its waits: no change is missed meanwhile, and its Enter finds
// the subscriptions in effect.
func (l *Line) Hold(ctx context.Context, topics []string) (release func(), err error) {
	subs, err := l.subscribeAll(ctx, topics)
	if err != nil {
		return nil, err
	}
	return func() {
		l.mu.Lock()
		stops := l.releaseLocked(subs)
		subs = nil
		l.mu.Unlock()
		stopAll(stops)
	}, nil
}

// subscribeAll takes a reference to the subscription of each of topics
// (none when the Line has no notifier), all or none.
func (l *Line) subscribeAll(ctx context.Context, topics []string) ([]*lineSub, error) {
	if l.listen == nil {
		return nil, nil
	}
	subs := make([]*lineSub, 0, len(topics))
	for _, t := range topics {
		s, err := l.subscribe(ctx, t)
		if err != nil {
			l.mu.Lock()
			stops := l.releaseLocked(subs)
			l.mu.Unlock()
			stopAll(stops)
			return nil, err
		}
		subs = append(subs, s)
	}
	return subs, nil
}

// subscribe takes a reference to the subscription of topic, making it
// when there is none, and waits until it is in effect.
func (l *Line) subscribe(ctx context.Context, topic string) (*lineSub, error) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil, l.opts.Closed
	}
	if s := l.subs[topic]; s != nil {
		if s.refs == 0 && s.elem != nil {
			l.idle.Remove(s.elem)
			s.elem = nil
		}
		s.refs++
		l.mu.Unlock()
		var err error
		select {
		case <-s.ready:
			err = s.err
		case <-ctx.Done():
			err = ctx.Err()
		}
		if err != nil {
			l.mu.Lock()
			stops := l.releaseLocked([]*lineSub{s})
			l.mu.Unlock()
			stopAll(stops)
			return nil, err
		}
		return s, nil
	}
	s := &lineSub{topic: topic, ready: make(chan struct{}), refs: 1}
	l.subs[topic] = s
	l.mu.Unlock()

	stop, err := l.listen(ctx, topic, l.Wake)
	l.mu.Lock()
	s.stop, s.err = stop, err
	close(s.ready)
	closed := l.closed
	if err != nil || closed {
		s.refs--
		if l.subs[topic] == s {
			delete(l.subs, topic) // the next waiter of topic tries again
		}
	}
	l.mu.Unlock()
	switch {
	case err != nil:
		return nil, err
	case closed: // Close could not end it while Listen ran
		stop()
		return nil, l.opts.Closed
	}
	return s, nil
}

// releaseLocked drops a reference to each of subs and returns the stop
// functions of the subscriptions that end, to call without l.mu held.
func (l *Line) releaseLocked(subs []*lineSub) []func() {
	now := time.Now()
	var stops []func()
	for _, s := range subs {
		if s.refs--; s.refs > 0 || l.subs[s.topic] != s {
			continue // still used, or ended by Close
		}
		if l.opts.Linger > 0 {
			s.since = now
			s.elem = l.idle.PushBack(s)
			continue
		}
		delete(l.subs, s.topic)
		stops = append(stops, s.stop)
	}
	// End the idle subscriptions that are too old or too many.
	for e := l.idle.Front(); e != nil; e = l.idle.Front() {
		s := e.Value.(*lineSub)
		if (l.opts.MaxIdle <= 0 || l.idle.Len() <= l.opts.MaxIdle) && now.Sub(s.since) < l.opts.Linger {
			break
		}
		l.idle.Remove(e)
		s.elem = nil
		delete(l.subs, s.topic)
		stops = append(stops, s.stop)
	}
	return stops
}

func stopAll(stops []func()) {
	for _, stop := range stops {
		stop()
	}
}

// Leave removes p from the Line. A wake-up p has pending and did not use,
// or any wake-up when passOn is set (a lock waiter that leaves without the
// lock), goes to the next waiter of its topics.
func (l *Line) Leave(p *Place, passOn bool) {
	l.mu.Lock()
	if p.elem != nil {
		l.places.Remove(p.elem)
		l.waiters.Add(-1)
		p.elem = nil
	}
	if p.Take() || passOn {
		for _, t := range p.topics {
			l.wakeLocked(t)
		}
	}
	stops := l.releaseLocked(p.subs)
	p.subs = nil
	l.mu.Unlock()
	stopAll(stops)
}

// Wake hands a wake-up of topic to its oldest waiter with none pending,
// and to every waiter that entered with all set. It is the wake function
// of the Line's subscriptions.
func (l *Line) Wake(topic string) {
	// No waiter: nothing to hand. A waiter that enters from now on asks
	// the store after it has entered, so it sees the change this wake-up
	// tells of, as it would if it had entered just after the lock below.
	if l.waiters.Load() == 0 {
		return
	}
	l.mu.Lock()
	l.wakeLocked(topic)
	l.mu.Unlock()
}

func (l *Line) wakeLocked(topic string) {
	one := false
	for e := l.places.Front(); e != nil; e = e.Next() {
		p := e.Value.(*Place)
		if (!p.all && one) || !slices.Contains(p.topics, topic) {
			continue
		}
		if p.Wake() && !p.all {
			one = true
		}
	}
}

// Poke gives every topic that a waiter waits on one wake-up (a poll), and
// reports whether there was any waiter.
func (l *Line) Poke() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	seen := map[string]bool{}
	for e := l.places.Front(); e != nil; e = e.Next() {
		for _, t := range e.Value.(*Place).topics {
			if !seen[t] {
				seen[t] = true
				l.wakeLocked(t)
			}
		}
	}
	return l.places.Len() > 0
}

// Close ends every subscription and wakes every waiter (which finds its
// owner closed and leaves); Enter fails from then on.
func (l *Line) Close() {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.closed = true
	for e := l.places.Front(); e != nil; e = e.Next() {
		e.Value.(*Place).Wake()
	}
	var stops []func()
	for t, s := range l.subs {
		if s.stop != nil {
			stops = append(stops, s.stop)
		}
		delete(l.subs, t)
	}
	l.idle.Init()
	l.mu.Unlock()
	stopAll(stops)
}
