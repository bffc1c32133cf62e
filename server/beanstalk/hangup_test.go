package beanstalk_test

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// connCounts are the stats a closed connection must give back.
type connCounts struct{ conns, waiting, workers, producers string }

func countsOf(t testing.TB, c *client) connCounts {
	t.Helper()
	st := c.do("stats")
	return connCounts{field(t, st, "current-connections"), field(t, st, "current-waiting"),
		field(t, st, "current-workers"), field(t, st, "current-producers")}
}

// waitCounts asks stats until the counts are want, and returns how long
// that took.
func waitCounts(t testing.TB, c *client, want connCounts) time.Duration {
	t.Helper()
	start := time.Now()
	deadline := start.Add(replyTimeout)
	for {
		got := countsOf(t, c)
		if got == want {
			return time.Since(start)
		}
		if time.Now().After(deadline) {
			t.Fatalf("counts (connections, waiting, workers, producers) %v, want %v", got, want)
		}
	}
}

// closeRST closes nc with a reset (RST) rather than a FIN.
func closeRST(t testing.TB, nc net.Conn) {
	t.Helper()
	if err := nc.(*net.TCPConn).SetLinger(0); err != nil {
		t.Fatal(err)
	}
	nc.Close()
}

// Clients that close (half of them with a reset, half with a FIN) while
// they wait in reserve, a third with 64 KiB of puts pipelined behind it,
// or while the server waits for the rest of a put's body, are noticed at
// once: the counts are back, none of the pipelined commands runs, no job
// is stored, and every job put afterwards goes to a connection that is
// still there, reserved once.
func TestHangUpWhileWaiting(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		const live, gone, bodies, jobs = 20, 1000, 100, 1000
		_, addr := startServer(t, b.Open(t), nil)
		o := dial(t, addr)

		workers := make([]*client, live)
		for i := range workers {
			w := dial(t, addr)
			w.expect("watch w", "WATCHING 2\r\n")
			w.expect("ignore default", "WATCHING 1\r\n")
			w.send("reserve\r\n")
			workers[i] = w
		}
		waitFor(t, o, "current-waiting", fmt.Sprint(live))
		before := countsOf(t, o)

		var pipelined strings.Builder
		for pipelined.Len() < 64<<10 {
			pipelined.WriteString("put 0 0 60 1\r\nx\r\n")
		}
		ncs := make([]net.Conn, gone)
		for i := range ncs {
			nc, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { nc.Close() })
			msg := "watch w\r\nignore default\r\nreserve\r\n"
			if i%3 == 0 {
				msg += pipelined.String()
			}
			if _, err := io.WriteString(nc, msg); err != nil {
				t.Fatal(err)
			}
			ncs[i] = nc
		}
		for range bodies {
			nc, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { nc.Close() })
			if _, err := io.WriteString(nc, "put 0 0 60 100\r\nthe first bytes of a body"); err != nil {
				t.Fatal(err)
			}
			ncs = append(ncs, nc)
		}
		waitFor(t, o, "current-waiting", fmt.Sprint(live+gone))
		waitFor(t, o, "cmd-put", fmt.Sprint(bodies))
		puts := field(t, o.do("stats"), "cmd-put")

		start := time.Now()
		for i, nc := range ncs {
			if i%2 == 0 {
				closeRST(t, nc)
			} else {
				nc.Close()
			}
		}
		waitCounts(t, o, before)
		t.Logf("%s: %d connections waiting in reserve (%d with 64 KiB pipelined) and %d in a body closed, half by RST, half by FIN: counts back %v after the first close",
			b.Name, gone, (gone+2)/3, bodies, time.Since(start).Round(100*time.Microsecond))
		st := o.do("stats")
		if got := field(t, st, "cmd-put"); got != puts {
			t.Fatalf("cmd-put went from %s to %s: commands pipelined behind the closed reserves ran", puts, got)
		}
		if got := field(t, st, "total-jobs"); got != "0" {
			t.Fatalf("total-jobs %s after the clients closed, want 0", got)
		}

		// Every job goes to a live worker, reserved once.
		ids := make(chan string, jobs)
		errs := make(chan error, live)
		var wg sync.WaitGroup
		for _, w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs <- work(w, ids)
			}()
		}
		o.expect("use w", "USING w\r\n")
		start = time.Now()
		for range jobs {
			o.put(60, "job")
		}
		got := map[string]int{}
		timeout := time.After(replyTimeout)
		for len(got) < jobs {
			select {
			case id := <-ids:
				got[id]++
				if got[id] > 1 {
					t.Fatalf("job %s reached the workers twice", id)
				}
			case err := <-errs:
				t.Fatalf("a worker: %v", err)
			case <-timeout:
				t.Fatalf("the workers got %d of %d jobs", len(got), jobs)
			}
		}
		t.Logf("%s: %d jobs put one by one and each reserved once by the %d live workers in %v",
			b.Name, jobs, live, time.Since(start).Round(100*time.Microsecond))
		for _, w := range workers {
			w.nc.Close()
		}
		wg.Wait()
		if n := field(t, o.do("stats"), "total-jobs"); n != fmt.Sprint(jobs) {
			t.Fatalf("total-jobs %s after %d puts", n, jobs)
		}
	})
}

// work reads the RESERVED reply of the reserve w has sent, checks that the
// job was reserved once (no closed connection had it before), deletes it,
// sends its ID on ids and reserves again, until its connection closes.
func work(w *client, ids chan<- string) error {
	for {
		line, err := w.br.ReadString('\n')
		if err != nil {
			return nil // closed by the test once every job is in
		}
		f := strings.Fields(line)
		if len(f) != 3 || f[0] != "RESERVED" {
			return fmt.Errorf("reserve: %q", line)
		}
		if _, err := io.ReadFull(w.br, make([]byte, len("job")+2)); err != nil {
			return err
		}
		id := f[1]
		io.WriteString(w.nc, "stats-job "+id+"\r\n")
		st, err := readReply(w.nc, w.br)
		if err != nil {
			return err
		}
		if !strings.Contains(st, "\nreserves: 1\n") {
			return fmt.Errorf("job %s was reserved before:\n%s", id, st)
		}
		io.WriteString(w.nc, "delete "+id+"\r\nreserve\r\n")
		if r, err := readReply(w.nc, w.br); err != nil || r != "DELETED\r\n" {
			return fmt.Errorf("delete %s: %q, %v", id, r, err)
		}
		w.nc.SetReadDeadline(time.Time{})
		ids <- id
	}
}

// Garbage, commands that wait (a reserve, a put's body) behind it, and
// more garbage behind the wait, up to more than the kernel's buffers hold:
// once the clients close, by a reset or a FIN, nothing of theirs is
// counted any more.
func TestHangUpAfterGarbage(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		_, addr := startServer(t, b.Open(t), nil)
		o := dial(t, addr)
		before := countsOf(t, o)
		rng := rand.New(rand.NewPCG(45, 39))
		junk := func(n int) []byte { // without '\r': one line too long
			p := make([]byte, n)
			for i := range p {
				if p[i] = byte(rng.Uint32()); p[i] == '\r' {
					p[i] = 0
				}
			}
			return p
		}
		waits := []string{"reserve\r\n", "reserve-with-timeout -1\r\n", "watch x\r\nreserve\r\n", "put 0 0 60 60000\r\nabc"}
		tails := []int{0, 1000, 16 << 20}
		var wg sync.WaitGroup
		var ncs []net.Conn
		waiting := 0
		for _, wait := range waits {
			for _, tail := range tails {
				for _, prefix := range []int{0, 3000} {
					nc, err := net.Dial("tcp", addr)
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { nc.Close() })
					ncs = append(ncs, nc)
					var msg []byte
					if prefix > 0 {
						msg = append(junk(prefix), "\r\n"...)
					}
					msg = append(msg, wait...)
					msg = append(msg, junk(tail)...)
					if !strings.HasPrefix(wait, "put") {
						waiting++
					}
					wg.Add(1)
					go func() {
						defer wg.Done()
						nc.Write(msg) // blocks while the server does not read, until closed
					}()
				}
			}
		}
		waitFor(t, o, "current-waiting", fmt.Sprint(waiting))
		waitFor(t, o, "current-producers", fmt.Sprint(len(ncs)-waiting))
		for range 10 { // and nothing but binary garbage
			nc, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { nc.Close() })
			ncs = append(ncs, nc)
			msg := make([]byte, 64<<10)
			for i := range msg {
				msg[i] = byte(rng.Uint32())
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				nc.Write(msg)
			}()
		}
		for i, nc := range ncs {
			if i%2 == 0 {
				closeRST(t, nc)
			} else {
				nc.Close()
			}
		}
		wg.Wait()
		t.Logf("counts back in %v", waitCounts(t, o, before))
		waitFor(t, o, "current-producers", "0")
	})
}
