// Package storetest holds the conformance suites for the storage back ends
// of package queue, in the manner of testing/fstest and log/slog's slogtest:
// a back end's own test hands the suite a constructor, and the suite drives
// the stores it makes through the public contract only. It never asks which
// back end it tests, so the in-process engine and the Redis store are held
// to the same behaviour, the one documented on queue.Store (and, where the
// documentation is silent, beanstalkd 1.12's).
//
// A back end calls Queue from a test:
//
//	func TestConformance(t *testing.T) {
//		storetest.Queue(t, func(t *testing.T, now func() time.Time) queue.Store {
//			s := openStore(t, now) // a fresh, empty store on the given clock
//			t.Cleanup(func() { s.Close() })
//			return s
//		})
//	}
//
// Time is injected: the suite passes each store the Now method of a manual
// Clock and moves it with Advance, so every deadline (delays, TTRs, pauses)
// is checked to the millisecond without sleeping. Only the cases about
// blocking reserves wait on real time, and then only for an event with a
// generous deadline or for a short Reserve timeout.
//
// After every subtest the suite checks that what the store reports is
// consistent: the states of the jobs the subtest created, read one by one
// with StatsJob, add up to the per-tube counts of StatsTube and to the
// totals of Stats, and Tubes lists exactly the tubes that StatsTube knows.
// A store that implements Checker also verifies its internal structures.
//
// RateLimit is the suite of the ratelimit.Store contract, in the same
// manner: a back end hands it a constructor taking a *Clock, and the suite
// checks admitted counts, delays and retry times exactly, through
// ratelimit.Limiter.
package storetest
