//go:build unix

package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/internal/beanstalkc"
	"github.com/hourglass-io/hourglass/internal/testkit/redistest"
)

// Groups hold beanstalkd clients of two servers sharing a Redis, which put
// into a group by its tube's name ("mail;a") and reserve the tube ("mail"):
// never more than a group's cap of one group reserved, nor more than the
// tube's cap of the tube and its groups; a silent worker's TTR ending and
// a server dying free the places, and a waiting reserve on the other
// server gets the job. hourglass put --group and tube-limit's group flags
// go through the same names.
func TestTubeGroupsAcrossServers(t *testing.T) {
	rs := redistest.Standalone(t)
	url := "redis://" + rs.Addr + "/0"
	a := startServe(t, nil, "--store", url)
	b := startServe(t, nil, "--store", url)
	envA := []string{"HOURGLASS_HTTP=http://" + a.httpAddr}
	ok(t, envA, "tube-limit", "set", "mail", "--cap", "2", "--group-cap", "1")
	if out := ok(t, envA, "tube-limit", "get", "mail"); out != "mail\tcap=2;group:cap=1\n" {
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
		if _, err := c.Watch(ctx, "mail"); err != nil {
			t.Fatal(err)
		}
		return c
	}
	ca, cb := dial(a), dial(b)
	put := func(tube string, ttr time.Duration) uint64 {
		t.Helper()
		if err := ca.Use(ctx, tube); err != nil {
			t.Fatal(err)
		}
		id, err := ca.Put(ctx, []byte(tube), 0, 0, ttr)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	a1 := put("mail;a", 2*time.Second)
	put("mail;a", time.Hour) // a2: waits behind a1 in group a throughout
	b1 := put("mail;b", time.Hour)

	if j, err := ca.Reserve(ctx); err != nil || j.ID != a1 {
		t.Fatalf("reserve through a: %v, %v; want job %d", j, err, a1)
	}
	// Group b's turn: a is at its group's cap.
	if j, err := cb.Reserve(ctx); err != nil || j.ID != b1 {
		t.Fatalf("reserve through b: %v, %v; want job %d of group b", j, err, b1)
	}
	// The tube's cap of 2 holds everyone back; a2 waits.
	if j, err := ca.ReserveWithTimeout(ctx, 0); !errors.Is(err, beanstalkc.ErrTimedOut) {
		t.Fatalf("reserve through a at the caps: job %d, %v; want TIMED_OUT", j.ID, err)
	}
	if err := cb.Delete(ctx, b1); err != nil {
		t.Fatal(err)
	}
	// A place of the tube is free, but group a's is not: a1's TTR ends
	// (a's client falls silent), and b's waiting client gets a1 back.
	if j, err := cb.ReserveWithTimeout(ctx, 30*time.Second); err != nil || j.ID != a1 {
		t.Fatalf("waiting reserve through b: %v, %v; want job %d once its TTR ended", j, err, a1)
	}
	// b dies holding a1: once its session lapses, a's waiting client gets
	// a1, not a2 — nothing jumps the queue within the group.
	b.kill()
	if j, err := ca.ReserveWithTimeout(ctx, 30*time.Second); err != nil || j.ID != a1 {
		t.Fatalf("waiting reserve through a after b died: %v, %v; want job %d", j, err, a1)
	}
	// put --group reaches the tube's reserve; a2 still waits for its group.
	out := ok(t, nil, "put", "--addr", a.addr, "--tube", "mail", "--group", "c", "from the CLI")
	if !strings.Contains(out, "mail;c") {
		t.Errorf("put --group printed %q, want the group's tube", out)
	}
	j, err := ca.ReserveWithTimeout(ctx, 5*time.Second)
	if err != nil || string(j.Body) != "from the CLI" {
		t.Fatalf("reserve of the tube after put --group: %v, %v", j, err)
	}
	st := kv(t, ok(t, envA, "api", "GET", "/v1/tubes/mail"))
	// Groups a and c hold jobs; b holds none, but a's client still uses
	// its tube, so it exists.
	if st["groups"] != "3" || st["group_reserved"] != "2" || st["group_ready"] != "1" {
		t.Errorf("tube stats: %v; want 3 groups, 2 reserved, 1 ready", st)
	}
	expect(t, envA, 2, []string{"put", "--addr", a.addr, "--tube", "mail", "--group", "no spaces", "x"}, "--group")
}
