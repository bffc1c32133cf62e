package memstore

import (
	"context"
	"time"

	"github.com/hourglass-io/hourglass/queue"
)

// The Store is the embedded engine's queue.Store, as a redisstore.Store is
// Redis's: the queue is the one primitive whose store is the Store itself
// (hourglass.Open, the servers and the examples hand a Store to
// queue.New). Each method below forwards to the job queue's part
// (queuestate.go), which the engine knows only as a part; none does
// anything else.

// Put implements queue.Store.
func (s *Store) Put(ctx context.Context, tube string, jobs []queue.NewJob) ([]queue.PutResult, error) {
	return s.queue.Put(ctx, tube, jobs)
}

// Reserve implements queue.Store. When no job is ready, Next is the time
// until the earliest deadline of the asked tubes (a delay, a TTR or a pause
// running out), or -1; when jobs are returned, Next is -1 unless limits
// now hold back the rest (ReserveResult.Drained).
func (s *Store) Reserve(ctx context.Context, req queue.ReserveRequest) (queue.ReserveResult, error) {
	return s.queue.Reserve(ctx, req)
}

// ReserveJob implements queue.Store. A job reserved from the delayed or
// buried state is logged as ready, so that after a restart it is ready like
// every other job that was reserved.
func (s *Store) ReserveJob(ctx context.Context, owner string, id queue.ID) (queue.Job, error) {
	return s.queue.ReserveJob(ctx, owner, id)
}

// Delete implements queue.Store.
func (s *Store) Delete(ctx context.Context, owner string, ids []queue.ID) ([]error, error) {
	return s.queue.Delete(ctx, owner, ids)
}

// Release implements queue.Store.
func (s *Store) Release(ctx context.Context, owner string, id queue.ID, pri int64, delay time.Duration, reason string) error {
	return s.queue.Release(ctx, owner, id, pri, delay, reason)
}

// Bury implements queue.Store.
func (s *Store) Bury(ctx context.Context, owner string, id queue.ID, pri int64, reason string) error {
	return s.queue.Bury(ctx, owner, id, pri, reason)
}

// Touch implements queue.Store. Touches are not logged.
func (s *Store) Touch(ctx context.Context, owner string, id queue.ID) (time.Duration, error) {
	return s.queue.Touch(ctx, owner, id)
}

// Reservations implements queue.Store: the owner's entries in the index of
// reserved jobs by owner (the TTRs that ran out were applied when the call
// began), so it costs O(the owner's reservations).
func (s *Store) Reservations(ctx context.Context, owner string) ([]queue.Reservation, error) {
	return s.queue.Reservations(ctx, owner)
}

// Unreserve implements queue.Store. Nothing is logged: a reserved job is
// ready in the log already.
func (s *Store) Unreserve(ctx context.Context, owner string, ids []queue.ID) (int, error) {
	return s.queue.Unreserve(ctx, owner, ids)
}

// Kick implements queue.Store.
func (s *Store) Kick(ctx context.Context, tube string, n int) (int, error) {
	return s.queue.Kick(ctx, tube, n)
}

// KickJob implements queue.Store.
func (s *Store) KickJob(ctx context.Context, id queue.ID) error { return s.queue.KickJob(ctx, id) }

// PeekStateN implements queue.Store. It walks the state's heap from the
// top, taking the least of the frontier each time, so it costs O(n log n)
// whatever the tube holds.
func (s *Store) PeekStateN(ctx context.Context, tube string, st queue.State, n int) ([]queue.Job, error) {
	return s.queue.PeekStateN(ctx, tube, st, n)
}

// StatsJob implements queue.Store.
func (s *Store) StatsJob(ctx context.Context, id queue.ID) (queue.JobStats, error) {
	return s.queue.StatsJob(ctx, id)
}

// StatsTube implements queue.Store.
func (s *Store) StatsTube(ctx context.Context, tube string) (queue.TubeStats, error) {
	return s.queue.StatsTube(ctx, tube)
}

// Stats implements queue.Store. TotalJobs and Timeouts count since the
// Store was made (New) or opened (Open).
func (s *Store) Stats(ctx context.Context) (queue.Stats, error) { return s.queue.Stats(ctx) }

// PauseTube implements queue.Store.
func (s *Store) PauseTube(ctx context.Context, tube string, d time.Duration) error {
	return s.queue.PauseTube(ctx, tube, d)
}

// Hold implements queue.Store. References are not logged.
func (s *Store) Hold(ctx context.Context, owner, tube string, n int) error {
	return s.queue.Hold(ctx, owner, tube, n)
}

// Tubes implements queue.Store.
func (s *Store) Tubes(ctx context.Context) ([]string, error) { return s.queue.Tubes(ctx) }

// Listen implements queue.Notifier: wake(tube) is called after a put, a
// release, a kick, an unreserve or a pause change in tube, and when a job of
// tube becomes ready because a delay or a TTR ran out (the Store's timer
// finds it, or any operation does). wake is called without the Store's lock
// held and must not block for long.
func (s *Store) Listen(ctx context.Context, tube string, wake func(tube string)) (func(), error) {
	return s.queue.Listen(ctx, tube, wake)
}

// SetLimits implements queue.LimitStore.
func (s *Store) SetLimits(ctx context.Context, tube string, l queue.Limits) error {
	return s.queue.SetLimits(ctx, tube, l)
}

// TubeLimits implements queue.LimitStore.
func (s *Store) TubeLimits(ctx context.Context, tube string) (queue.Limits, error) {
	return s.queue.TubeLimits(ctx, tube)
}

// LimitedTubes implements queue.LimitStore.
func (s *Store) LimitedTubes(ctx context.Context) (map[string]queue.Limits, error) {
	return s.queue.LimitedTubes(ctx)
}

// SetRetention implements queue.KeepStore (keep.go).
func (s *Store) SetRetention(ctx context.Context, tube string, d time.Duration) error {
	return s.queue.SetRetention(ctx, tube, d)
}

// Retention implements queue.KeepStore.
func (s *Store) Retention(ctx context.Context, tube string) (time.Duration, error) {
	return s.queue.Retention(ctx, tube)
}

// Finish implements queue.KeepStore.
func (s *Store) Finish(ctx context.Context, owner string, id queue.ID, result []byte) error {
	return s.queue.Finish(ctx, owner, id, result)
}

// Lookup implements queue.KeepStore.
func (s *Store) Lookup(ctx context.Context, id queue.ID) (queue.JobStats, error) {
	return s.queue.Lookup(ctx, id)
}

// LookupKey implements queue.KeepStore.
func (s *Store) LookupKey(ctx context.Context, tube, key string) (queue.JobStats, error) {
	return s.queue.LookupKey(ctx, tube, key)
}

// ListKept implements queue.KeptLister (keep.go).
func (s *Store) ListKept(ctx context.Context, tube string, from queue.KeptCursor, limit int) ([]queue.KeptJob, error) {
	return s.queue.ListKept(ctx, tube, from, limit)
}

// RecordCounters implements queue.CounterLog (counters.go).
func (s *Store) RecordCounters(ctx context.Context, minute int64, keep time.Duration, samples []queue.CounterSample) error {
	return s.counters.RecordCounters(ctx, minute, keep, samples)
}

// CounterHistory implements queue.CounterLog (counters.go).
func (s *Store) CounterHistory(ctx context.Context, from, to int64) ([]queue.CounterSample, error) {
	return s.counters.CounterHistory(ctx, from, to)
}

// CheckInvariants verifies the Store's structures: every job is in exactly
// the heap of its state, at the index it records; every heap is ordered;
// the counts match the heaps; unique keys point at their jobs; the schedule
// of tubes matches their deadlines; no tube is empty, unreferenced and
// unpaused; references add up; and no ID is beyond the last one issued.
// It is meant for tests.
func (s *Store) CheckInvariants(ctx context.Context) error { return s.queue.CheckInvariants(ctx) }
