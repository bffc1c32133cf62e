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
	// start puts a (priority pri) and b (pri+1), reserves a and ends its
	// reservation with end, which keeps the priority: a is then in state
	// st, with reason as its last error.
	start := func(t *testing.T, pri uint32, st queue.State, reason string, end func(e *env, a queue.ID) error) (e *env, a, b queue.ID) {
		e = s.env(t)
		a = e.putPri("keep", pri, "a")
		b = e.putPri("keep", pri+1, "b")
		e.reserveWant(e.q, a, "keep")
		e.ok("ending the reservation without a priority", end(e, a))
		if js := e.statsJob(a); js.Priority != pri || js.State != st || js.LastError != reason {
			t.Errorf("after keeping the priority: priority %d, state %v, last error %q; want %d, %v, %q",
				js.Priority, js.State, js.LastError, pri, st, reason)
		}
		return e, a, b
	}
	t.Run("release", func(t *testing.T) {
		e, a, b := start(t, 7, queue.Ready, "try again", func(e *env, a queue.ID) error {
			return e.q.ReleaseWith(e.ctx, a, queue.ReleaseOptions{Reason: "try again"})
		})
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
		e, a, b := start(t, 3, queue.Buried, "bad input", func(e *env, a queue.ID) error {
			return e.q.BuryWith(e.ctx, a, queue.BuryOptions{Reason: "bad input"})
		})
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
