package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/lock"
	"github.com/hourglass-io/hourglass/ratelimit"
	"github.com/hourglass-io/hourglass/schedule"
	"github.com/hourglass-io/hourglass/ttlhash"
)

// ClosedStores are the stores of one back end that one Close closes
// together (the queue's store has its own case, the Queue suite's Close).
type ClosedStores struct {
	Limits    ratelimit.Store
	Hashes    ttlhash.Store
	Locks     lock.Store
	Schedules schedule.Store
	// Close closes the back end's store under all of them.
	Close func() error
}

// Closed runs the closed-store case of every primitive but the queue (the
// Queue suite has its own): once Close has returned, every method of each
// store, its Notifier's Listen and the optional abilities it has (a
// ratelimit.Batcher, a ttlhash.ShardReader, AckReader or ShardSweeper)
// fail with the primitive's closed error, and none answers as if open.
func Closed(t *testing.T, s ClosedStores) {
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	ctx := context.Background()
	check := func(want error, name string, err error) {
		t.Helper()
		if !errors.Is(err, want) {
			t.Errorf("%s after Close: %v, want %v", name, err, want)
		}
	}
	t.Run("RateLimit", func(t *testing.T) { closedLimits(ctx, s.Limits, check) })
	t.Run("TTLHash", func(t *testing.T) { closedHashes(ctx, s.Hashes, check) })
	t.Run("Lock", func(t *testing.T) { closedLocks(ctx, s.Locks, check) })
	t.Run("Schedule", func(t *testing.T) { closedSchedules(ctx, s.Schedules, check) })
}

type closedCheck func(want error, name string, err error)

func closedLimits(ctx context.Context, l ratelimit.Store, check closedCheck) {
	gcra := []ratelimit.Limit{ratelimit.PerSecond(10)}
	wantErr := ratelimit.ErrClosed
	for name, op := range map[string]ratelimit.Op{"allow": ratelimit.OpAllow, "reserve": ratelimit.OpReserve, "cancel": ratelimit.OpCancel, "rollback": ratelimit.OpRollback} {
		_, err := l.GCRA(ctx, "k", 1, gcra, op, time.Second, time.Time{})
		check(wantErr, "GCRA "+name, err)
	}
	_, err := l.SlidingLog(ctx, "k", 1, []ratelimit.Limit{{Events: 3, Per: time.Second, Algorithm: ratelimit.SlidingLog}})
	check(wantErr, "SlidingLog", err)
	_, err = l.SlidingWindow(ctx, "k", 1, []ratelimit.Limit{{Events: 3, Per: time.Second, Algorithm: ratelimit.SlidingWindow}})
	check(wantErr, "SlidingWindow", err)
	if b, ok := l.(ratelimit.Batcher); ok {
		_, err := b.GCRABatch(ctx, []string{"k"}, []ratelimit.GCRARequest{{Op: ratelimit.OpAllow, N: 1, Limits: gcra}})
		check(wantErr, "GCRABatch", err)
	}
}

func closedHashes(ctx context.Context, h ttlhash.Store, check closedCheck) {
	w := ttlhash.ErrClosed
	f := []string{"f"}
	calls := map[string]func() error{
		"Set": func() error {
			_, err := h.Set(ctx, "h", ttlhash.SetRequest{Fields: []ttlhash.Field{{Name: "f", Value: []byte("v")}}, TTL: time.Second})
			return err
		},
		"Get":    func() error { _, err := h.Get(ctx, "h", f); return err },
		"GetAll": func() error { _, err := h.GetAll(ctx, "h"); return err },
		"Scan":   func() error { _, _, err := h.Scan(ctx, "h", "", 10); return err },
		"Del":    func() error { _, err := h.Del(ctx, "h", f); return err },
		"Len":    func() error { _, err := h.Len(ctx, "h"); return err },
		"TTL":    func() error { _, err := h.TTL(ctx, "h", f); return err },
		"Expire": func() error {
			_, err := h.Expire(ctx, "h", ttlhash.ExpireRequest{Fields: f, TTL: time.Second})
			return err
		},
		"Persist":     func() error { _, err := h.Persist(ctx, "h", f); return err },
		"Sweep":       func() error { _, err := h.Sweep(ctx, 0, 10); return err },
		"CreateGroup": func() error { return h.CreateGroup(ctx, "g") },
		"DeleteGroup": func() error { return h.DeleteGroup(ctx, "g") },
		"Read":        func() error { _, err := h.Read(ctx, "g", "c", 10); return err },
		"Claim":       func() error { _, err := h.Claim(ctx, "g", "c", time.Second, 10); return err },
		"Ack":         func() error { _, err := h.Ack(ctx, "g", nil); return err },
		"EventStats":  func() error { _, err := h.EventStats(ctx); return err },
	}
	if n, ok := h.(ttlhash.Notifier); ok {
		calls["Listen"] = func() error { _, err := n.Listen(ctx, ttlhash.TopicEvents, func(string) {}); return err }
	}
	if r, ok := h.(ttlhash.ShardReader); ok {
		calls["ReadShards"] = func() error { _, err := r.ReadShards(ctx, "g", "c", []int{0}, 10); return err }
	}
	if r, ok := h.(ttlhash.AckReader); ok {
		calls["AckRead"] = func() error { _, err := r.AckRead(ctx, "g", "c", nil, nil, 10); return err }
	}
	if s, ok := h.(ttlhash.ShardSweeper); ok {
		calls["SweepAll"] = func() error { _, err := s.SweepAll(ctx, 10); return err }
	}
	for name, call := range calls {
		check(w, name, call())
	}
}

func closedLocks(ctx context.Context, l lock.Store, check closedCheck) {
	w := lock.ErrClosed
	_, err := l.Acquire(ctx, lock.AcquireRequest{Name: "n", Token: "t", Limit: 1, TTL: time.Second})
	check(w, "Acquire", err)
	check(w, "Release", l.Release(ctx, "n", "t"))
	check(w, "Refresh", l.Refresh(ctx, "n", "t", time.Second))
	_, err = l.TTL(ctx, "n", "t")
	check(w, "TTL", err)
	check(w, "Leave", l.Leave(ctx, "n", "t"))
	if n, ok := l.(lock.Notifier); ok {
		_, err := n.Listen(ctx, "n", func(string) {})
		check(w, "Listen", err)
	}
}

func closedSchedules(ctx context.Context, s schedule.Store, check closedCheck) {
	w := schedule.ErrClosed
	_, err := s.Set(ctx, schedule.State{Schedule: schedule.Schedule{Name: "s", Spec: "@daily", Job: schedule.Job{Tube: "t"}}})
	check(w, "Set", err)
	_, err = s.Get(ctx, "s")
	check(w, "Get", err)
	_, err = s.List(ctx, "", 10)
	check(w, "List", err)
	check(w, "Delete", s.Delete(ctx, "s"))
	_, err = s.SetPaused(ctx, "s", true, time.Time{})
	check(w, "SetPaused", err)
	_, err = s.Fire(ctx, schedule.FireRequest{Name: "s"})
	check(w, "Fire", err)
	_, err = s.Due(ctx, 10)
	check(w, "Due", err)
	_, err = s.Now(ctx)
	check(w, "Now", err)
	if n, ok := s.(schedule.Notifier); ok {
		_, err := n.Listen(ctx, schedule.TopicDue, func(string) {})
		check(w, "Listen", err)
	}
}
