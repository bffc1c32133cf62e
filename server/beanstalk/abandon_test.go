package beanstalk_test

import (
	"testing"

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
