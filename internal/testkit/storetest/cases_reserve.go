package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/hourglass-io/hourglass/queue"
)

// waitLimit bounds every wait for another goroutine. It is a deadline for
// failure, never an expected duration.
const waitLimit = 5 * time.Second

// testStoreReserveNext: when Store.Reserve finds nothing ready, Next and
// NextTube say when and where something may become ready: a delay ending, a
// TTR running out, a pause ending; Next < 0 when nothing is scheduled.
func testStoreReserveNext(t *testing.T, s *suite) {
	e := s.env(t)
	owner := e.q.Owner()
	next := func(step string, wantNext time.Duration, wantTube string, tubes ...string) {
		t.Helper()
		res, err := e.store.Reserve(e.ctx, queue.ReserveRequest{Owner: owner, Tubes: tubes, Max: 1})
		if err != nil {
			t.Fatalf("%s: Store.Reserve(%q): %v", step, tubes, err)
		}
		if len(res.Jobs) != 0 {
			t.Fatalf("%s: Store.Reserve(%q) reserved %v, want nothing ready", step, tubes, ids(res.Jobs))
		}
		if wantNext < 0 {
			if res.Next >= 0 {
				t.Errorf("%s: Store.Reserve(%q): Next %v (tube %q), want < 0 (nothing scheduled)", step, tubes, res.Next, res.NextTube)
			}
			return
		}
		if res.Next != wantNext || res.NextTube != wantTube {
			t.Errorf("%s: Store.Reserve(%q): Next %v in %q, want %v in %q", step, tubes, res.Next, res.NextTube, wantNext, wantTube)
		}
	}
	next("unknown tube", -1, "", "na")

	a := e.put("na", queue.NewJob{Body: []byte("delayed 5s"), Delay: 5 * time.Second})
	next("a delayed job", 5*time.Second, "na", "na")
	b := e.reserved(e.q2, "nb", queue.NewJob{Body: []byte("TTR 3s"), TTR: 3 * time.Second})
	next("a reservation ending", 3*time.Second, "nb", "na", "nb")
	c := e.putPri("nc", 0, "in a paused tube")
	e.ok("PauseTube", e.q.PauseTube(e.ctx, "nc", 2*time.Second))
	next("a pause ending", 2*time.Second, "nc", "na", "nb", "nc")
	next("only the delayed job's tube", 5*time.Second, "na", "na")
	next("only the reservation's tube", 3*time.Second, "nb", "nb")

	e.advance(1500 * time.Millisecond)
	next("1.5s later", 500*time.Millisecond, "nc", "na", "nb", "nc")
	e.advance(500 * time.Millisecond)
	e.reserveWant(e.q, c, "na", "nb", "nc") // t = 2s
	next("after the pause", time.Second, "nb", "na", "nb")
	e.advance(time.Second)
	e.reserveWant(e.q, b, "na", "nb") // t = 3s: b timed out
	next("b reserved again", 2*time.Second, "na", "na")
	e.advance(2 * time.Second)
	e.reserveWant(e.q, a, "na") // t = 5s
	// Reservations of the asking owner count too: b's (reserved at 3s, TTR
	// 3s) ends first.
	next("everything reserved", time.Second, "nb", "na", "nb", "nc")
	errs, err := e.q.DeleteMany(e.ctx, []queue.ID{a, b, c})
	e.ok("DeleteMany", err)
	if !errsMatch(errs, make([]error, 3)) {
		t.Fatalf("DeleteMany: %v", errs)
	}
	next("everything deleted", -1, "", "na", "nb", "nc")
}

// testStoreReserveDelete: Store.Reserve deletes req.Delete first, with one
// outcome per ID, then reserves.
func testStoreReserveDelete(t *testing.T, s *suite) {
	e := s.env(t)
	owner := e.q.Owner()
	j1 := e.putPri("rd", 0, "j1")
	j2 := e.putPri("rd", 1, "j2")
	j3 := e.putPri("rd", 2, "j3")
	j4 := e.putPri("rd", 3, "j4")
	e.reserveWant(e.q, j1, "rd")
	e.reserveJob(e.q2, j4)
	del := []queue.ID{j1, e.unknownID(), j4, j2}
	res, err := e.store.Reserve(e.ctx, queue.ReserveRequest{Owner: owner, Tubes: []string{"rd"}, Max: 1, Delete: del})
	e.ok("Store.Reserve with Delete", err)
	if want := []error{nil, queue.ErrNotFound, queue.ErrReserved, nil}; !errsMatch(res.Deleted, want) {
		t.Errorf("Deleted = %v, want %v", res.Deleted, want)
	}
	if diff := gocmp.Diff([]queue.ID{j3}, ids(res.Jobs)); diff != "" {
		t.Errorf("reserved after the deletes (-want +got):\n%s", diff)
	}
	e.wantGone(j1)
	e.wantGone(j2)
	e.wantState(j3, queue.Reserved)
	e.wantState(j4, queue.Reserved)
	if ts := e.statsTube("rd"); ts.Deletes != 2 || ts.Reserved != 2 || ts.Ready != 0 {
		t.Errorf("StatsTube: %+v, want 2 deletes, 2 reserved", ts)
	}
	wantErr(t, "Release by another owner of the job reserved with Delete", e.q2.Release(e.ctx, j3, 0, 0), queue.ErrNotReserved)

	// Nothing left to reserve: the delete still happens.
	res, err = e.store.Reserve(e.ctx, queue.ReserveRequest{Owner: owner, Tubes: []string{"rd"}, Max: 3, Delete: []queue.ID{j3}})
	e.ok("Store.Reserve with Delete and nothing ready", err)
	if !errsMatch(res.Deleted, []error{nil}) || len(res.Jobs) != 0 {
		t.Errorf("Store.Reserve = jobs %v, deleted %v; want none, [nil]", ids(res.Jobs), res.Deleted)
	}
	e.wantGone(j3)
	if res.Next != queue.DefaultTTR || res.NextTube != "rd" {
		t.Errorf("Next = %v in %q, want j4's TTR %v in rd", res.Next, res.NextTube, queue.DefaultTTR)
	}
}

// reserveSpy wraps a store and closes waiting once Store.Reserve has come
// back empty twice: the Queue's first try, and its try after it registered
// as a waiter. A change made after that must wake the waiter.
type reserveSpy struct {
	queue.Store
	mu      sync.Mutex
	empty   int
	waiting chan struct{}
}

func (s *reserveSpy) Reserve(ctx context.Context, req queue.ReserveRequest) (queue.ReserveResult, error) {
	res, err := s.Store.Reserve(ctx, req)
	if err == nil && len(res.Jobs) == 0 {
		s.mu.Lock()
		s.empty++
		if s.empty == 2 {
			close(s.waiting)
		}
		s.mu.Unlock()
	}
	return res, err
}

// waiter is a Reserve running in its own goroutine through a Queue over a
// reserveSpy.
type waiter struct {
	spy    *reserveSpy
	cancel context.CancelFunc
	done   chan waitResult
}

type waitResult struct {
	job queue.Job
	err error
}

// startWaiter starts a blocking Reserve of tubes and returns once it waits.
// With a store that notifies, the Queue's poll interval is an hour, so only
// the store's wake-ups can end the wait; without, the Queue polls often.
func (e *env) startWaiter(tubes ...string) *waiter {
	e.t.Helper()
	spy := &reserveSpy{Store: e.store, waiting: make(chan struct{})}
	opts := &queue.Options{PollInterval: 10 * time.Millisecond}
	if _, ok := e.store.(queue.Notifier); ok {
		opts.PollInterval = time.Hour
	}
	q, err := queue.New(keepNotifier(spy, e.store), opts)
	if err != nil {
		e.t.Fatalf("queue.New: %v", err)
	}
	ctx, cancel := context.WithTimeout(e.ctx, waitLimit)
	w := &waiter{spy: spy, cancel: cancel, done: make(chan waitResult, 1)}
	e.t.Cleanup(func() {
		cancel()
		<-w.done
		q.Close()
	})
	go func() {
		j, err := q.Reserve(ctx, queue.ReserveOptions{Tubes: tubes})
		w.done <- waitResult{j, err}
	}()
	select {
	case <-spy.waiting:
	case r := <-w.done:
		w.done <- r
		e.t.Fatalf("Reserve(%q) returned before it waited: job %d, %v", tubes, r.job.ID, r.err)
	}
	return w
}

// result waits for the waiter's Reserve to return (within waitLimit).
func (w *waiter) result() waitResult {
	r := <-w.done
	w.done <- r // for the cleanup
	return r
}

// wantJob waits for the waiter's Reserve and fails t unless it returned
// job id; by says what was to wake it.
func (w *waiter) wantJob(t *testing.T, id queue.ID, by string) {
	t.Helper()
	r := w.result()
	if r.err != nil {
		t.Fatalf("waiting Reserve: %v (not woken by %s)", r.err, by)
	}
	if r.job.ID != id {
		t.Fatalf("waiting Reserve got job %d, want %d", r.job.ID, id)
	}
}

// testBlockingReserve: a waiting Reserve is woken by what another goroutine
// does: a put, a release, a kick, an abandon, a pause ended early.
func testBlockingReserve(t *testing.T, s *suite) {
	for _, c := range []struct {
		name  string
		setup func(e *env) queue.ID              // before the reserver waits
		act   func(e *env, id queue.ID) queue.ID // wakes it; returns the job it should get
	}{
		{"Put", func(e *env) queue.ID { return 0 }, func(e *env, _ queue.ID) queue.ID {
			return e.putPri("block", 0, "put")
		}},
		{"PutMany", func(e *env) queue.ID { return 0 }, func(e *env, _ queue.ID) queue.ID {
			return e.putMany("block", []queue.NewJob{{Body: []byte("1")}, {Body: []byte("2")}})[0].ID
		}},
		{"Release", func(e *env) queue.ID {
			return e.reserved(e.q2, "block", queue.NewJob{Body: []byte("released")})
		}, func(e *env, id queue.ID) queue.ID {
			e.ok("Release", e.q2.Release(e.ctx, id, 0, 0))
			return id
		}},
		{"Kick", func(e *env) queue.ID { return e.buried(e.q2, "block", 0, "kicked") }, func(e *env, id queue.ID) queue.ID {
			if n, err := e.q.Kick(e.ctx, "block", 1); err != nil || n != 1 {
				e.t.Errorf("Kick = %d, %v", n, err)
			}
			return id
		}},
		{"KickJob", func(e *env) queue.ID {
			return e.put("block", queue.NewJob{Body: []byte("delayed"), Delay: time.Hour})
		}, func(e *env, id queue.ID) queue.ID {
			e.ok("KickJob", e.q.KickJob(e.ctx, id))
			return id
		}},
		{"Abandon", func(e *env) queue.ID {
			id := e.putPri("block", 0, "abandoned")
			e.reserveWant(e.q2, id, "block")
			return id
		}, func(e *env, id queue.ID) queue.ID {
			if n, err := e.q2.Abandon(e.ctx); err != nil || n != 1 {
				e.t.Errorf("Abandon = %d, %v", n, err)
			}
			return id
		}},
		{"PauseTube 0", func(e *env) queue.ID {
			id := e.putPri("block", 0, "paused")
			e.ok("PauseTube", e.q.PauseTube(e.ctx, "block", time.Hour))
			return id
		}, func(e *env, id queue.ID) queue.ID {
			e.ok("PauseTube 0", e.q.PauseTube(e.ctx, "block", 0))
			return id
		}},
		{"Put to the second tube", func(e *env) queue.ID { return 0 }, func(e *env, _ queue.ID) queue.ID {
			return e.putPri("block-2", 0, "second tube")
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := s.env(t)
			id := c.setup(e)
			w := e.startWaiter("block", "block-2")
			want := c.act(e, id)
			w.wantJob(t, want, c.name)
			e.wantState(want, queue.Reserved)
		})
	}
}

// testReserveTimeout: a Reserve with a timeout and nothing ready returns
// ErrTimeout, once the timeout has passed on the Queue's clock.
func testReserveTimeout(t *testing.T, s *suite) {
	e := s.env(t)
	e.put("rt", queue.NewJob{Body: []byte("delayed"), Delay: time.Hour})
	e.putPri("rt-paused", 0, "paused")
	e.ok("PauseTube", e.q.PauseTube(e.ctx, "rt-paused", time.Hour))
	e.reserved(e.q2, "rt", queue.NewJob{Body: []byte("reserved")})
	for _, timeout := range []time.Duration{-1, 50 * time.Millisecond} {
		var j queue.Job
		err := e.timedOut(timeout, func() (err error) {
			j, err = e.q.Reserve(e.ctx, queue.ReserveOptions{Tubes: []string{"rt", "rt-paused", "rt-empty"}, Timeout: timeout})
			return err
		})
		if !errors.Is(err, queue.ErrTimeout) {
			t.Errorf("Reserve with Timeout %v = job %d, %v; want ErrTimeout", timeout, j.ID, err)
		}
		var jobs []queue.Job
		err = e.timedOut(timeout, func() (err error) {
			jobs, err = e.q.ReserveN(e.ctx, 5, queue.ReserveOptions{Tubes: []string{"rt"}, Timeout: timeout})
			return err
		})
		if !errors.Is(err, queue.ErrTimeout) {
			t.Errorf("ReserveN with Timeout %v = jobs %v, %v; want ErrTimeout", timeout, ids(jobs), err)
		}
	}
	if st := e.stats(); st.Reserved != 1 {
		t.Errorf("Stats.Reserved = %d after timed-out reserves, want 1", st.Reserved)
	}
}

// timedOut runs reserve, a reserve through e.q with Timeout timeout, and
// returns its error. A positive timeout runs out on the suite's clock,
// moved on by timeout once the reserve sleeps on it: two timers are armed
// then, the Queue's one timer (its poll, and the due time the store
// named) and the reserve's own deadline.
func (e *env) timedOut(timeout time.Duration, reserve func() error) error {
	e.t.Helper()
	if timeout <= 0 {
		return reserve()
	}
	done := make(chan error, 1)
	go func() { done <- reserve() }()
	ctx, cancel := context.WithTimeout(e.ctx, waitLimit)
	defer cancel()
	if err := e.clock.WaitArmed(ctx, 2); err != nil {
		e.t.Fatalf("the reserve with Timeout %v did not wait on the clock: %v", timeout, err)
	}
	e.clock.Advance(timeout)
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		e.t.Fatalf("the reserve with Timeout %v waits on after the clock passed it", timeout)
		return nil
	}
}

// testReserveContext: a Reserve whose context ends returns ctx.Err() and
// reserves nothing.
func testReserveContext(t *testing.T, s *suite) {
	t.Run("cancelled before", func(t *testing.T) {
		e := s.env(t)
		ctx, cancel := context.WithCancel(e.ctx)
		cancel()
		_, err := e.q.Reserve(ctx, queue.ReserveOptions{Tubes: []string{"rc"}})
		wantErr(t, "Reserve with a cancelled context", err, context.Canceled)
		id := e.putPri("rc", 0, "after")
		if j := e.reserveWant(e.q, id, "rc"); j.Reserves != 1 {
			t.Errorf("Reserves = %d, want 1", j.Reserves)
		}
	})
	t.Run("cancelled while waiting", func(t *testing.T) {
		e := s.env(t)
		w := e.startWaiter("rc")
		w.cancel()
		r := w.result()
		wantErr(t, "waiting Reserve after cancel", r.err, context.Canceled)
		id := e.putPri("rc", 0, "after")
		if j := e.reserveWant(e.q, id, "rc"); j.Reserves != 1 {
			t.Errorf("Reserves = %d, want 1", j.Reserves)
		}
	})
	t.Run("deadline", func(t *testing.T) {
		e := s.env(t)
		ctx, cancel := context.WithTimeout(e.ctx, 50*time.Millisecond)
		defer cancel()
		_, err := e.q.Reserve(ctx, queue.ReserveOptions{Tubes: []string{"rc"}})
		wantErr(t, "Reserve past its context's deadline", err, context.DeadlineExceeded)
	})
}

// testNotifier: a store that implements queue.Notifier calls wake after a
// put made once Listen has returned (for a delayed job, at once or when it
// falls due), and not after stop.
func testNotifier(t *testing.T, s *suite) {
	e := s.env(t)
	n, ok := e.raw.(queue.Notifier)
	if !ok {
		t.Skip("the store does not implement queue.Notifier")
	}
	woken := make(chan string, 100)
	stop, err := n.Listen(e.ctx, "nt", func(tube string) {
		select {
		case woken <- tube:
		default:
		}
	})
	e.ok("Listen", err)
	defer stop()
	expect := func(what string, do func()) {
		t.Helper()
		for len(woken) > 0 {
			<-woken
		}
		do()
		timer := time.NewTimer(waitLimit)
		defer timer.Stop()
		for {
			select {
			case tube := <-woken:
				if tube == "nt" {
					return
				}
			case <-timer.C:
				t.Errorf("no wake-up for tube nt after %s", what)
				return
			}
		}
	}
	expect("a put", func() { e.putPri("nt", 0, "ready") })
	expect("a put of a delayed job", func() { e.put("nt", queue.NewJob{Body: []byte("d"), Delay: 200 * time.Millisecond}) })
	id := e.reserved(e.q, "nt", queue.NewJob{Body: []byte("r")})
	expect("a release", func() { e.ok("Release", e.q.Release(e.ctx, id, 0, 0)) })
}

// testConcurrency: concurrent reservers each get distinct jobs, and every
// job is delivered exactly once.
func testConcurrency(t *testing.T, s *suite) {
	const (
		workers = 8
		total   = 500
	)
	e := s.env(t)
	jobs := make([]queue.NewJob, total)
	for i := range jobs {
		jobs[i] = queue.NewJob{Body: []byte(fmt.Sprint("job ", i)), Priority: uint32(i % 7)}
	}
	res := e.putMany("conc", jobs)
	got := make([][]queue.ID, workers)
	var wg sync.WaitGroup
	for w := range workers {
		q := e.q.WithOwner(fmt.Sprint("worker-", w))
		wg.Go(func() {
			opts := queue.ReserveOptions{Tubes: []string{"conc"}, Timeout: -1}
			for range 2 * total {
				var js []queue.Job
				var err error
				if w%2 == 0 {
					var j queue.Job
					j, err = q.Reserve(e.ctx, opts)
					js = []queue.Job{j}
				} else {
					js, err = q.ReserveN(e.ctx, 5, opts)
				}
				if errors.Is(err, queue.ErrTimeout) {
					return
				}
				if err != nil {
					t.Errorf("worker %d: reserve: %v", w, err)
					return
				}
				for _, j := range js {
					got[w] = append(got[w], j.ID)
					if err := q.Delete(e.ctx, j.ID); err != nil {
						t.Errorf("worker %d: Delete(%d) of its own job: %v", w, j.ID, err)
					}
				}
			}
			t.Errorf("worker %d: still reserving after %d tries", w, 2*total)
		})
	}
	wg.Wait()
	seen := map[queue.ID]int{}
	for w, list := range got {
		for _, id := range list {
			if seen[id] > 0 {
				t.Errorf("job %d delivered twice (second time to worker %d)", id, w)
			}
			seen[id]++
		}
	}
	for _, r := range res {
		if seen[r.ID] == 0 {
			t.Errorf("job %d never delivered", r.ID)
		}
	}
	if len(seen) != total {
		t.Errorf("%d distinct jobs delivered, want %d", len(seen), total)
	}
	if diff := gocmp.Diff(queue.Stats{TotalJobs: total}, e.stats()); diff != "" {
		t.Errorf("Stats after every job was deleted (-want +got):\n%s", diff)
	}
}
