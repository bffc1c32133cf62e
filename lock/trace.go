package lock

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/hourglass-io/hourglass/internal/tracing"
)

// Span attributes of an obtain (docs/tracing.md).
const (
	attrName     = attribute.Key("hourglass.lock.name")
	attrLimit    = attribute.Key("hourglass.lock.limit")
	attrWait     = attribute.Key("hourglass.lock.wait") // bool: the call waits for a free slot (Obtain, Acquire)
	attrFair     = attribute.Key("hourglass.lock.fair")
	attrWaitMS   = attribute.Key("hourglass.lock.wait_ms")
	attrFence    = attribute.Key("hourglass.lock.fence")
	attrObtained = attribute.Key("hourglass.lock.obtained")
)

// obtainTraced is obtain inside a span "lock obtain": from the call to the
// grant (or the failure), with the time waited, whether the lock was
// obtained and, when it was, the grant's fence.
func (c *Client) obtainTraced(ctx context.Context, tr trace.Tracer, name string, limit int, opts *ObtainOptions, block bool) (*Lock, error) {
	start := time.Now()
	fair := opts != nil && opts.Fair && block
	ctx, span := tr.Start(ctx, "lock obtain", trace.WithTimestamp(start), trace.WithAttributes(
		attrName.String(name), attrLimit.Int(limit), attrWait.Bool(block), attrFair.Bool(fair),
	))
	l, err := c.obtainUntraced(ctx, name, limit, opts, block)
	end := time.Now()
	span.SetAttributes(attrWaitMS.Float64(tracing.MS(end.Sub(start))), attrObtained.Bool(err == nil))
	if err == nil {
		span.SetAttributes(attrFence.Int64(int64(l.fence)))
	} else if !errors.Is(err, ErrNotObtained) || ctx.Err() != nil || block {
		// TryObtain finding the lock held is an answer, not a failure.
		tracing.Fail(span, err)
	}
	span.End(trace.WithTimestamp(end))
	return l, err
}
