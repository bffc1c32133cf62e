package queue

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hourglass-io/hourglass/internal/wait"
)

// hub makes blocking reserves cheap: the reservers of one Queue that wait
// are in one wait.Line, which shares one store subscription per tube among
// them and gives a wake-up for a tube to the tube's oldest waiter that is
// not already awake, and they share one timer. A waiter that gets a job
// passes the wake-up on to the next one, so a burst of jobs reaches every
// waiter without a thundering herd.
type hub struct {
	notifier Notifier // nil: rely on polling
	poll     time.Duration
	clock    wait.Clock // the Queue's: the due times, the polls and the waiters' deadlines are on it
	done     chan struct{}
	// line holds the waiters and the store subscription of every tube a
	// reserve waits on now, and of the tubes waited on lately: an idle
	// subscription ends after idleLinger, or sooner when more than maxIdle
	// are idle, so what a process holds follows what it waits on.
	line *wait.Line

	mu     sync.Mutex
	due    map[string]time.Time // per tube: when the store said something may become ready
	timer  wait.Timer           // fires at the earliest of due and the next poll
	closed bool

	// What this process knows of each tube it holds a subscription to,
	// so that a reserve need not ask the store what it already answered:
	// a tube the store found with nothing a reserve could take, and that
	// no wake-up has reached since, has nothing yet (see empty).
	smu  sync.Mutex
	seen map[string]*tubeSeen // by tube, while subscribed
	gen  uint64               // the last epoch given
	// subs is len(seen), written under smu: while no tube is subscribed
	// (no reserve of this Queue has waited lately) bump, epoch and empty
	// know the answer without the lock every reserve and put would share.
	subs atomic.Int64
}

// tubeSeen is what a hub knows of one subscribed tube.
type tubeSeen struct {
	epoch uint64    // changes at each wake-up (from the hub's gen: a new subscription's differs from any before)
	empty bool      // a reserve found nothing it could take, with no wake-up since
	until time.Time // when that may change without a wake-up (zero: only by one)
}

// How long a subscription nobody waits on is kept for the next waiter, and
// how many are kept at most.
const (
	idleLinger = 30 * time.Second
	maxIdle    = 256
)

func newHub(n Notifier, poll time.Duration, clock wait.Clock) *hub {
	h := &hub{notifier: n, poll: poll, clock: clock, done: make(chan struct{}), due: map[string]time.Time{}, seen: map[string]*tubeSeen{}}
	var listen wait.ListenFunc
	if n != nil {
		listen = h.listen
	}
	h.line = wait.NewLine(listen, &wait.LineOptions{Closed: ErrClosed, Linger: idleLinger, MaxIdle: maxIdle, Clock: clock})
	h.timer = clock.AfterFunc(time.Hour, h.fire)
	h.timer.Stop()
	return h
}

// enter registers a waiter on tubes, once the store wakes this hub for
// each of them; the caller must leave it.
func (h *hub) enter(ctx context.Context, tubes []string) (*wait.Place, error) {
	p, err := h.line.Enter(ctx, tubes, false)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	h.armPollLocked()
	h.mu.Unlock()
	return p, nil
}

// leave removes a waiter. A wake-up it received but did not use goes to the
// next waiter of its tubes.
func (h *hub) leave(p *wait.Place) { h.line.Leave(p, false) }

// wake hands a wake-up for tube to its oldest waiter that is not awake.
func (h *hub) wake(tube string) {
	h.bump(tube)
	h.line.Wake(tube)
}

// listen is the notifier's Listen as the Line uses it: every wake-up of
// a tube, and the subscription's end, first forget what the hub knew of
// the tube.
func (h *hub) listen(ctx context.Context, tube string, wake func(string)) (func(), error) {
	stop, err := h.notifier.Listen(ctx, tube, func(t string) {
		h.bump(t)
		wake(t)
	})
	if err != nil {
		return nil, err
	}
	h.smu.Lock()
	h.gen++
	h.seen[tube] = &tubeSeen{epoch: h.gen}
	h.subs.Store(int64(len(h.seen)))
	h.smu.Unlock()
	return func() {
		h.smu.Lock()
		delete(h.seen, tube)
		h.subs.Store(int64(len(h.seen)))
		h.smu.Unlock()
		stop()
	}, nil
}

// bump records a wake-up of tube: whatever a reserve found before it, the
// tube may have a job now.
func (h *hub) bump(tube string) {
	if h.subs.Load() == 0 {
		return // no tube is subscribed: none has anything to forget
	}
	h.smu.Lock()
	if s := h.seen[tube]; s != nil {
		h.gen++
		s.epoch, s.empty = h.gen, false
	}
	h.smu.Unlock()
}

// epoch returns a number that changes whenever one of tubes is woken or
// its subscription ends, and whether every one of them is subscribed (a
// tube without a subscription hears of no change, so nothing is known of
// it).
func (h *hub) epoch(tubes []string) (uint64, bool) {
	if h.subs.Load() == 0 {
		return 0, false
	}
	h.smu.Lock()
	defer h.smu.Unlock()
	return h.epochLocked(tubes)
}

func (h *hub) epochLocked(tubes []string) (uint64, bool) {
	var sum uint64
	for _, t := range tubes {
		s := h.seen[t]
		if s == nil {
			return 0, false
		}
		sum += s.epoch
	}
	return sum, true
}

// found records what a reserve asked at epoch e and at asked found:
// nothing it could take in tubes, none of which may change for next after
// asked without a wake-up (next < 0: until one). Nothing is recorded when
// a tube was woken since e, whose change the answer may not have seen.
func (h *hub) found(tubes []string, e uint64, asked time.Time, next time.Duration) {
	h.smu.Lock()
	defer h.smu.Unlock()
	if sum, ok := h.epochLocked(tubes); !ok || sum != e {
		return
	}
	var until time.Time
	if next >= 0 {
		until = asked.Add(next)
	}
	for _, t := range tubes {
		s := h.seen[t]
		s.empty, s.until = true, until
	}
}

// empty reports whether a reserve on tubes would find nothing: each was
// found so by a reserve, nothing has woken it since, and no deadline the
// store named has passed. A process's own subscriptions tell it of every
// change another process makes (a put, a release, a kick, a place freed
// under a cap), so asking again would only cost the store a call.
func (h *hub) empty(tubes []string) bool {
	if h.subs.Load() == 0 {
		return false
	}
	h.smu.Lock()
	defer h.smu.Unlock()
	var now time.Time // read once, if a tube was found empty until a time
	for _, t := range tubes {
		s := h.seen[t]
		if s == nil || !s.empty {
			return false
		}
		if !s.until.IsZero() {
			if now.IsZero() {
				now = h.clock.Now()
			}
			if !now.Before(s.until) {
				return false
			}
		}
	}
	return true
}

// forget drops what the hub knows of every tube (a poll: a wake-up may
// have been lost).
func (h *hub) forget() {
	h.smu.Lock()
	for _, s := range h.seen {
		h.gen++
		s.epoch, s.empty = h.gen, false
	}
	h.smu.Unlock()
}

// schedule asks for a wake-up of tube at at.
func (h *hub) schedule(tube string, at time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if cur, ok := h.due[tube]; ok && !at.Before(cur) {
		return
	}
	h.due[tube] = at
	h.resetLocked()
}

var pollKey = "\x00poll" // not a valid tube name

func (h *hub) armPollLocked() {
	if _, ok := h.due[pollKey]; !ok {
		h.due[pollKey] = h.clock.Now().Add(h.poll)
		h.resetLocked()
	}
}

func (h *hub) resetLocked() {
	if h.closed {
		return
	}
	var first time.Time
	for _, at := range h.due {
		if first.IsZero() || at.Before(first) {
			first = at
		}
	}
	if first.IsZero() {
		h.timer.Stop()
		return
	}
	h.timer.Reset(first.Sub(h.clock.Now()))
}

func (h *hub) fire() {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.clock.Now()
	for tube, at := range h.due {
		if at.After(now) {
			continue
		}
		delete(h.due, tube)
		if tube != pollKey {
			h.bump(tube)
			h.line.Wake(tube)
			continue
		}
		// The poll: every tube with a waiter gets one wake-up.
		h.forget()
		if h.line.Poke() {
			h.due[pollKey] = now.Add(h.poll)
		}
	}
	h.resetLocked()
}

func (h *hub) close() {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	h.closed = true
	h.timer.Stop()
	close(h.done)
	h.mu.Unlock()
	h.line.Close() // wakes every waiter, which finds done closed
}
