package queue

import (
	"container/list"
	"context"
	"sync"
	"time"

	"github.com/hourglass-io/hourglass/internal/wait"
)

// hub makes blocking reserves cheap: the reservers of one Queue that wait
// share one store subscription per tube and one timer, and a wake-up for a
// tube goes to the tube's oldest waiter that is not already awake. A waiter
// that gets a job passes the wake-up on to the next one, so a burst of jobs
// reaches every waiter without a thundering herd.
type hub struct {
	notifier Notifier // nil: rely on polling
	poll     time.Duration
	done     chan struct{}

	listenMu sync.Mutex // serialises Listen calls; guards listening and idle
	// listening holds the store subscription of every tube a reserve
	// waits on now, and of the tubes waited on lately (idle, newest last):
	// an idle subscription ends after idleLinger, or sooner when more than
	// maxIdle are idle, so what a process holds follows what it waits on.
	listening map[string]*subscription
	idle      list.List // of *subscription with no waiter

	mu      sync.Mutex
	waiters list.List            // of *waiter, oldest first
	due     map[string]time.Time // per tube: when the store said something may become ready
	timer   *time.Timer          // fires at the earliest of due and the next poll
	closed  bool
}

// subscription is the store's wake-ups of one tube for this hub.
type subscription struct {
	tube  string
	stop  func()
	refs  int           // reserves waiting on the tube
	since time.Time     // when it became idle
	elem  *list.Element // in hub.idle while refs is 0
}

// How long a subscription nobody waits on is kept for the next waiter, and
// how many are kept at most.
const (
	idleLinger = 30 * time.Second
	maxIdle    = 256
)

type waiter struct {
	tubes []string
	w     *wait.Waiter
	woken bool // a wake-up is pending in w
	elem  *list.Element
}

func newHub(n Notifier, poll time.Duration) *hub {
	h := &hub{notifier: n, poll: poll, done: make(chan struct{}), listening: map[string]*subscription{}, due: map[string]time.Time{}}
	h.timer = time.AfterFunc(time.Hour, h.fire)
	h.timer.Stop()
	return h
}

// listen makes sure the store wakes this hub for each of tubes until the
// caller calls unlisten with the same tubes.
func (h *hub) listen(ctx context.Context, tubes []string) error {
	if h.notifier == nil {
		return nil
	}
	h.listenMu.Lock()
	defer h.listenMu.Unlock()
	for i, t := range tubes {
		if s, ok := h.listening[t]; ok {
			if s.refs == 0 {
				h.idle.Remove(s.elem)
				s.elem = nil
			}
			s.refs++
			continue
		}
		var err error
		select {
		case <-h.done:
			err = ErrClosed
		default:
		}
		var stop func()
		if err == nil {
			stop, err = h.notifier.Listen(ctx, t, h.wake)
		}
		if err != nil {
			h.unlistenLocked(tubes[:i])
			return err
		}
		h.listening[t] = &subscription{tube: t, stop: stop, refs: 1}
	}
	h.trimLocked()
	return nil
}

// unlisten ends what listen began.
func (h *hub) unlisten(tubes []string) {
	if h.notifier == nil {
		return
	}
	h.listenMu.Lock()
	defer h.listenMu.Unlock()
	h.unlistenLocked(tubes)
	h.trimLocked()
}

func (h *hub) unlistenLocked(tubes []string) {
	now := time.Now()
	for _, t := range tubes {
		s := h.listening[t]
		if s == nil || s.refs == 0 {
			continue // ended by close
		}
		if s.refs--; s.refs == 0 {
			s.since = now
			s.elem = h.idle.PushBack(s)
		}
	}
}

// trimLocked ends the idle subscriptions that are too old or too many.
func (h *hub) trimLocked() {
	now := time.Now()
	for e := h.idle.Front(); e != nil; e = h.idle.Front() {
		s := e.Value.(*subscription)
		if h.idle.Len() <= maxIdle && now.Sub(s.since) < idleLinger {
			return
		}
		h.idle.Remove(e)
		delete(h.listening, s.tube)
		s.stop()
	}
}

// enter registers a waiter; the caller must leave it.
func (h *hub) enter(tubes []string) (*waiter, error) {
	w := &waiter{tubes: tubes, w: wait.New()}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, ErrClosed
	}
	w.elem = h.waiters.PushBack(w)
	h.armPollLocked()
	return w, nil
}

// took is called by a waiter that received its wake-up and is about to ask the store.
func (h *hub) took(w *waiter) {
	h.mu.Lock()
	w.woken = false
	h.mu.Unlock()
}

// leave removes a waiter. A wake-up it received but did not use goes to the
// next waiter of its tubes.
func (h *hub) leave(w *waiter) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.waiters.Remove(w.elem)
	if w.woken {
		for _, t := range w.tubes {
			h.wakeLocked(t)
		}
	}
}

// wake hands a wake-up for tube to its oldest waiter that is not awake.
func (h *hub) wake(tube string) {
	h.mu.Lock()
	h.wakeLocked(tube)
	h.mu.Unlock()
}

func (h *hub) wakeLocked(tube string) {
	for e := h.waiters.Front(); e != nil; e = e.Next() {
		w := e.Value.(*waiter)
		if w.woken || !w.watches(tube) {
			continue
		}
		w.woken = true
		w.w.Wake()
		return
	}
}

func (w *waiter) watches(tube string) bool {
	for _, t := range w.tubes {
		if t == tube {
			return true
		}
	}
	return false
}

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
			h.wakeLocked(tube)
			continue
		}
		// The poll: every tube with a waiter gets one wake-up.
		seen := map[string]bool{}
		for e := h.waiters.Front(); e != nil; e = e.Next() {
			for _, t := range e.Value.(*waiter).tubes {
				if !seen[t] {
					seen[t] = true
					h.wakeLocked(t)
				}
			}
		}
		if h.waiters.Len() > 0 {
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
	for e := h.waiters.Front(); e != nil; e = e.Next() {
		e.Value.(*waiter).w.Wake() // it finds done closed
	}
	h.mu.Unlock()

	h.listenMu.Lock()
	defer h.listenMu.Unlock()
	for t, s := range h.listening {
		s.stop()
		delete(h.listening, t)
	}
	h.idle.Init()
}
