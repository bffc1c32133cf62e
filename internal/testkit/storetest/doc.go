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
// ratelimit.Limiter. Lock, TTLHash and Schedule are those of lock.Store,
// ttlhash.Store and schedule.Store.
//
// Each of these suites too checks after every case what must hold whatever
// the case did, through the public contract only: no lock name has more
// live holders than its limit, and every live lease has between 0 and the
// lease it was last given left (lock_invariants.go); no rate limit decision
// says more is left than its limits hold, or less than nothing
// (ratelimit_invariants.go); no hash field the case wrote is readable past
// its deadline, GetAll, Len, Get and TTL agree, and no consumer group has
// more events pending than the store keeps (ttlhash_invariants.go); List
// and Get agree on every schedule, whose next tick comes after the tick of
// its last fire (schedule_invariants.go).
package storetest
