package beanstalk_test

import (
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/server/beanstalk"
)

func TestMaxWatch(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		_, addr := startServer(t, b.Open(t), func(s *beanstalk.Server) { s.MaxWatch = 3 })
		c := dial(t, addr)
		c.expect("watch a", "WATCHING 2\r\n")
		c.expect("watch b", "WATCHING 3\r\n")
		c.expect("watch c", "OUT_OF_MEMORY\r\n")
		c.expect("watch a", "WATCHING 3\r\n") // already watched: no new entry
		if r := c.do("list-tubes-watched"); r != "OK 22\r\n---\n- default\n- a\n- b\n\r\n" {
			t.Errorf("list-tubes-watched after the refused watch: %q", r)
		}
		c.expect("ignore a", "WATCHING 2\r\n")
		c.expect("watch c", "WATCHING 3\r\n")
	})
}

// heapInUse returns the live heap after two collections (the second
// empties what sync.Pools kept through the first).
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestMaxWaitsFlood runs alone (not in parallel) so that the heap it reads
// is its own.
func TestMaxWaitsFlood(t *testing.T) {
	const maxWaits, flood = 50, 400
	for _, b := range backends {
		t.Run(b.Name, func(t *testing.T) {
			_, addr := startServer(t, b.Open(t), func(s *beanstalk.Server) { s.MaxWaits = maxWaits })
			o := dial(t, addr)
			o.expect("use t", "USING t\r\n")
			o.expect("watch t", "WATCHING 2\r\n")
			base := heapInUse()

			run := func(round int) (peak, after uint64) {
				waiters := make([]*client, maxWaits)
				for i := range waiters {
					waiters[i] = dial(t, addr)
					waiters[i].expect("watch t", "WATCHING 2\r\n")
					waiters[i].send("reserve-with-timeout 60\r\n")
				}
				waitFor(t, o, "current-waiting", strconv.Itoa(maxWaits))
				refused := make([]*client, flood)
				for i := range refused {
					refused[i] = dial(t, addr)
					if i%2 == 0 {
						refused[i].expect("reserve", "OUT_OF_MEMORY\r\n")
					} else {
						refused[i].expect("reserve-with-timeout 5", "OUT_OF_MEMORY\r\n")
					}
				}
				// A reserve that need not wait is no long poll: still answered.
				refused[0].expect("reserve-with-timeout 0", "TIMED_OUT\r\n")
				// The server stays responsive: a put is taken by a waiter.
				o.put(60, "j")
				waitFor(t, o, "current-jobs-reserved", "1")
				waitFor(t, o, "current-waiting", strconv.Itoa(maxWaits-1))
				peak = heapInUse()
				for _, c := range append(waiters, refused...) {
					c.nc.Close()
				}
				waitFor(t, o, "current-connections", "1")
				waitFor(t, o, "current-jobs-reserved", "0")
				o.expect("delete "+o.reservedID(o.do("reserve-with-timeout 0")), "DELETED\r\n") // the released job
				after = heapInUse()
				t.Logf("round %d: heap %d KiB before, %d KiB with %d waiting and %d refused connections, %d KiB after",
					round, base>>10, peak>>10, maxWaits, flood, after>>10)
				return peak, after
			}
			peak, after1 := run(1)
			_, after2 := run(2)
			// The store's connection pool may keep what the first flood
			// grew it to; a second flood must not add to it.
			if grown := peak - base; after2 > after1+grown/4 || after2 > base+grown/2 {
				t.Errorf("heap %d KiB after two floods, %d KiB after one, baseline %d KiB, peak %d KiB: the floods' memory is held",
					after2>>10, after1>>10, base>>10, peak>>10)
			}
			// Once the flood is gone, a long poll is admitted again.
			c := dial(t, addr)
			c.expect("reserve-with-timeout 1", "TIMED_OUT\r\n")
		})
	}
}

// A put whose body never comes closes the connection after BodyTimeout,
// with no IdleTimeout set; a connection idle between commands stays.
func TestBodyTimeout(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		_, addr := startServer(t, b.Open(t), func(s *beanstalk.Server) { s.BodyTimeout = 200 * time.Millisecond })
		idle, stuck := dial(t, addr), dial(t, addr)
		idle.expect("list-tube-used", "USING default\r\n")
		stuck.send("put 0 0 60 10\r\nabc")
		stuck.expectClosed()
		idle.expect("list-tube-used", "USING default\r\n")
		if v := field(t, idle.do("stats"), "current-jobs-ready"); v != "0" {
			t.Errorf("current-jobs-ready %s after the put cut short, want 0", v)
		}
	})
}
