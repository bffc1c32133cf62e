package ttlhash

import (
	"time"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/hourglass-io/hourglass/internal/tracing"
)

// Span attributes of an expiry event handled (docs/tracing.md), beside
// OpenTelemetry's messaging ones: the hash is the destination, the event
// the message, the group the consumer group.
const (
	attrField       = attribute.Key("hourglass.hash.field")
	attrLateness    = attribute.Key("hourglass.expiry.lateness_ms")
	attrDelivery    = attribute.Key("hourglass.expiry.delivery_ms")
	attrRedelivered = attribute.Key("hourglass.expiry.redelivered")
)

// handleOne hands e to the handler, inside a consumer span "expired
// <hash>" from the handler's start to its end when tracing is on.
func (c *consuming) handleOne(e Event) error {
	tr := c.h.trace.Tracer()
	if tr == nil {
		return c.handle(c.ctx, e)
	}
	start := time.Now()
	attrs := []attribute.KeyValue{
		semconv.MessagingSystemKey.String("hourglass"),
		semconv.MessagingOperationName("expired"),
		semconv.MessagingOperationTypeProcess,
		semconv.MessagingDestinationName(e.Hash),
		semconv.MessagingMessageID(e.ID),
		semconv.MessagingConsumerGroupName(c.group),
		semconv.MessagingClientID(c.consumer),
		semconv.MessagingMessageBodySize(len(e.Value)),
		attrField.String(e.Field),
		attrRedelivered.Bool(e.Redelivered),
	}
	if !e.Deadline.IsZero() && !e.ExpiredAt.IsZero() {
		attrs = append(attrs, attrLateness.Float64(tracing.MS(e.ExpiredAt.Sub(e.Deadline))))
	}
	if !e.Deadline.IsZero() {
		attrs = append(attrs, attrDelivery.Float64(tracing.MS(start.Sub(e.Deadline))))
	}
	ctx, span := tr.Start(c.ctx, "expired "+e.Hash, trace.WithSpanKind(trace.SpanKindConsumer), trace.WithTimestamp(start), trace.WithAttributes(attrs...))
	err := c.handle(ctx, e)
	if err != nil {
		tracing.Fail(span, err)
	}
	span.End()
	return err
}
