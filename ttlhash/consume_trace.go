package ttlhash

import (
	"time"

	"github.com/hourglass-io/hourglass/internal/evtrace"
)

// The hook a benchmark sets to see where expiry events wait
// (internal/evtrace.OnBatch) is taken once, when Consume starts. A
// Consume started without it has no trace: every method of a nil
// *batchTrace returns at once, and the loop neither reads the clock nor
// allocates for a trace.

// consumeTrace is a Consume's tracing: the hook (nil: none) and when the
// wait before the current pass ended.
type consumeTrace struct {
	onBatch func(evtrace.Batch)
	wokeAt  time.Time
}

// batchTrace is the trace of one pass of Consume's loop, reported when
// its acknowledgement has returned.
type batchTrace struct {
	evtrace.Batch
	report func(evtrace.Batch)
}

// startTrace returns a Consume's tracing, per the hook now.
func startTrace() consumeTrace { return consumeTrace{onBatch: evtrace.OnBatch} }

// traceStart begins the trace of a pass of Consume's loop (nil unless it
// traces).
func (c *consuming) traceStart() *batchTrace {
	if c.trace.onBatch == nil {
		return nil
	}
	tr := &batchTrace{report: c.trace.onBatch}
	tr.Consumer, tr.Woken, tr.ReadStart = c.consumer, c.trace.wokeAt, time.Now()
	c.trace.wokeAt = time.Time{}
	return tr
}

// traceWoken marks the end of a wait.
func (c *consuming) traceWoken() {
	if c.trace.onBatch != nil {
		c.trace.wokeAt = time.Now()
	}
}

// read marks the end of the pass's read.
func (tr *batchTrace) read() {
	if tr != nil {
		tr.ReadEnd = time.Now()
	}
}

// handled marks the handling of event id.
func (tr *batchTrace) handled(id string) {
	if tr != nil {
		tr.IDs, tr.Handled = append(tr.IDs, id), append(tr.Handled, time.Now())
	}
}

// ackStart marks the start of the batch's acknowledgement.
func (tr *batchTrace) ackStart() {
	if tr != nil {
		tr.AckStart = time.Now()
	}
}

// acked marks its end and reports the trace.
func (tr *batchTrace) acked() {
	if tr != nil {
		tr.AckEnd = time.Now()
		tr.report(tr.Batch)
	}
}
