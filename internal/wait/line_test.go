package wait_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/internal/wait"
)

// topics is a notifier of the one shape, in memory: Notify wakes every
// subscription of a topic; it counts the subscriptions in effect.
type topics struct {
	mu   sync.Mutex
	subs map[string][]*func(string)
	fail error
}

func (n *topics) Listen(_ context.Context, topic string, wake func(string)) (func(), error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.fail != nil {
		return nil, n.fail
	}
	if n.subs == nil {
		n.subs = map[string][]*func(string){}
	}
	p := &wake
	n.subs[topic] = append(n.subs[topic], p)
	return func() {
		n.mu.Lock()
		defer n.mu.Unlock()
		for i, q := range n.subs[topic] {
			if q == p {
				n.subs[topic] = append(n.subs[topic][:i:i], n.subs[topic][i+1:]...)
				break
			}
		}
	}, nil
}

func (n *topics) Notify(topic string) {
	n.mu.Lock()
	ws := append([]*func(string){}, n.subs[topic]...)
	n.mu.Unlock()
	for _, w := range ws {
		(*w)(topic)
	}
}

func (n *topics) count(topic string) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.subs[topic])
}

func enter(t *testing.T, l *wait.Line, all bool, ts ...string) *wait.Place {
	t.Helper()
	p, err := l.Enter(context.Background(), ts, all)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func pending(p *wait.Place) bool {
	if p.Take() {
		p.Wake()
		return true
	}
	return false
}

// The waiters of a topic share one subscription, ended with the last; a
// wake-up goes to the oldest waiter with none pending, and to every waiter
// that takes all; one left unused is passed on.
func TestLineSharesAndWakesOldest(t *testing.T) {
	var n topics
	l := wait.NewLine(n.Listen, nil)
	a := enter(t, l, false, "x")
	b := enter(t, l, false, "x", "y")
	f := enter(t, l, true, "x")
	if got := n.count("x"); got != 1 {
		t.Fatalf("%d subscriptions of x, want 1", got)
	}
	n.Notify("x")
	if !pending(a) || pending(b) || !pending(f) {
		t.Fatalf("after one wake-up: a %v b %v fair %v, want true false true", pending(a), pending(b), pending(f))
	}
	n.Notify("x") // a is awake already: b's turn
	if !pending(b) {
		t.Fatal("the second wake-up did not reach the next waiter")
	}
	b.Take()
	l.Leave(a, false) // a's unused wake-up goes to b
	if !pending(b) {
		t.Fatal("a wake-up left unused was not passed on")
	}
	l.Leave(b, false)
	l.Leave(f, false)
	if got := n.count("x") + n.count("y"); got != 0 {
		t.Fatalf("%d subscriptions after the last waiter left, want 0", got)
	}
}

// Hold keeps a subscription in effect with no waiter: a waiter that then
// enters shares it, a wake-up reaches only waiters in the line, and the
// subscription ends with the hold's release once no waiter uses it.
func TestLineHold(t *testing.T) {
	var n topics
	l := wait.NewLine(n.Listen, nil)
	release, err := l.Hold(context.Background(), []string{"x"})
	if err != nil {
		t.Fatal(err)
	}
	if n.count("x") != 1 {
		t.Fatal("Hold did not subscribe")
	}
	n.Notify("x") // no waiter: nobody to wake
	p := enter(t, l, false, "x")
	if n.count("x") != 1 || pending(p) {
		t.Fatalf("after Enter: %d subscriptions, pending %v; want 1, false", n.count("x"), pending(p))
	}
	n.Notify("x")
	if !pending(p) {
		t.Fatal("the waiter of a held topic was not woken")
	}
	p.Take()
	l.Leave(p, false)
	if n.count("x") != 1 {
		t.Fatal("the held subscription ended with the last waiter")
	}
	release()
	if n.count("x") != 0 {
		t.Fatal("release did not end the subscription")
	}
	n.fail = errors.New("down")
	if _, err := l.Hold(context.Background(), []string{"x"}); !errors.Is(err, n.fail) {
		t.Fatalf("Hold = %v, want %v", err, n.fail)
	}
}

// With Linger, a subscription outlives its last waiter for the next one;
// Close ends it, wakes the waiters, and Enter then fails with Closed.
func TestLineLingerAndClose(t *testing.T) {
	var n topics
	closed := errors.New("closed")
	l := wait.NewLine(n.Listen, &wait.LineOptions{Closed: closed, Linger: 1 << 40, MaxIdle: 1})
	l.Leave(enter(t, l, false, "x"), false)
	if n.count("x") != 1 {
		t.Fatal("the idle subscription did not linger")
	}
	l.Leave(enter(t, l, false, "y"), false) // more idle than MaxIdle: x ends
	if n.count("x") != 0 || n.count("y") != 1 {
		t.Fatalf("subscriptions x %d y %d, want 0 1", n.count("x"), n.count("y"))
	}
	p := enter(t, l, false, "y")
	if n.count("y") != 1 {
		t.Fatal("the idle subscription was not reused")
	}
	l.Close()
	if !pending(p) || n.count("y") != 0 {
		t.Fatal("Close did not wake the waiter and end the subscription")
	}
	l.Leave(p, false)
	if _, err := l.Enter(context.Background(), []string{"y"}, false); !errors.Is(err, closed) {
		t.Fatalf("Enter after Close = %v, want %v", err, closed)
	}
}

// A failed subscription fails Enter and adds no waiter; the next Enter
// tries again.
func TestLineListenFails(t *testing.T) {
	n := topics{fail: errors.New("down")}
	l := wait.NewLine(n.Listen, nil)
	if _, err := l.Enter(context.Background(), []string{"x"}, false); !errors.Is(err, n.fail) {
		t.Fatalf("Enter = %v, want %v", err, n.fail)
	}
	n.mu.Lock()
	n.fail = nil
	n.mu.Unlock()
	p := enter(t, l, false, "x")
	n.Notify("x")
	if !pending(p) {
		t.Fatal("no wake-up after a second Enter")
	}
	l.Leave(p, false)
}

// A wake-up of a Line that nobody waits in takes no lock of the Line;
// once a waiter has entered and left, none again.
func TestWakeWithoutWaitersTakesNoLock(t *testing.T) {
	l := wait.NewLine(nil, nil)
	p, err := l.Enter(context.Background(), []string{"a"}, false)
	if err != nil {
		t.Fatal(err)
	}
	l.Leave(p, false)
	unlock := wait.LockLine(l)
	done := make(chan struct{})
	go func() { l.Wake("a"); close(done) }()
	select {
	case <-done:
		unlock()
	case <-time.After(10 * time.Second):
		unlock()
		t.Fatal("Wake waited for the Line's lock with no waiter")
	}
}
