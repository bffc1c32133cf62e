//go:build unix

package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/internal/beanstalkc"
	"github.com/hourglass-io/hourglass/internal/testkit/redistest"
)

// A tube's cap holds beanstalkd clients of two servers sharing a Redis:
// never more than the cap reserved, whichever server they use. The slot
// comes back when a silent worker's TTR ends and when the server holding a
// reservation dies; a waiting reserve on the other server gets the job.
// hourglass tube-limit reads, lists and clears the limits serve set.
func TestTubeLimitsAcrossServers(t *testing.T) {
	rs := redistest.Standalone(t)
	url := "redis://" + rs.Addr + "/0"
	a := startServe(t, nil, "--store", url, "--tube-limit", "capped=cap=1")
	file := filepath.Join(t.TempDir(), "limits")
	if err := os.WriteFile(file, []byte("# the same limits, from a file\ncapped = cap=1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	b := startServe(t, nil, "--store", url, "--tube-limits-file", file)
	envA := []string{"HOURGLASS_HTTP=http://" + a.httpAddr}
	if out := ok(t, envA, "tube-limit", "get", "capped"); out != "capped\tcap=1\n" {
		t.Errorf("tube-limit get printed %q", out)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dial := func(p *serveProc) *beanstalkc.Conn {
		c, err := beanstalkc.Dial(ctx, p.addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		for _, step := range []error{c.Use(ctx, "capped"), func() error { _, err := c.Watch(ctx, "capped"); return err }()} {
			if step != nil {
				t.Fatal(step)
			}
		}
		return c
	}
	ca, cb := dial(a), dial(b)
	j1, err := ca.Put(ctx, []byte("short TTR"), 0, 0, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	j2, _ := ca.Put(ctx, []byte("long TTR"), 0, 0, time.Hour)
	j3, _ := ca.Put(ctx, []byte("third"), 0, 0, time.Hour)

	if j, err := ca.Reserve(ctx); err != nil || j.ID != j1 {
		t.Fatalf("reserve through a: %v, %v; want job %d", j, err, j1)
	}
	// The cap holds b's client back while a's holds j1.
	if j, err := cb.ReserveWithTimeout(ctx, 0); !errors.Is(err, beanstalkc.ErrTimedOut) {
		t.Fatalf("reserve through b at the cap: job %d, %v; want TIMED_OUT", j.ID, err)
	}
	// a's client falls silent: j1's TTR ends, and b's waiting client gets it.
	if j, err := cb.ReserveWithTimeout(ctx, 30*time.Second); err != nil || j.ID != j1 {
		t.Fatalf("waiting reserve through b: %v, %v; want job %d once its TTR ended", j, err, j1)
	}
	if err := cb.Delete(ctx, j1); err != nil {
		t.Fatal(err)
	}
	if j, err := cb.Reserve(ctx); err != nil || j.ID != j2 {
		t.Fatalf("reserve through b after a delete: %v, %v; want job %d", j, err, j2)
	}
	if j, err := ca.ReserveWithTimeout(ctx, 0); !errors.Is(err, beanstalkc.ErrTimedOut) {
		t.Fatalf("reserve through a at the cap: job %d, %v; want TIMED_OUT", j.ID, err)
	}
	// b dies holding j2: once its session lapses, the place is free and a's
	// waiting client gets j2, not j3 — nothing jumps the queue.
	b.kill()
	if j, err := ca.ReserveWithTimeout(ctx, 30*time.Second); err != nil || j.ID != j2 {
		t.Fatalf("waiting reserve through a after b died: %v, %v; want job %d", j, err, j2)
	}
	if st := kv(t, ok(t, envA, "api", "GET", "/v1/tubes/capped")); st["limit_holds"] == "0" || st["limit_holds"] == "" {
		t.Errorf("tube stats after held reserves: %v", st)
	}

	if out := ok(t, envA, "tube-limit", "list"); out != "capped\tcap=1\n" {
		t.Errorf("tube-limit list printed %q", out)
	}
	ok(t, envA, "tube-limit", "set", "capped", "--rate", "10/1s,burst=2", "--cap", "3")
	if out := ok(t, envA, "tube-limit", "get", "capped"); out != "capped\t10/1s,burst=2;cap=3\n" {
		t.Errorf("tube-limit get after set printed %q", out)
	}
	if out := ok(t, envA, "tube-limit", "clear", "capped"); !strings.Contains(out, "cleared") {
		t.Errorf("tube-limit clear printed %q", out)
	}
	if j, err := ca.ReserveWithTimeout(ctx, 5*time.Second); err != nil || j.ID != j3 {
		t.Fatalf("reserve through a with the limits cleared: %v, %v; want job %d", j, err, j3)
	}
	expect(t, envA, 2, []string{"tube-limit", "set", "capped"}, "needs --rate, --cap, --group-rate or --group-cap")
	expect(t, envA, 2, []string{"tube-limit", "set", "capped", "--cap", "-1"}, "cap")
}
