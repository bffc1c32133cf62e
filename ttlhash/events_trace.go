package ttlhash

import (
	"time"

	"github.com/hourglass-io/hourglass/internal/evtrace"
)

// The hooks a benchmark sets to see where expiry events wait
// (internal/evtrace): each does nothing but a nil check unless
// evtrace.OnBatch is set.

// traceStart begins the trace of a pass of Consume's loop.
func (c *consuming) traceStart() evtrace.Batch {
	if evtrace.OnBatch == nil {
		return evtrace.Batch{}
	}
	return evtrace.Batch{Consumer: c.consumer, Woken: c.wokeAt, ReadStart: time.Now()}
}

// traceRead marks the end of the pass's read.
func (c *consuming) traceRead(tr *evtrace.Batch) {
	if evtrace.OnBatch != nil {
		tr.ReadEnd = time.Now()
	}
}

// traceHandled marks the handling of event id.
func (c *consuming) traceHandled(tr *evtrace.Batch, id string) {
	if evtrace.OnBatch != nil {
		tr.IDs, tr.Handled = append(tr.IDs, id), append(tr.Handled, time.Now())
	}
}

// traceAcked reports tr, a batch whose acknowledgement went out with a
// read (AckStart set) and has just returned.
func (c *consuming) traceAcked(tr evtrace.Batch) {
	if evtrace.OnBatch != nil {
		tr.AckEnd = time.Now()
		evtrace.OnBatch(tr)
	}
}

// traceWoken marks the end of a wait.
func (c *consuming) traceWoken() {
	if evtrace.OnBatch != nil {
		c.wokeAt = time.Now()
	}
}
