package faulttest

import (
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/internal/testkit/redistest"
	"github.com/hourglass-io/hourglass/lock"
	"github.com/hourglass-io/hourglass/redisstore"
	"github.com/redis/go-redis/v9"
)

// A lock holder whose process is stopped (SIGSTOP) past its lease, renewer
// and all: another process obtains the lock once the lease has run out,
// with a larger fence; when the holder runs again it learns that it lost
// the lock, and its release changes nothing.
func TestLockHolderStopped(t *testing.T) {
	ctx := deadline(t, 60*time.Second)
	srv := redistest.Standalone(t)
	const ttl = time.Second
	holder := startChild(t, "lockholder", "HG_ADDR="+srv.Addr, "HG_NAME=report", "HG_TTL="+ttl.String())
	fence, err := strconv.ParseUint(holder.next(t, "fence", 30*time.Second), 10, 64)
	if err != nil {
		t.Fatal(err)
	}

	c := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer c.Close()
	s, err := redisstore.New(ctx, c, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cl, err := lock.New(s.Locks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.TryObtain(ctx, "report", nil); err == nil {
		t.Fatal("obtained a lock its holder renews")
	}

	if err := holder.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	l, err := cl.Obtain(ctx, "report", &lock.ObtainOptions{TTL: 30 * time.Second})
	if err != nil {
		t.Fatalf("the lock of a stopped holder never came free: %v", err)
	}
	waited := time.Since(stopped)
	if l.Fence() <= fence {
		t.Fatalf("fence %d after the stopped holder's %d", l.Fence(), fence)
	}
	t.Logf("obtained %v after the holder stopped (lease %v), fence %d after %d", waited.Round(time.Millisecond), ttl, l.Fence(), fence)

	if err := holder.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	cause := holder.next(t, "lost", 10*time.Second)
	if !strings.Contains(cause, "lease") && !strings.Contains(cause, "not held") {
		t.Errorf("the holder lost the lock for %q", cause)
	}
	t.Logf("the holder, running again, lost the lock: %s", cause)
	if rel := holder.next(t, "release", 10*time.Second); !strings.HasPrefix(rel, "true") {
		t.Errorf("the old holder's release answered %q, want not held", rel)
	}
	holder.wait(t, 10*time.Second)
	if left, err := l.TTL(ctx); err != nil || left <= 0 {
		t.Fatalf("the new holder's lease after the old one woke: %v %v", left, err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatalf("the new holder's release: %v", err)
	}
}
