package tracing

import (
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Fail records err on span and gives the span the error status: how every
// span of hourglass reports a failed call.
func Fail(span trace.Span, err error) {
	span.RecordError(err)
	span.SetStatus(codes.Error, err.Error())
}

// MS returns d in milliseconds with its fraction, as the spans' duration
// attributes that are floats carry it (the ones named *_ms,
// docs/tracing.md).
func MS(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
