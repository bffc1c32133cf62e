package beanstalk_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/hourglass-io/hourglass/internal/testkit/backendtest"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/memstore"
	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/server/beanstalk"
)

// client is a raw protocol client for tests.
type client struct {
	t  testing.TB
	nc net.Conn
	br *bufio.Reader
}

func dial(t testing.TB, addr string) *client {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &client{t: t, nc: nc, br: bufio.NewReader(nc)}
}

func (c *client) send(s string) {
	c.t.Helper()
	if _, err := io.WriteString(c.nc, s); err != nil {
		c.t.Fatalf("send %q: %v", s, err)
	}
}

// read returns the next reply, data block included.
func (c *client) read() string {
	c.t.Helper()
	r, err := readReply(c.nc, c.br)
	if err != nil {
		c.t.Fatalf("read: %v", err)
	}
	return r
}

// do sends a command line and returns its reply.
func (c *client) do(cmd string) string {
	c.t.Helper()
	c.send(cmd + "\r\n")
	return c.read()
}

// expect sends a command line and checks its reply.
func (c *client) expect(cmd, want string) {
	c.t.Helper()
	if got := c.do(cmd); got != want {
		c.t.Fatalf("%s: got %q, want %q", cmd, got, want)
	}
}

// put puts a job in the used tube and returns its ID.
func (c *client) put(ttr int, body string) string {
	c.t.Helper()
	r := c.do(fmt.Sprintf("put 0 0 %d %d\r\n%s", ttr, len(body), body))
	id, ok := strings.CutPrefix(r, "INSERTED ")
	if !ok {
		c.t.Fatalf("put: %q", r)
	}
	return strings.TrimSuffix(id, "\r\n")
}

// reservedID returns the ID of a RESERVED reply.
func (c *client) reservedID(r string) string {
	c.t.Helper()
	f := strings.Fields(r)
	if len(f) < 3 || f[0] != "RESERVED" {
		c.t.Fatalf("want RESERVED, got %q", r)
	}
	return f[1]
}

// expectClosed waits for the server to close the connection.
func (c *client) expectClosed() {
	c.t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(replyTimeout))
	rest, err := io.ReadAll(c.br)
	if err != nil {
		c.t.Fatalf("connection not closed: %v", err)
	}
	if len(rest) > 0 {
		c.t.Fatalf("got %q before the connection closed", rest)
	}
}

// field returns the value of a key of a YAML reply.
func field(t testing.TB, yaml, key string) string {
	t.Helper()
	for _, l := range strings.Split(yaml, "\n") {
		if v, ok := strings.CutPrefix(l, key+": "); ok {
			return v
		}
	}
	t.Fatalf("no %q in %q", key, yaml)
	return ""
}

func forEachBackend(t *testing.T, f func(t *testing.T, b backend)) {
	for _, b := range backends {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			f(t, b)
		})
	}
}

func TestDeadlineSoonWakesWaitingReserve(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		_, addr := startServer(t, b.Open(t), nil)
		c := dial(t, addr)
		id := c.put(3, "a")
		c.reservedID(c.do("reserve"))
		// Nothing is ready: the reserve waits until a second before the
		// end of the reservation, which is then still ours.
		start := time.Now()
		c.expect("reserve", "DEADLINE_SOON\r\n")
		if waited := time.Since(start); waited < time.Second {
			t.Errorf("DEADLINE_SOON after %v, want about 2s (TTR 3s less the 1s margin)", waited)
		}
		c.expect("touch "+id, "TOUCHED\r\n")
		// A touch starts a fresh TTR: not soon any more.
		c.expect("reserve-with-timeout 0", "TIMED_OUT\r\n")
		c.expect("delete "+id, "DELETED\r\n")
	})
}

func TestReservationExpires(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		_, addr := startServer(t, b.Open(t), nil)
		a, o := dial(t, addr), dial(t, addr)
		id := a.put(1, "x")
		a.reservedID(a.do("reserve"))
		if got := o.reservedID(o.do("reserve-with-timeout 10")); got != id {
			t.Fatalf("reserved %s after the TTR, want %s", got, id)
		}
		st := o.do("stats-job " + id)
		if field(t, st, "timeouts") != "1" || field(t, st, "reserves") != "2" {
			t.Errorf("stats-job after a timeout:\n%s", st)
		}
		a.expect("delete "+id, "NOT_FOUND\r\n")
		a.expect("touch "+id, "NOT_FOUND\r\n")
		o.expect("release "+id+" 0 0", "RELEASED\r\n")
		// Ready again: anyone may delete it, the first holder too.
		a.expect("delete "+id, "DELETED\r\n")
		if v := field(t, o.do("stats"), "job-timeouts"); v != "1" {
			t.Errorf("job-timeouts %s, want 1", v)
		}
	})
}

func TestCloseReturnsJobs(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		_, addr := startServer(t, b.Open(t), nil)
		a := dial(t, addr)
		ids := map[string]bool{}
		for i := range 3 {
			ids[a.put(600, strconv.Itoa(i))] = true
		}
		for range 3 {
			a.reservedID(a.do("reserve"))
		}
		a.nc.Close()
		o := dial(t, addr)
		for range 3 {
			// Long before the 600s TTR.
			id := o.reservedID(o.do("reserve-with-timeout 10"))
			if !ids[id] {
				t.Fatalf("reserved unknown job %s", id)
			}
			delete(ids, id)
			st := o.do("stats-job " + id)
			if field(t, st, "releases") != "0" || field(t, st, "timeouts") != "0" {
				t.Errorf("a returned job counts a release or a timeout:\n%s", st)
			}
		}
		// quit returns them too, before the connection ends.
		o.send("quit\r\n")
		o.expectClosed()
		n := dial(t, addr)
		for range 3 {
			n.reservedID(n.do("reserve-with-timeout 0"))
		}
	})
}

func TestDrain(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		srv, addr := startServer(t, b.Open(t), nil)
		c := dial(t, addr)
		id := c.put(60, "a")
		if v := field(t, c.do("stats"), "draining"); v != "false" {
			t.Errorf("draining: %s", v)
		}
		srv.Drain()
		c.expect("put 0 0 60 1\r\nb", "DRAINING\r\n")
		if v := field(t, c.do("stats"), "draining"); v != "true" {
			t.Errorf("draining: %s", v)
		}
		// Everything else works.
		c.reservedID(c.do("reserve"))
		c.expect("delete "+id, "DELETED\r\n")
	})
}

func TestWaitingCounts(t *testing.T) {
	check := func(t *testing.T, addr string) {
		a, o := dial(t, addr), dial(t, addr)
		a.expect("watch w", "WATCHING 2\r\n")
		a.send("reserve\r\n")
		waitFor(t, o, "current-waiting", "1")
		st := o.do("stats-tube w")
		if field(t, st, "current-waiting") != "1" || field(t, st, "current-watching") != "1" {
			t.Errorf("stats-tube w:\n%s", st)
		}
		if v := field(t, o.do("stats"), "current-workers"); v != "1" {
			t.Errorf("current-workers %s, want 1", v)
		}
		o.expect("use w", "USING w\r\n")
		o.put(60, "j")
		a.reservedID(a.read())
		if v := field(t, o.do("stats-tube w"), "current-waiting"); v != "0" {
			t.Errorf("current-waiting %s after the reserve, want 0", v)
		}
	}
	t.Run("beanstalkd", func(t *testing.T) {
		t.Parallel()
		check(t, startBeanstalkd(t).addr)
	})
	forEachBackend(t, func(t *testing.T, b backend) {
		_, addr := startServer(t, b.Open(t), nil)
		check(t, addr)
	})
}

// waitFor asks c for stats until key has the value want, for at most
// replyTimeout.
func waitFor(t testing.TB, c *client, key, want string) {
	t.Helper()
	deadline := time.Now().Add(replyTimeout)
	for field(t, c.do("stats"), key) != want {
		if time.Now().After(deadline) {
			t.Fatalf("stats %s never became %s:\n%s", key, want, c.do("stats"))
		}
	}
}

func TestIdleTimeout(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		_, addr := startServer(t, b.Open(t), func(s *beanstalk.Server) {
			s.IdleTimeout = 200 * time.Millisecond
		})
		idle, waiting := dial(t, addr), dial(t, addr)
		waiting.expect("list-tube-used", "USING default\r\n")
		// A reserve that waits five times the idle timeout is not idle.
		waiting.send("reserve-with-timeout 1\r\n")
		idle.expectClosed()
		if r := waiting.read(); r != "TIMED_OUT\r\n" {
			t.Fatalf("reserve-with-timeout 1: %q", r)
		}
		waiting.expect("list-tube-used", "USING default\r\n")
	})
}

func TestMaxConns(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		_, addr := startServer(t, b.Open(t), func(s *beanstalk.Server) { s.MaxConns = 2 })
		a, o := dial(t, addr), dial(t, addr)
		a.expect("list-tube-used", "USING default\r\n")
		o.expect("list-tube-used", "USING default\r\n")
		extra := dial(t, addr)
		extra.expectClosed()
		a.send("quit\r\n")
		a.expectClosed()
		n := dial(t, addr)
		n.expect("list-tube-used", "USING default\r\n")
		if v := field(t, n.do("stats"), "current-connections"); v != "2" {
			t.Errorf("current-connections %s, want 2", v)
		}
	})
}

// raiseFileLimit lifts the soft limit on open files to the hard one.
func raiseFileLimit(t *testing.T, want uint64) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	if lim.Cur >= want {
		return
	}
	lim.Cur = min(max(want, lim.Cur), lim.Max)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	if lim.Cur < want {
		t.Fatalf("open files limited to %d, need %d", lim.Cur, want)
	}
}

func TestManyConnections(t *testing.T) {
	const conns = 2000
	raiseFileLimit(t, 2*conns+500)
	for _, b := range backends {
		t.Run(b.Name, func(t *testing.T) {
			_, addr := startServer(t, b.Open(t), nil)
			var wg sync.WaitGroup
			errs := make(chan error, conns)
			start := make(chan struct{})
			for i := range conns {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					errs <- session(addr, i)
				}()
			}
			close(start)
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
			c := dial(t, addr)
			st := c.do("stats")
			for k, want := range map[string]string{
				"cmd-put": strconv.Itoa(conns), "cmd-delete": strconv.Itoa(conns),
				"current-jobs-ready": "0", "current-jobs-reserved": "0",
			} {
				if got := field(t, st, k); got != want {
					t.Errorf("%s: %s, want %s", k, got, want)
				}
			}
		})
	}
}

// session is one connection's put, reserve and delete.
func session(addr string, i int) error {
	nc, err := net.DialTimeout("tcp", addr, replyTimeout)
	if err != nil {
		return err
	}
	defer nc.Close()
	br := bufio.NewReader(nc)
	body := strconv.Itoa(i)
	do := func(cmd string) (string, error) {
		if _, err := io.WriteString(nc, cmd); err != nil {
			return "", err
		}
		return readReply(nc, br)
	}
	r, err := do(fmt.Sprintf("put 0 0 60 %d\r\n%s\r\n", len(body), body))
	if err != nil || !strings.HasPrefix(r, "INSERTED ") {
		return fmt.Errorf("conn %d: put: %q %v", i, r, err)
	}
	r, err = do("reserve-with-timeout 30\r\n")
	f := strings.Fields(r)
	if err != nil || len(f) < 3 || f[0] != "RESERVED" {
		return fmt.Errorf("conn %d: reserve: %q %v", i, r, err)
	}
	r, err = do("delete " + f[1] + "\r\n")
	if err != nil || r != "DELETED\r\n" {
		return fmt.Errorf("conn %d: delete: %q %v", i, r, err)
	}
	return nil
}

func TestShutdown(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		store := b.Open(t)
		q, err := queue.New(store, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer q.Close()
		srv := &beanstalk.Server{Queue: q, Logger: testLogger(t)}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		served := make(chan error, 1)
		go func() { served <- srv.Serve(l) }()
		addr := l.Addr().String()

		holder, waiter, idle := dial(t, addr), dial(t, addr), dial(t, addr)
		id := holder.put(600, "held")
		holder.reservedID(holder.do("reserve"))
		waiter.expect("watch nothing", "WATCHING 2\r\n")
		waiter.expect("ignore default", "WATCHING 1\r\n")
		waiter.send("reserve\r\n")
		waitFor(t, idle, "current-waiting", "1")
		idle.expect("list-tube-used", "USING default\r\n")

		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Fatalf("Shutdown: %v", err)
		}
		if err := <-served; !errors.Is(err, beanstalk.ErrServerClosed) {
			t.Fatalf("Serve: %v", err)
		}
		for _, c := range []*client{holder, waiter, idle} {
			c.expectClosed()
		}
		st, err := q.StatsJob(ctx, parseID(t, id))
		if err != nil || st.State != queue.Ready {
			t.Fatalf("the held job after Shutdown: %+v, %v", st, err)
		}
		if err := srv.Serve(l); !errors.Is(err, beanstalk.ErrServerClosed) {
			t.Fatalf("Serve after Shutdown: %v", err)
		}
	})
}

func parseID(t testing.TB, s string) queue.ID {
	t.Helper()
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return queue.ID(n)
}

// gate is a store whose puts wait until released, or fail.
type gate struct {
	queue.Store
	entered chan struct{}
	release chan struct{}
	fail    error
}

func (g *gate) Put(ctx context.Context, tube string, jobs []queue.NewJob) ([]queue.PutResult, error) {
	if g.fail != nil {
		return nil, g.fail
	}
	if g.entered != nil {
		g.entered <- struct{}{}
		<-g.release
	}
	return g.Store.Put(ctx, tube, jobs)
}

func TestShutdownLetsCommandsFinish(t *testing.T) {
	g := &gate{Store: backendtest.Memory(t), entered: make(chan struct{}), release: make(chan struct{})}
	t.Cleanup(func() { g.Store.Close() })
	q, err := queue.New(g, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	srv := &beanstalk.Server{Queue: q, Logger: testLogger(t)}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(l)
	c := dial(t, l.Addr().String())
	c.send("put 0 0 60 1\r\nx\r\n")
	<-g.entered
	shut := make(chan error, 1)
	go func() { shut <- srv.Shutdown(context.Background()) }()
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned %v while a put was in flight", err)
	default:
	}
	close(g.release)
	if r := c.read(); !strings.HasPrefix(r, "INSERTED ") {
		t.Fatalf("put in flight: %q", r)
	}
	c.expectClosed()
	if err := <-shut; err != nil {
		t.Fatal(err)
	}
}

func TestStoreFailures(t *testing.T) {
	for _, tc := range []struct {
		name  string
		store queue.Store
		want  string
	}{
		{"failure", &gate{Store: backendtest.Memory(t), fail: errors.New("disk on fire")}, "INTERNAL_ERROR\r\n"},
		{"full", &gate{Store: backendtest.Memory(t), fail: fmt.Errorf("store: %w", queue.ErrFull)}, "OUT_OF_MEMORY\r\n"},
		{"memstore-full", backendtest.MemoryWith(t, &memstore.Options{MaxJobs: 1}), "OUT_OF_MEMORY\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Cleanup(func() { tc.store.Close() })
			_, addr := startServer(t, tc.store, nil)
			c := dial(t, addr)
			if tc.name == "memstore-full" {
				c.put(60, "first")
			}
			c.expect("put 0 0 60 1\r\nx", tc.want)
			c.expect("list-tube-used", "USING default\r\n")
		})
	}
}

// A server on a shared Redis returns, within its session lease, the jobs
// reserved through a server that died (here: a session that stopped
// renewing), long before their TTR.
func TestDeadServersJobsReturn(t *testing.T) {
	store := redisStore(t)
	ss := store.(queue.Sessions)
	ctx := context.Background()
	q, err := queue.New(store, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	id, err := q.Put(ctx, "default", queue.NewJob{Body: []byte("x"), TTR: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	// The dead server: its session was renewed once, then never again.
	if err := ss.KeepAlive(ctx, "deadbeef", 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if _, err := q.WithOwner("deadbeef/1").Reserve(ctx, queue.ReserveOptions{Timeout: -1}); err != nil {
		t.Fatal(err)
	}
	_, addr := startServer(t, store, func(s *beanstalk.Server) { s.SessionLease = 300 * time.Millisecond })
	c := dial(t, addr)
	c.send("reserve-with-timeout 10\r\n")
	if r := c.read(); r != "RESERVED "+id.String()+" 1\r\nx\r\n" {
		t.Fatalf("reserve after the dead server's lease lapsed: %q, want job %d", r, id)
	}
}

// TestHTTPClosed: a connection whose first line is an HTTP request line (a
// page POSTing to this port cross-site) is closed unanswered, and none of
// the commands in what it sent is run.
func TestHTTPClosed(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		_, addr := startServer(t, b.Open(t), nil)
		for _, first := range []string{"POST / HTTP/1.1", "GET /stats HTTP/1.0", "PUT /x?y=z HTTP/1.1", "PRI * HTTP/2.0"} {
			c := dial(t, addr)
			c.send(first + "\r\nHost: 127.0.0.1:11300\r\nContent-Type: text/plain\r\n\r\nuse evil\r\nput 0 0 10 2\r\nhi\r\n")
			c.nc.SetReadDeadline(time.Now().Add(replyTimeout))
			rest, err := io.ReadAll(c.br)
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatalf("%q: the connection stayed open", first)
			}
			if len(rest) > 0 {
				t.Fatalf("%q: answered %q", first, rest)
			}
		}
		c := dial(t, addr)
		if r := c.do("stats-tube evil"); r != "NOT_FOUND\r\n" {
			t.Fatalf("stats-tube evil after the HTTP requests: %q, want NOT_FOUND", r)
		}
		// Upper-case beanstalkd-looking lines that are not HTTP are
		// answered as beanstalkd answers them.
		c.expect("GET x", "UNKNOWN_COMMAND\r\n")
		c.expect("POST / HTTP/1.1", "UNKNOWN_COMMAND\r\n") // not the first line
	})
}

// A client that pipelines many commands and closes its end without reading
// the replies does not have them all run: the server stops once it cannot
// write.
func TestClosedConnectionStopsPipeline(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		_, addr := startServer(t, b.Open(t), nil)
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		const n = 20000
		var buf bytes.Buffer
		for range n {
			buf.WriteString("put 0 0 60 1\r\nx\r\n")
		}
		go func() {
			nc.Write(buf.Bytes())
			nc.Close()
		}()
		c := dial(t, addr)
		waitFor(t, c, "current-connections", "1") // the pipelining one is gone
		got, _ := strconv.Atoi(field(t, c.do("stats"), "total-jobs"))
		// The client's whole burst is in the kernel's buffers at once, and
		// it closes then: what runs is what the server ran before its
		// writes failed, about two flushes' worth (64), not thousands.
		if got > 1000 {
			t.Errorf("%d of %d pipelined puts ran after their client closed, want at most 1000", got, n)
		}
		t.Logf("%d of %d pipelined puts ran", got, n)
	})
}
