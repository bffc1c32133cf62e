package wait_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/internal/wait"
)

// waitFor is how long a test lets a wait that should end at once take
// before it calls it stuck.
const waitFor = 10 * time.Second

func mustWait(t *testing.T, w *wait.Waiter, ctx context.Context, deadline time.Time, poll time.Duration, want wait.Reason) {
	t.Helper()
	got, err := w.Wait(ctx, deadline, poll)
	if err != nil || got != want {
		t.Fatalf("Wait = %v, %v; want %v", got, err, want)
	}
}

// A wake-up that comes between a check and the Wait after it is pending:
// the Wait returns at once.
func TestWakeBeforeWaitIsKept(t *testing.T) {
	w := wait.New()
	w.Wake() // the change lands after the caller's check
	start := time.Now()
	mustWait(t, w, context.Background(), time.Now().Add(waitFor), 0, wait.Woken)
	if d := time.Since(start); d > waitFor/2 {
		t.Fatalf("Wait with a pending wake-up took %v", d)
	}
}

// Wake-ups that come while nobody waits are coalesced into one.
func TestWakesCoalesce(t *testing.T) {
	w := wait.New()
	if !w.Wake() {
		t.Fatal("first Wake reported a wake-up already pending")
	}
	for range 5 {
		if w.Wake() {
			t.Fatal("a second Wake reported no wake-up pending")
		}
	}
	mustWait(t, w, context.Background(), time.Time{}, time.Millisecond, wait.Woken)
	mustWait(t, w, context.Background(), time.Time{}, time.Millisecond, wait.Polled)
}

func TestTake(t *testing.T) {
	w := wait.New()
	if w.Take() {
		t.Fatal("Take on a new Waiter found a wake-up")
	}
	w.WakeTopic("tube")
	if !w.Take() {
		t.Fatal("Take found no wake-up after WakeTopic")
	}
	mustWait(t, w, context.Background(), time.Time{}, time.Millisecond, wait.Polled)
}

func TestWakeDuringWait(t *testing.T) {
	w := wait.New()
	var started sync.WaitGroup
	started.Add(1)
	done := make(chan wait.Reason)
	go func() {
		started.Done()
		r, _ := w.Wait(context.Background(), time.Time{}, 0)
		done <- r
	}()
	started.Wait()
	w.Wake()
	select {
	case r := <-done:
		if r != wait.Woken {
			t.Fatalf("Wait = %v, want woken", r)
		}
	case <-time.After(waitFor):
		t.Fatal("Wait not woken")
	}
}

func TestDeadline(t *testing.T) {
	w := wait.New()
	ctx := context.Background()
	mustWait(t, w, ctx, time.Now().Add(-time.Second), 0, wait.Deadline)
	start := time.Now()
	mustWait(t, w, ctx, start.Add(20*time.Millisecond), time.Hour, wait.Deadline)
	if d := time.Since(start); d < 20*time.Millisecond {
		t.Fatalf("Wait returned after %v, before its deadline", d)
	}
	// The poll bound, when sooner, ends the wait first.
	start = time.Now()
	mustWait(t, w, ctx, start.Add(time.Hour), 20*time.Millisecond, wait.Polled)
	if d := time.Since(start); d < 20*time.Millisecond {
		t.Fatalf("Wait returned after %v, before its poll bound", d)
	}
	// A pending wake-up comes before a deadline already passed.
	w.Wake()
	mustWait(t, w, ctx, time.Now().Add(-time.Second), 0, wait.Woken)
}

func TestContext(t *testing.T) {
	w := wait.New()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	w.Wake()
	if _, err := w.Wait(ctx, time.Time{}, 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait on an ended context = %v, want context.Canceled", err)
	}

	ctx, cancel = context.WithCancel(context.Background())
	done := make(chan error)
	w.Take()
	go func() {
		_, err := w.Wait(ctx, time.Time{}, 0)
		done <- err
	}()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Wait = %v, want context.Canceled", err)
		}
	case <-time.After(waitFor):
		t.Fatal("Wait did not end with its context")
	}
}

// The loop of the package doc sees every change, however wake-ups and
// checks interleave: none is lost between a check and a wait.
func TestLoopMissesNoChange(t *testing.T) {
	const changes = 10000
	w := wait.New()
	var n atomic.Int64
	go func() {
		for range changes {
			n.Add(1)
			w.Wake()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	for n.Load() < changes {
		r, err := w.Wait(ctx, time.Time{}, 0) // no poll: only a wake-up ends it
		if err != nil {
			t.Fatalf("after %d of %d changes: %v (a wake-up was lost)", n.Load(), changes, err)
		}
		if r != wait.Woken {
			t.Fatalf("Wait = %v, want woken", r)
		}
	}
}

func ExampleWaiter() {
	var (
		mu    sync.Mutex
		ready []string
	)
	w := wait.New()
	// A store's notifier would call w.WakeTopic; here a goroutine does.
	go func() {
		mu.Lock()
		ready = append(ready, "job")
		mu.Unlock()
		w.WakeTopic("default")
	}()
	ctx := context.Background()
	deadline := time.Now().Add(time.Minute)
	for {
		mu.Lock()
		n := len(ready)
		mu.Unlock()
		if n > 0 {
			break
		}
		if r, _ := w.Wait(ctx, deadline, 0); r == wait.Deadline {
			break
		}
	}
	mu.Lock()
	fmt.Println(ready)
	mu.Unlock()
	// Output: [job]
}
