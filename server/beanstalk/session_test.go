package beanstalk_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/server/beanstalk"
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
