package memstore

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/internal/testkit/storetest"
	"github.com/hourglass-io/hourglass/lock"
	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/ttlhash"
)

// wakes records the wake-ups of a tube.
type wakes struct {
	mu sync.Mutex
	n  int
	ch chan struct{}
}

func listen(t *testing.T, s *Store, tube string) *wakes {
	t.Helper()
	w := &wakes{ch: make(chan struct{}, 100)}
	stop, err := s.Listen(context.Background(), tube, func(got string) {
		if got != tube {
			t.Errorf("woken for %q, want %q", got, tube)
		}
		w.mu.Lock()
		w.n++
		w.mu.Unlock()
		w.ch <- struct{}{}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return w
}

func (w *wakes) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n
}

// wait waits for one wake-up.
func (w *wakes) wait(t *testing.T, what string) {
	t.Helper()
	select {
	case <-w.ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("no wake-up for %s", what)
	}
}

// drain forgets the wake-ups so far.
func (w *wakes) drain() {
	for {
		select {
		case <-w.ch:
		default:
			return
		}
	}
}

// TestTimer: with the real clock and no operation, the Store's timer finds
// due jobs, expired reservations and ended pauses and wakes the tube.
func TestTimer(t *testing.T) {
	ctx := context.Background()
	s := must(New(nil))
	defer s.Close()
	w := listen(t, s, "timer")

	id := put(t, s, "timer", queue.NewJob{Delay: 30 * time.Millisecond})
	w.wait(t, "the put")
	w.wait(t, "the delay ending")
	if j, err := peekState(ctx, s, "timer", queue.Ready); err != nil || j.ID != id {
		t.Fatalf("after the wake-up: %v, %v; want job %d ready", j.ID, err, id)
	}

	res := must(s.Reserve(ctx, queue.ReserveRequest{Owner: "w", Tubes: []string{"timer"}, Max: 1}))
	if len(res.Jobs) != 1 {
		t.Fatal("nothing reserved")
	}
	s.mu.Lock()
	s.queue.jobs[id].at = time.Now().Add(30 * time.Millisecond).UnixNano() // a TTR shorter than the minimum
	s.queue.jobs[id].tube.reserved.up(int(s.queue.jobs[id].hidx))
	s.queue.resched(s.queue.jobs[id].tube)
	s.armLocked(s.now())
	s.mu.Unlock()
	w.drain()
	w.wait(t, "the TTR running out")
	if js := must(s.StatsJob(ctx, id)); js.State != queue.Ready || js.Timeouts != 1 {
		t.Fatalf("after the TTR: %+v", js)
	}

	ok(t, s.PauseTube(ctx, "timer", 30*time.Millisecond))
	w.wait(t, "the pause")
	w.wait(t, "the pause ending")
	if ts := must(s.StatsTube(ctx, "timer")); ts.Pause != 0 {
		t.Fatalf("after the pause: %+v", ts)
	}
}

// TestBlockingReserve: a Queue's Reserve, waiting on the Store's wake-ups,
// gets a delayed job once it is due, with no put in between.
func TestBlockingReserve(t *testing.T) {
	ctx := context.Background()
	s := must(New(nil))
	defer s.Close()
	q, err := queue.New(s, &queue.Options{PollInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	id := must(q.Put(ctx, "later", queue.NewJob{Delay: 50 * time.Millisecond}))
	j, err := q.Reserve(ctx, queue.ReserveOptions{Tubes: []string{"later"}, Timeout: 30 * time.Second})
	if err != nil || j.ID != id {
		t.Fatalf("Reserve = %d, %v; want job %d", j.ID, err, id)
	}
}

// TestWakeEvents: every change that can make a job ready wakes the tube;
// others do not; a stopped listener is not called.
func TestWakeEvents(t *testing.T) {
	ctx := context.Background()
	clock := storetest.NewClock(epoch)
	s := must(New(&Options{Clock: clock.Now}))
	defer s.Close()
	w := listen(t, s, "ev")
	other := listen(t, s, "other")
	step := func(what string, wantWake bool, f func()) {
		t.Helper()
		before := w.count()
		f()
		if got := w.count() > before; got != wantWake {
			t.Errorf("%s: woken %v, want %v", what, got, wantWake)
		}
	}
	var id queue.ID
	step("put", true, func() { id = put(t, s, "ev", queue.NewJob{}) })
	step("put delayed", true, func() { put(t, s, "ev", queue.NewJob{Delay: time.Second}) })
	step("reserve", false, func() { must(s.ReserveJob(ctx, "o", id)) })
	step("release", true, func() { ok(t, s.Release(ctx, "o", id, 0, 0, "")) })
	step("reserve and bury", false, func() { must(s.ReserveJob(ctx, "o", id)); ok(t, s.Bury(ctx, "o", id, 0, "")) })
	step("kick", true, func() { must(s.Kick(ctx, "ev", 1)) })
	step("reserve again", false, func() { must(s.ReserveJob(ctx, "o", id)) })
	step("unreserve", true, func() { must(s.Unreserve(ctx, "o", []queue.ID{id})) })
	step("pause", true, func() { ok(t, s.PauseTube(ctx, "ev", time.Minute)) })
	step("unpause", true, func() { ok(t, s.PauseTube(ctx, "ev", 0)) })
	step("delay ending, found by the next operation", true, func() { clock.Advance(time.Second); must(s.Stats(ctx)) })
	step("delete", false, func() { must(s.Delete(ctx, "o", []queue.ID{id})) })
	if other.count() != 0 {
		t.Errorf("the other tube was woken %d times", other.count())
	}
	stop, err := s.Listen(ctx, "ev", func(string) { t.Error("a stopped listener was called") })
	if err != nil {
		t.Fatal(err)
	}
	stop()
	stop()
	put(t, s, "ev", queue.NewJob{})
}

// TestManualClockTimer: on a manual clock that the Store waits on
// (Options.AfterFunc), its one timer fires when the clock passes the
// earliest deadline of any part, and not while the clock stands still; on
// a clock it only reads, no timer runs and the next operation applies what
// is due.
func TestManualClockTimer(t *testing.T) {
	ctx := context.Background()
	clock := storetest.NewClock(epoch)
	s := must(New(&Options{Clock: clock.Now, AfterFunc: clock.AfterFunc}))
	defer s.Close()
	w := listen(t, s, "frozen")
	put(t, s, "frozen", queue.NewJob{Delay: time.Second})
	before := w.count()
	clock.Advance(time.Second - time.Millisecond)
	if w.count() != before {
		t.Fatal("woken before the delay ended")
	}
	clock.Advance(time.Millisecond)
	if w.count() != before+1 {
		t.Fatal("not woken when the clock passed the delay")
	}
	// A lock's lease ends on the same timer, with no operation.
	c, _ := lock.New(s.Locks(), nil)
	if _, err := c.TryObtain(ctx, "l", &lock.ObtainOptions{TTL: time.Second}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second)
	if n := s.Locks().heldLocks(); n != 0 {
		t.Fatalf("%d names kept after the lease ended", n)
	}
	// So does a hash field.
	if _, err := s.Hashes().Set(ctx, "h", ttlhash.SetRequest{Fields: []ttlhash.Field{{Name: "f"}}, TTL: time.Second}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second)
	if st := must(s.Hashes().EventStats(ctx)); st.Retained != 1 {
		t.Fatalf("%d events after the field's deadline passed, want 1", st.Retained)
	}

	read := must(New(&Options{Clock: clock.Now}))
	defer read.Close()
	id := put(t, read, "frozen", queue.NewJob{Delay: time.Second})
	clock.Advance(time.Second)
	if st := must(read.StatsJob(ctx, id)); st.State != queue.Ready {
		t.Fatalf("job %v after its delay, want ready", st.State)
	}
}

func TestMaxJobs(t *testing.T) {
	ctx := context.Background()
	s := must(New(&Options{MaxJobs: 3}))
	defer s.Close()
	nj := func(key string) queue.NewJob { return queue.NewJob{UniqueKey: key, TTR: time.Second} }
	must(s.Put(ctx, "m", []queue.NewJob{nj("a"), nj("b")}))
	if _, err := s.Put(ctx, "m", []queue.NewJob{nj("c"), nj("d")}); !errors.Is(err, queue.ErrFull) {
		t.Fatalf("Put past the cap: %v, want ErrFull", err)
	}
	if st := must(s.Stats(ctx)); st.Ready != 2 {
		t.Fatalf("a refused put stored %d jobs", st.Ready-2)
	}
	// Duplicates take no room.
	res := must(s.Put(ctx, "m", []queue.NewJob{nj("a"), nj("c"), nj("c")}))
	if !res[0].Duplicate || res[1].Duplicate || !res[2].Duplicate || res[2].ID != res[1].ID {
		t.Fatalf("Put at the cap with duplicates: %+v", res)
	}
	if _, err := s.Put(ctx, "m", []queue.NewJob{nj("")}); !errors.Is(err, queue.ErrFull) {
		t.Fatalf("Put when full: %v, want ErrFull", err)
	}
	must(s.Delete(ctx, "", []queue.ID{res[1].ID}))
	must(s.Put(ctx, "m", []queue.NewJob{nj("")}))
	ok(t, s.CheckInvariants(ctx))
}

func TestClosed(t *testing.T) {
	ctx := context.Background()
	for _, s := range []*Store{must(New(nil)), openT(t, t.TempDir(), nil)} {
		ok(t, s.Close())
		calls := map[string]error{}
		_, calls["Put"] = s.Put(ctx, "t", []queue.NewJob{{}})
		_, calls["Reserve"] = s.Reserve(ctx, queue.ReserveRequest{Owner: "o", Tubes: []string{"t"}, Max: 1})
		_, calls["Stats"] = s.Stats(ctx)
		_, calls["Listen"] = s.Listen(ctx, "t", func(string) {})
		if err := s.Close(); err != nil {
			t.Errorf("second Close: %v, want nil", err)
		}
		for name, err := range calls {
			if !errors.Is(err, queue.ErrClosed) {
				t.Errorf("%s after Close: %v, want ErrClosed", name, err)
			}
		}
	}
}
