package beanstalk_test

import (
	"context"
	"errors"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/internal/testkit/redistest"
	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/redisstore"
	"github.com/hourglass-io/hourglass/server/beanstalk"
	"github.com/redis/go-redis/v9"
)

// renewals is a Redis store whose session renewals fail while cut is set,
// as they do when Redis does not answer in time; every other call goes
// through.
type renewals struct {
	queue.Store
	mu      sync.Mutex
	cut     bool
	lastOK  time.Time // start of the last renewal that succeeded
	refused time.Time // when the first one failed
}

func (r *renewals) KeepAlive(ctx context.Context, session string, lease time.Duration) error {
	r.mu.Lock()
	cut := r.cut
	r.mu.Unlock()
	if cut {
		return errors.New("renewal cut")
	}
	start := time.Now()
	err := r.Store.(queue.Sessions).KeepAlive(ctx, session, lease)
	if err == nil {
		r.mu.Lock()
		r.lastOK = start
		r.mu.Unlock()
	}
	return err
}

func (r *renewals) EndSession(ctx context.Context, session string) error {
	return r.Store.(queue.Sessions).EndSession(ctx, session)
}

func (r *renewals) Reap(ctx context.Context) (int, error) {
	return r.Store.(queue.Sessions).Reap(ctx)
}

// A server whose session renewals fail stops handing out jobs before its
// lease can lapse, and hands them out again once a renewal succeeds.
func TestSessionUnsureRefusesReserves(t *testing.T) {
	const lease = 900 * time.Millisecond
	rs := &renewals{Store: redisStore(t)}
	_, addr := startServer(t, rs, func(s *beanstalk.Server) { s.SessionLease = lease })
	c := dial(t, addr)
	c.put(60, "j")
	rs.mu.Lock()
	rs.cut = true
	rs.mu.Unlock()
	// Until the server notices, reserves of an empty tube time out; then
	// every reserve is refused, before the lease could lapse.
	c.expect("watch empty", "WATCHING 2\r\n")
	c.expect("ignore default", "WATCHING 1\r\n")
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := c.do("reserve-with-timeout 0")
		if r == "INTERNAL_ERROR\r\n" {
			break
		}
		if r != "TIMED_OUT\r\n" || time.Now().After(deadline) {
			t.Fatalf("reserve while renewals fail: %q", r)
		}
	}
	rs.mu.Lock()
	lastOK := rs.lastOK
	rs.mu.Unlock()
	if lapse := lastOK.Add(lease); !time.Now().Before(lapse) {
		t.Fatalf("reserves refused only %v after the lease could lapse", time.Since(lapse))
	}
	c.expect("watch default", "WATCHING 2\r\n")
	c.expect("reserve-with-timeout 0", "INTERNAL_ERROR\r\n")
	c.expect("reserve-with-timeout 1", "INTERNAL_ERROR\r\n")
	if v := field(t, c.do("stats"), "current-jobs-ready"); v != "1" {
		t.Fatalf("current-jobs-ready %s while the session is unsure, want 1", v)
	}
	rs.mu.Lock()
	rs.cut = false
	rs.mu.Unlock()
	for {
		r := c.do("reserve-with-timeout 0")
		if r != "INTERNAL_ERROR\r\n" {
			c.reservedID(r)
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("reserves still refused after the renewals came back")
		}
	}
}

// A real redis-server stopped (SIGSTOP) for longer than the lease: a
// reserve sent meanwhile is not answered with a job, the job stays in the
// store, and once Redis runs again and a renewal succeeds the job is handed
// out, once.
func TestSessionRedisPaused(t *testing.T) {
	const lease = 600 * time.Millisecond
	rs := redistest.Standalone(t)
	rc := redis.NewClient(&redis.Options{Addr: rs.Addr, MaxRetries: -1})
	t.Cleanup(func() { rc.Close() })
	store, err := redisstore.New(context.Background(), rc, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	_, addr := startServer(t, store, func(s *beanstalk.Server) { s.SessionLease = lease })
	c, o := dial(t, addr), dial(t, addr)
	id := c.put(60, "j")

	if err := syscall.Kill(rs.Pid(), syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	c.send("reserve-with-timeout 0\r\n")
	// The fault lasts two leases: renewals fail for all of it.
	time.Sleep(2 * lease)
	if err := syscall.Kill(rs.Pid(), syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if r := c.read(); r != "INTERNAL_ERROR\r\n" {
		t.Fatalf("a reserve sent while Redis was stopped: %q, want INTERNAL_ERROR", r)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := o.do("reserve-with-timeout 0")
		if r != "INTERNAL_ERROR\r\n" {
			if got := o.reservedID(r); got != id {
				t.Fatalf("reserved job %s, want %s", got, id)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("reserves still refused 10 s after Redis came back")
		}
	}
	c.expect("reserve-with-timeout 0", "TIMED_OUT\r\n")
}
