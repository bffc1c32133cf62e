package storetest

import (
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/queue"
)

// testKeepPriority: a release or bury with KeepPriority leaves the job's
// priority as it was, in the job's stats and in the order of reserves; a
// priority given still replaces it.
func testKeepPriority(t *testing.T, s *suite) {
	t.Run("release", func(t *testing.T) {
		e := s.env(t)
		a := e.putPri("keep", 7, "a")
		b := e.putPri("keep", 8, "b")
		e.reserveWant(e.q, a, "keep")
		e.ok("ReleaseWith without a priority", e.q.ReleaseWith(e.ctx, a, queue.ReleaseOptions{Reason: "try again"}))
		if js := e.statsJob(a); js.Priority != 7 || js.State != queue.Ready || js.LastError != "try again" {
			t.Errorf("after a release keeping the priority: priority %d, state %v, last error %q; want 7, ready, %q",
				js.Priority, js.State, js.LastError, "try again")
		}
		e.reserveWant(e.q, a, "keep") // still ahead of b (8)
		e.ok("ReleaseWith a delay", e.q.ReleaseWith(e.ctx, a, queue.ReleaseOptions{Delay: time.Second}))
		e.advance(time.Second)
		e.reserveWant(e.q, a, "keep")
		pri := uint32(9)
		e.ok("ReleaseWith priority 9", e.q.ReleaseWith(e.ctx, a, queue.ReleaseOptions{Priority: &pri}))
		e.reserveWant(e.q, b, "keep")
		if js := e.statsJob(a); js.Priority != 9 {
			t.Errorf("after a release with priority 9: priority %d", js.Priority)
		}
	})
	t.Run("bury", func(t *testing.T) {
		e := s.env(t)
		a := e.putPri("keep", 3, "a")
		b := e.putPri("keep", 4, "b")
		e.reserveWant(e.q, a, "keep")
		e.ok("BuryWith without a priority", e.q.BuryWith(e.ctx, a, queue.BuryOptions{Reason: "bad input"}))
		if js := e.statsJob(a); js.Priority != 3 || js.State != queue.Buried || js.LastError != "bad input" {
			t.Errorf("after a bury keeping the priority: priority %d, state %v, last error %q; want 3, buried, %q",
				js.Priority, js.State, js.LastError, "bad input")
		}
		e.ok("KickJob", e.q.KickJob(e.ctx, a))
		e.reserveWant(e.q, a, "keep") // ahead of b (4)
		e.ok("Bury through the store", e.store.Bury(e.ctx, e.q.Owner(), a, queue.KeepPriority, ""))
		if js := e.statsJob(a); js.Priority != 3 {
			t.Errorf("after Store.Bury with KeepPriority: priority %d, want 3", js.Priority)
		}
		e.ok("KickJob", e.q.KickJob(e.ctx, a))
		e.reserveWant(e.q, a, "keep")
		e.reserveWant(e.q, b, "keep")
	})
}
