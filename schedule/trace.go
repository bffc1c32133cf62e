package schedule

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/hourglass-io/hourglass/internal/tracing"
	"github.com/hourglass-io/hourglass/queue"
)

// Span attributes of a fire (docs/tracing.md), beside the messaging ones
// of the job it puts.
const (
	attrName     = attribute.Key("hourglass.schedule.name")
	attrTick     = attribute.Key("hourglass.schedule.tick")
	attrLateness = attribute.Key("hourglass.schedule.lateness_ms")
	attrSkipped  = attribute.Key("hourglass.schedule.skipped")
	attrManual   = attribute.Key("hourglass.schedule.manual")
	attrOutcome  = attribute.Key("hourglass.schedule.outcome")
)

// fire calls the store's Fire inside a span "schedule fire" (a producer:
// it puts the tick's job, which carries the span's context, so that the
// span that processes the job is its child), when tracing is on. tube is
// the schedule's tube when known.
func (c *Client) fire(ctx context.Context, req FireRequest, tube string) (FireResult, error) {
	tr := c.trace.Tracer()
	if tr == nil {
		return c.store.Fire(ctx, req)
	}
	attrs := []attribute.KeyValue{
		semconv.MessagingSystemKey.String(queue.System),
		semconv.MessagingOperationName("fire"),
		semconv.MessagingOperationTypeSend,
		attrName.String(req.Name),
		attrManual.Bool(req.Manual),
	}
	if tube != "" {
		attrs = append(attrs, semconv.MessagingDestinationName(tube))
	}
	if !req.Tick.IsZero() {
		attrs = append(attrs, attrTick.String(req.Tick.UTC().Format(time.RFC3339Nano)))
	}
	if req.Skipped > 0 {
		attrs = append(attrs, attrSkipped.Int(req.Skipped))
	}
	ctx, span := tr.Start(ctx, "schedule fire", trace.WithSpanKind(trace.SpanKindProducer), trace.WithAttributes(attrs...))
	defer span.End()
	req.TraceContext = queue.TraceContextOf(ctx)
	res, err := c.store.Fire(ctx, req)
	outcome := "fired"
	switch {
	case errors.Is(err, ErrConflict), errors.Is(err, ErrNotFound):
		outcome = "conflict" // another process fired it, or it changed
	case errors.Is(err, ErrNotDue):
		outcome = "not_due"
	case err != nil:
		outcome = "error"
		tracing.Fail(span, err)
	case !res.Fired:
		outcome = "advanced" // only the schedule's next tick moved
	}
	span.SetAttributes(attrOutcome.String(outcome))
	if err == nil && res.Fired {
		span.SetAttributes(semconv.MessagingMessageID(queue.ID(res.JobID).String()))
		if len(res.State.Last) > 0 && res.State.Last[0].JobID == res.JobID {
			f := res.State.Last[0]
			span.SetAttributes(attrLateness.Float64(tracing.MS(f.Lateness)), attrTick.String(f.Tick.UTC().Format(time.RFC3339Nano)))
			if tube == "" {
				span.SetAttributes(semconv.MessagingDestinationName(res.State.Job.Tube))
			}
		}
	}
	return res, err
}
