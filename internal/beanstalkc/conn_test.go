package beanstalkc_test

import (
	"context"
	"errors"
	"io"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hourglass-io/hourglass/internal/beanstalkc"
	"github.com/hourglass-io/hourglass/memstore"
	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/server/beanstalk"
)

// startServer serves the beanstalkd protocol over an in-memory store on
// 127.0.0.1 until the test ends, and returns the server and its address.
func startServer(t *testing.T, opts *queue.Options) (*beanstalk.Server, string) {
	t.Helper()
	store, err := memstore.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	q, err := queue.New(store, opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := &beanstalk.Server{Queue: q}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if err := <-served; !errors.Is(err, beanstalk.ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
		q.Close()
		store.Close()
	})
	return srv, l.Addr().String()
}

// dial connects to addr; the connection is closed when the test ends.
func dial(t *testing.T, addr string) *beanstalkc.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := beanstalkc.Dial(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// testCtx is bounded so that a hung server fails the test rather than
// hanging it.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// must returns what a call returned, failing the test if it failed:
// must(c.Stats(ctx))(t).
func must[T any](v T, err error) func(t *testing.T) T {
	return func(t *testing.T) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func check(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func wantErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: got error %v, want %v", what, err, want)
	}
}

func TestLifecycle(t *testing.T) {
	_, addr := startServer(t, nil)
	ctx := testCtx(t)
	c := dial(t, addr)

	check(t, c.Use(ctx, "jobs"))
	if got := must(c.ListTubeUsed(ctx))(t); got != "jobs" {
		t.Errorf("ListTubeUsed = %q, want jobs", got)
	}
	id := must(c.Put(ctx, []byte("hello"), 10, 0, time.Minute))(t)
	later := must(c.Put(ctx, []byte("later"), 10, time.Hour, time.Minute))(t)
	empty := must(c.Put(ctx, nil, 10, 0, 1500*time.Millisecond))(t) // TTR rounded up to 2 s
	ts := must(c.StatsTube(ctx, "jobs"))(t)
	for k, want := range map[string]int64{"total-jobs": 3, "current-jobs-ready": 2, "current-jobs-delayed": 1} {
		if n, ok := ts.Int(k); !ok || n != want {
			t.Errorf("stats-tube %s = %d, %v; want %d", k, n, ok, want)
		}
	}

	if n := must(c.Watch(ctx, "jobs"))(t); n != 2 {
		t.Errorf("Watch = %d, want 2", n)
	}
	if n := must(c.Ignore(ctx, "default"))(t); n != 1 {
		t.Errorf("Ignore = %d, want 1", n)
	}
	_, err := c.Ignore(ctx, "jobs")
	wantErr(t, "Ignore of the only watched tube", err, beanstalkc.ErrNotIgnored)
	if got := must(c.ListTubesWatched(ctx))(t); !slices.Equal(got, []string{"jobs"}) {
		t.Errorf("ListTubesWatched = %q", got)
	}

	j := must(c.ReserveWithTimeout(ctx, 5*time.Second))(t)
	if diff := cmp.Diff(beanstalkc.Job{ID: id, Body: []byte("hello")}, j); diff != "" {
		t.Errorf("ReserveWithTimeout (-want +got):\n%s", diff)
	}
	st := must(c.StatsJob(ctx, id))(t)
	for k, want := range map[string]string{"tube": "jobs", "state": "reserved", "pri": "10", "ttr": "60", "reserves": "1"} {
		if got, _ := st.Get(k); got != want {
			t.Errorf("StatsJob %s = %q, want %q", k, got, want)
		}
	}
	check(t, c.Touch(ctx, id))
	check(t, c.Release(ctx, id, 5, 0))
	if j := must(c.PeekReady(ctx))(t); j.ID != id {
		t.Errorf("PeekReady = %d, want %d", j.ID, id)
	}
	j = must(c.Reserve(ctx))(t)
	if j.ID != id {
		t.Fatalf("Reserve = %d, want %d (priority 5 first)", j.ID, id)
	}
	check(t, c.Bury(ctx, id, 1))
	if j := must(c.PeekBuried(ctx))(t); j.ID != id {
		t.Errorf("PeekBuried = %d, want %d", j.ID, id)
	}
	if j := must(c.PeekDelayed(ctx))(t); j.ID != later || string(j.Body) != "later" {
		t.Errorf("PeekDelayed = %d %q, want %d later", j.ID, j.Body, later)
	}
	if n := must(c.Kick(ctx, 10))(t); n != 1 {
		t.Errorf("Kick = %d, want 1 (the buried job)", n)
	}
	check(t, c.KickJob(ctx, later))
	wantErr(t, "KickJob of a ready job", c.KickJob(ctx, later), beanstalkc.ErrNotFound)

	j = must(c.ReserveJob(ctx, empty))(t)
	if j.ID != empty || len(j.Body) != 0 || j.Body == nil {
		t.Errorf("ReserveJob = %+v, want job %d with an empty body", j, empty)
	}
	if ttr, _ := must(c.StatsJob(ctx, empty))(t).Int("ttr"); ttr != 2 {
		t.Errorf("ttr = %d, want 2 (1.5 s rounded up)", ttr)
	}
	for _, id := range []uint64{id, later, empty} {
		check(t, c.Delete(ctx, id))
	}
	wantErr(t, "Delete again", c.Delete(ctx, id), beanstalkc.ErrNotFound)
	_, err = c.Peek(ctx, id)
	wantErr(t, "Peek of a deleted job", err, beanstalkc.ErrNotFound)
	_, err = c.ReserveWithTimeout(ctx, 0)
	wantErr(t, "ReserveWithTimeout(0) of an empty tube", err, beanstalkc.ErrTimedOut)

	// The connection is still usable after error replies.
	ts = must(c.StatsTube(ctx, "jobs"))(t)
	if name, _ := ts.Get("name"); name != "jobs" {
		t.Errorf("stats-tube name = %q", name)
	}
	check(t, c.PauseTube(ctx, "jobs", time.Second))
	_, err = c.StatsTube(ctx, "nosuch")
	wantErr(t, "StatsTube of an unknown tube", err, beanstalkc.ErrNotFound)
	if tubes := must(c.ListTubes(ctx))(t); !slices.Equal(tubes, []string{"default", "jobs"}) {
		t.Errorf("ListTubes = %q", tubes)
	}
}

func TestStats(t *testing.T) {
	_, addr := startServer(t, nil)
	ctx := testCtx(t)
	c := dial(t, addr)
	st := must(c.Stats(ctx))(t)
	if len(st) < 40 || st[0].Key != "current-jobs-urgent" {
		t.Fatalf("Stats: %d lines starting with %+v", len(st), st[:1])
	}
	if v, _ := st.Get("version"); v != beanstalk.DefaultVersion {
		t.Errorf("version = %q, want %q unquoted", v, beanstalk.DefaultVersion)
	}
	if v, _ := st.Get("draining"); v != "false" {
		t.Errorf("draining = %q", v)
	}
	if _, ok := st.Int("hostname"); ok {
		t.Error("Int(hostname) succeeded")
	}
	if _, ok := st.Get("nosuch"); ok {
		t.Error("Get(nosuch) found something")
	}
}

func TestServerErrors(t *testing.T) {
	srv, addr := startServer(t, &queue.Options{MaxJobSize: 10})
	ctx := testCtx(t)
	c := dial(t, addr)

	_, err := c.Put(ctx, make([]byte, 11), 0, 0, time.Minute)
	wantErr(t, "Put of 11 bytes", err, beanstalkc.ErrJobTooBig)
	check(t, c.Use(ctx, "ok"))

	srv.Drain()
	_, err = c.Put(ctx, []byte("x"), 0, 0, time.Minute)
	wantErr(t, "Put while draining", err, beanstalkc.ErrDraining)

	// Arguments that cannot be sent are refused before anything is sent.
	wantErr(t, "Use with a space", c.Use(ctx, "a b"), beanstalkc.ErrInvalid)
	_, err = c.Put(ctx, nil, 0, -time.Second, time.Minute)
	wantErr(t, "Put with a negative delay", err, beanstalkc.ErrInvalid)
	_, err = c.Kick(ctx, -1)
	wantErr(t, "Kick(-1)", err, beanstalkc.ErrInvalid)
	// A name the server refuses.
	wantErr(t, "Use of a bad name", c.Use(ctx, "-bad"), beanstalkc.ErrBadFormat)
	if got := must(c.ListTubeUsed(ctx))(t); got != "ok" {
		t.Errorf("after errors, ListTubeUsed = %q; the connection is out of step", got)
	}
}

// A reserve that waits ends when its context does; the connection is then
// broken, and says so.
func TestReserveCancel(t *testing.T) {
	_, addr := startServer(t, nil)
	c := dial(t, addr)
	ctx, cancel := context.WithCancel(testCtx(t))
	errc := make(chan error, 1)
	go func() {
		_, err := c.Reserve(ctx)
		errc <- err
	}()
	// Wait until the server has the reserve waiting, then cancel it.
	other := dial(t, addr)
	waitFor(t, func() bool {
		st := must(other.Stats(testCtx(t)))(t)
		n, _ := st.Int("current-waiting")
		return n == 1
	})
	cancel()
	select {
	case err := <-errc:
		wantErr(t, "Reserve after cancel", err, context.Canceled)
	case <-time.After(10 * time.Second):
		t.Fatal("Reserve did not end within 10 s of its context")
	}
	_, err := c.Stats(testCtx(t))
	wantErr(t, "Stats on the interrupted connection", err, beanstalkc.ErrBroken)

	// A deadline ends a wait with DeadlineExceeded.
	d := dial(t, addr)
	dctx, cancel := context.WithTimeout(testCtx(t), 100*time.Millisecond)
	defer cancel()
	_, err = d.Reserve(dctx)
	wantErr(t, "Reserve past its deadline", err, context.DeadlineExceeded)
}

// waitFor polls cond until it holds, failing the test after 10 s. The
// server offers no event to wait on; each poll is a round trip.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10 s")
		}
	}
}

func TestClose(t *testing.T) {
	_, addr := startServer(t, nil)
	ctx := testCtx(t)
	c := dial(t, addr)
	check(t, c.Close())
	check(t, c.Close())
	_, err := c.Stats(ctx)
	wantErr(t, "Stats after Close", err, beanstalkc.ErrClosed)
}

// fakeServer answers each command line with the next of replies, and then
// closes the connection.
func fakeServer(t *testing.T, replies ...string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		nc, err := l.Accept()
		if err != nil {
			return
		}
		defer nc.Close()
		buf := make([]byte, 4096)
		for _, r := range replies {
			if _, err := nc.Read(buf); err != nil {
				return
			}
			if _, err := io.WriteString(nc, r); err != nil {
				return
			}
		}
	}()
	return l.Addr().String()
}

func TestUnexpectedReplies(t *testing.T) {
	for _, tc := range []struct {
		name  string
		reply string
		run   func(context.Context, *beanstalkc.Conn) error
		want  error
	}{
		{"garbage", "WHAT\r\n", func(ctx context.Context, c *beanstalkc.Conn) error {
			return c.Delete(ctx, 1)
		}, beanstalkc.ErrUnexpectedReply},
		{"no CRLF", "DELETED\n", func(ctx context.Context, c *beanstalkc.Conn) error {
			return c.Delete(ctx, 1)
		}, beanstalkc.ErrUnexpectedReply},
		{"short body", "FOUND 1 10\r\nabc", func(ctx context.Context, c *beanstalkc.Conn) error {
			_, err := c.Peek(ctx, 1)
			return err
		}, io.ErrUnexpectedEOF},
		{"body without CRLF", "FOUND 1 3\r\nabcde", func(ctx context.Context, c *beanstalkc.Conn) error {
			_, err := c.Peek(ctx, 1)
			return err
		}, beanstalkc.ErrUnexpectedReply},
		{"bad YAML", "OK 5\r\nhello\r\n", func(ctx context.Context, c *beanstalkc.Conn) error {
			_, err := c.Stats(ctx)
			return err
		}, beanstalkc.ErrUnexpectedReply},
		{"huge body", "FOUND 1 99999999999\r\n", func(ctx context.Context, c *beanstalkc.Conn) error {
			_, err := c.Peek(ctx, 1)
			return err
		}, beanstalkc.ErrUnexpectedReply},
		{"buried put", "BURIED 7\r\n", func(ctx context.Context, c *beanstalkc.Conn) error {
			id, err := c.Put(ctx, []byte("x"), 0, 0, time.Second)
			if id != 7 {
				return errors.New("no ID with ErrBuried")
			}
			return err
		}, beanstalkc.ErrBuried},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dial(t, fakeServer(t, tc.reply))
			err := tc.run(testCtx(t), c)
			wantErr(t, tc.name, err, tc.want)
		})
	}
}

func TestParseStats(t *testing.T) {
	st, err := beanstalkc.ParseStats([]byte("---\nid: 42\nversion: \"1.12\"\nname: 'it''s'\r\nempty: \n\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := beanstalkc.Stats{{"id", "42"}, {"version", "1.12"}, {"name", "it's"}, {"empty", ""}}
	if diff := cmp.Diff(want, st); diff != "" {
		t.Errorf("ParseStats (-want +got):\n%s", diff)
	}
	for _, bad := range []string{"id: 1\n", "---\nno colon\n", "---\nkey with space: 1\n"} {
		if _, err := beanstalkc.ParseStats([]byte(bad)); !errors.Is(err, beanstalkc.ErrUnexpectedReply) {
			t.Errorf("ParseStats(%q): %v, want ErrUnexpectedReply", bad, err)
		}
	}
	if !strings.Contains(beanstalkc.ErrNotFound.Error(), "beanstalkc:") {
		t.Error("errors are not prefixed by the package name")
	}
}
