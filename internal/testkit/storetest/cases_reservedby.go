package storetest

import (
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/queue"
)

// testReservedBy: a reserved job's stats name the owner of its
// reservation; once it is released, buried or timed out, they name none.
func testReservedBy(t *testing.T, s *suite) {
	e := s.env(t)
	id := e.put("rb", queue.NewJob{Body: []byte("held"), TTR: time.Minute})
	if got := e.statsJob(id).ReservedBy; got != "" {
		t.Errorf("ready: ReservedBy %q, want none", got)
	}
	e.reserveWant(e.q2, id, "rb")
	if got := e.statsJob(id).ReservedBy; got != otherOwner {
		t.Errorf("reserved by %q: ReservedBy %q", otherOwner, got)
	}
	e.ok("Release", e.q2.Release(e.ctx, id, 0, 0))
	if got := e.statsJob(id).ReservedBy; got != "" {
		t.Errorf("released: ReservedBy %q, want none", got)
	}
	e.reserveWant(e.q, id, "rb")
	if got := e.statsJob(id).ReservedBy; got != e.q.Owner() {
		t.Errorf("reserved by %q: ReservedBy %q", e.q.Owner(), got)
	}
	e.advance(time.Minute)
	if got := e.statsJob(id).ReservedBy; got != "" {
		t.Errorf("after its TTR ran out: ReservedBy %q, want none", got)
	}
}
