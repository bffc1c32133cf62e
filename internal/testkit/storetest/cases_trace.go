package storetest

import (
	"strings"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/queue"
	"go.opentelemetry.io/otel/trace"
)

// Trace contexts the cases put jobs with (docs/tracing.md).
const (
	traceA = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	traceB = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00;congo=t61rcWkgMzE,rojo=00f067aa0ba902b7"
)

// testTraceContext: a job keeps the trace context it was put with,
// explicit or taken from the put's context, and every read of the job
// returns it (reserve, reserve by ID, peek, stats, PeekStateN), through
// releases, buries, kicks and timeouts; a job put without one has none.
func testTraceContext(t *testing.T, s *suite) {
	e := s.env(t)
	tid, _ := trace.TraceIDFromHex("5b8efff798038103d269b633813fc60c")
	sid, _ := trace.SpanIDFromHex("eee19b7ec3c1b174")
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, Remote: true})
	fromCtx := "00-5b8efff798038103d269b633813fc60c-eee19b7ec3c1b174-01"
	ctx := trace.ContextWithRemoteSpanContext(e.ctx, sc)

	plain := e.put("tc", queue.NewJob{Body: []byte("none"), Priority: 1})
	a := e.put("tc", queue.NewJob{Body: []byte("a"), Priority: 2, TraceContext: traceA})
	b := e.put("tc", queue.NewJob{Body: []byte("b"), Priority: 3, TraceContext: traceB, UniqueKey: "kb"})
	c, err := e.q.Put(ctx, "tc", queue.NewJob{Body: []byte("c"), Priority: 4, Delay: time.Minute})
	e.ok("Put with a span in ctx", err)
	// An explicit trace context wins over ctx's; a batch shares ctx's.
	rs, err := e.q.PutMany(ctx, "tc", []queue.NewJob{{Body: []byte("d"), Priority: 5, TraceContext: traceA}, {Body: []byte("e"), Priority: 6}})
	e.ok("PutMany with a span in ctx", err)
	d, f := rs[0].ID, rs[1].ID
	want := map[queue.ID]string{plain: "", a: traceA, b: traceB, c: fromCtx, d: traceA, f: fromCtx}

	for id, tc := range want {
		if st := e.statsJob(id); st.TraceContext != tc {
			e.t.Errorf("StatsJob(%d).TraceContext = %q, want %q", id, st.TraceContext, tc)
		}
		if j, err := e.q.Peek(e.ctx, id); err != nil || j.TraceContext != tc {
			e.t.Errorf("Peek(%d) = %q, %v; want trace context %q", id, j.TraceContext, err, tc)
		}
	}
	if js, err := e.q.PeekStateN(e.ctx, "tc", queue.Ready, 10); err != nil || len(js) != 5 {
		e.t.Fatalf("PeekStateN(ready) = %d jobs, %v; want 5", len(js), err)
	} else {
		for _, j := range js {
			if j.TraceContext != want[j.ID] {
				e.t.Errorf("PeekStateN: job %d trace context %q, want %q", j.ID, j.TraceContext, want[j.ID])
			}
		}
	}
	// Reserve returns it, in priority order.
	for _, id := range []queue.ID{plain, a, b} {
		j := e.reserveWant(e.q, id, "tc")
		if j.TraceContext != want[id] {
			e.t.Errorf("Reserve: job %d trace context %q, want %q", id, j.TraceContext, want[id])
		}
		if got := j.SpanContext(); got.IsValid() != (want[id] != "") {
			e.t.Errorf("Reserve: job %d SpanContext valid %v, trace context %q", id, got.IsValid(), want[id])
		}
	}
	if got := e.reserveJob(e.q, c); got.TraceContext != fromCtx {
		e.t.Errorf("ReserveJob(%d): trace context %q, want %q", c, got.TraceContext, fromCtx)
	}
	e.ok("Delete", e.q.Delete(e.ctx, plain))
	// Through a release, a bury and a kick, and a timeout.
	e.ok("Release", e.q.ReleaseWithReason(e.ctx, a, 2, 0, "again"))
	e.ok("Bury", e.q.BuryWithReason(e.ctx, b, 3, "aside"))
	if n, err := e.q.Kick(e.ctx, "tc", 1); err != nil || n != 1 {
		e.t.Fatalf("Kick = %d, %v", n, err)
	}
	e.advance(queue.DefaultTTR + time.Second) // c's reservation runs out
	for _, id := range []queue.ID{a, b, c} {
		j := e.reserveWant(e.q, id, "tc")
		if j.TraceContext != want[id] {
			e.t.Errorf("reserve after release/bury/kick/timeout: job %d trace context %q, want %q", id, j.TraceContext, want[id])
		}
	}
	sc2 := (queue.Job{TraceContext: traceB}).SpanContext()
	if !sc2.IsValid() || !sc2.IsRemote() || sc2.IsSampled() || sc2.TraceState().Get("rojo") != "00f067aa0ba902b7" {
		e.t.Errorf("SpanContext of %q = %+v", traceB, sc2)
	}
	if got := queue.FormatTraceContext(sc2); got != traceB {
		e.t.Errorf("FormatTraceContext(SpanContext(%q)) = %q", traceB, got)
	}
}

// traceContextInput is the bad trace contexts a put refuses with
// ErrInvalid, storing nothing.
var traceContextInput = []string{
	"garbage",
	"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",      // no flags
	"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",   // another version
	"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",   // uppercase
	"00-00000000000000000000000000000000-00f067aa0ba902b7-01",   // zero trace id
	"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",   // zero span id
	"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0g",   // bad flags
	traceA + ";not a tracestate",                                // bad tracestate
	traceA + ";k=" + strings.Repeat("v", queue.MaxTraceState),   // tracestate too long
	" 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",  // a space before
	"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\n", // a newline after
}
