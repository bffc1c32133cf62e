package queue

import (
	"context"
	"sync"
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
	done     chan struct{}
	// line holds the waiters and the store subscription of every tube a
	// reserve waits on now, and of the tubes waited on lately: an idle
	// subscription ends after idleLinger, or sooner when more than maxIdle
	// are idle, so what a process holds follows what it waits on.
	line *wait.Line

	mu     sync.Mutex
	due    map[string]time.Time // per tube: when the store said something may become ready
	timer  *time.Timer          // fires at the earliest of due and the next poll
	closed bool
}

// How long a subscription nobody waits on is kept for the next waiter, and
// how many are kept at most.
const (
	idleLinger = 30 * time.Second
	maxIdle    = 256
)

func newHub(n Notifier, poll time.Duration) *hub {
	h := &hub{notifier: n, poll: poll, done: make(chan struct{}), due: map[string]time.Time{}}
	var listen wait.ListenFunc
	if n != nil {
		listen = n.Listen
	}
	h.line = wait.NewLine(listen, &wait.LineOptions{Closed: ErrClosed, Linger: idleLinger, MaxIdle: maxIdle})
	h.timer = time.AfterFunc(time.Hour, h.fire)
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
func (h *hub) wake(tube string) { h.line.Wake(tube) }

// schedule asks for a wake-up of tube after d.
func (h *hub) schedule(tube string, d time.Duration) {
	at := time.Now().Add(d)
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
		h.due[pollKey] = time.Now().Add(h.poll)
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
	h.timer.Reset(time.Until(first))
}

func (h *hub) fire() {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := time.Now()
	for tube, at := range h.due {
		if at.After(now) {
			continue
		}
		delete(h.due, tube)
		if tube != pollKey {
			h.line.Wake(tube)
			continue
		}
		// The poll: every tube with a waiter gets one wake-up.
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
