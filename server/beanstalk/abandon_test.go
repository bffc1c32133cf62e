package beanstalk_test

import (
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/server/beanstalk"
)

// Reserves whose connections close while they wait give back their places:
// the waits count no more, the server's bound on waits admits new ones,
// and the next job goes to a reserve that is still there.
func TestAbandonedReservesGiveBack(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		_, addr := startServer(t, b.Open(t), func(s *beanstalk.Server) { s.MaxWaits = 5 })
		o := dial(t, addr)
		gone := make([]*client, 5)
		for i := range gone {
			gone[i] = dial(t, addr)
			gone[i].expect("watch w", "WATCHING 2\r\n")
			gone[i].expect("ignore default", "WATCHING 1\r\n")
			gone[i].send("reserve-with-timeout 60\r\n")
		}
		waitFor(t, o, "current-waiting", "5")
		for _, c := range gone {
			c.nc.Close()
		}
		waitFor(t, o, "current-waiting", "0")
		waitFor(t, o, "current-connections", "1")

		w := dial(t, addr)
		w.expect("watch w", "WATCHING 2\r\n")
		w.send("reserve-with-timeout 60\r\n")
		waitFor(t, o, "current-waiting", "1")
		o.expect("use w", "USING w\r\n")
		id := o.put(60, "job")
		if got := w.reservedID(w.read()); got != id {
			t.Fatalf("reserved job %s, want %s", got, id)
		}
		if st := o.do("stats-tube w"); field(t, st, "current-jobs-reserved") != "1" || field(t, st, "current-jobs-ready") != "0" {
			t.Fatalf("stats-tube w after the reserve:\n%s", st)
		}

		// A reserve that leaves as its job comes: reserved or not, the
		// job is ready again at once, not after its TTR.
		w.send("reserve-with-timeout 60\r\n")
		waitFor(t, o, "current-waiting", "1")
		o.put(600, "late")
		w.nc.Close()
		waitFor(t, o, "current-jobs-ready", "2") // "late", and "job" that w held
	})
}

// At MaxConns a new connection takes the place of the one that has waited
// longest for a command or a put's body; connections blocked in reserve
// keep theirs.
func TestMaxConnsEvictsStalled(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		_, addr := startServer(t, b.Open(t), func(s *beanstalk.Server) {
			s.MaxConns = 4
			s.MinStall = time.Nanosecond
		})
		w1, w2, body := dial(t, addr), dial(t, addr), dial(t, addr)
		w1.send("reserve\r\n")
		w2.send("reserve\r\n")
		waitFor(t, body, "current-waiting", "2")
		body.send("put 0 0 10 5\r\n") // and never the body
		idle := dial(t, addr)
		waitFor(t, idle, "cmd-put", "1") // the put waits for its body
		// Full: the body that never came waited longest...
		d := dial(t, addr)
		body.expectClosed()
		d.expect("list-tube-used", "USING default\r\n")
		// Full again: the next takes the place of idle or d (whichever the
		// server saw waiting for a command longest), never a reserve's.
		f := dial(t, addr)
		f.expect("list-tube-used", "USING default\r\n")
		// The reserves kept their places.
		f.put(60, "one")
		f.put(60, "two")
		w1.reservedID(w1.read())
		w2.reservedID(w2.read())
	})
}
