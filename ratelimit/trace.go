package ratelimit

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/hourglass-io/hourglass/internal/tracing"
)

// Span attributes of a Wait (docs/tracing.md).
const (
	attrKey      = attribute.Key("hourglass.ratelimit.key")
	attrN        = attribute.Key("hourglass.ratelimit.n")
	attrDecision = attribute.Key("hourglass.ratelimit.decision")
	attrSlotMS   = attribute.Key("hourglass.ratelimit.slot_ms")
	attrWaitMS   = attribute.Key("hourglass.ratelimit.wait_ms")
	attrStoreErr = attribute.Key("hourglass.ratelimit.store_error")
)

// The decisions a Wait's span records.
const (
	decisionPass     = "pass"      // the slot was now: no wait
	decisionWaited   = "waited"    // waited for the slot, which came
	decisionTooLong  = "too_long"  // the slot lay beyond ctx's deadline (ErrWaitTooLong): nothing charged
	decisionCanceled = "cancelled" // ctx ended while waiting: the slot given back
	decisionError    = "error"     // bad input or the store failed
)

// waitTraced is WaitN inside a span "ratelimit wait", from the call to its
// return, with the slot's delay as the store reserved it, the time waited
// and the decision.
func (l *Limiter) waitTraced(ctx context.Context, tr trace.Tracer, key string, n int, limits []Limit) error {
	start := time.Now()
	ctx, span := tr.Start(ctx, "ratelimit wait", trace.WithTimestamp(start), trace.WithAttributes(attrKey.String(key), attrN.Int(n)))
	r, err := l.waitN(ctx, key, n, limits)
	end := time.Now()
	decision := decisionError
	switch {
	case err == nil && r != nil && r.delay > 0:
		decision = decisionWaited
	case err == nil:
		decision = decisionPass
	case errors.Is(err, ErrWaitTooLong):
		decision = decisionTooLong
	case r != nil && ctx.Err() != nil:
		decision = decisionCanceled
	}
	attrs := []attribute.KeyValue{attrDecision.String(decision), attrWaitMS.Float64(tracing.MS(end.Sub(start)))}
	if r != nil {
		attrs = append(attrs, attrSlotMS.Float64(tracing.MS(r.delay)))
		if r.storeEr != nil {
			attrs = append(attrs, attrStoreErr.String(r.storeEr.Error()))
		}
	}
	span.SetAttributes(attrs...)
	if decision == decisionError || decision == decisionCanceled {
		tracing.Fail(span, err)
	}
	span.End(trace.WithTimestamp(end))
	return err
}
