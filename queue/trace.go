package queue

import (
	"context"
	"encoding/hex"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/hourglass-io/hourglass/internal/tracing"
)

// Trace context (docs/tracing.md). A job carries the W3C trace context of
// the span that put it, so that the span that processes it, in whatever
// process or language, joins the producer's trace.

// MaxTraceState is the most bytes of a tracestate a job keeps: the 512
// that W3C Trace Context asks every hop to pass on.
const MaxTraceState = 512

// traceparentLen is the length of a version-00 traceparent:
// "00-" 32 hex "-" 16 hex "-" 2 hex.
const traceparentLen = 55

// System is the value of the messaging.system attribute of hourglass's spans.
const System = "hourglass"

// CheckTraceContext reports whether tc is a trace context a job can carry:
// "" (none), a version-00 W3C traceparent ("00-<trace id>-<span id>-<flags>",
// lowercase hex, neither id all zeros), or a traceparent, ";" and a valid
// W3C tracestate of at most MaxTraceState bytes. It returns ErrInvalid
// naming the field otherwise.
func CheckTraceContext(tc string) error {
	if tc == "" {
		return nil
	}
	if _, err := parseTraceContext(tc); err != nil {
		return invalid("TraceContext", "%q: %s", cut(tc, 80), err)
	}
	return nil
}

func cut(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

type traceErr string

func (e traceErr) Error() string { return string(e) }

// parseTraceContext reads a job's trace context ("traceparent" or
// "traceparent;tracestate") into a remote span context.
func parseTraceContext(tc string) (trace.SpanContext, error) {
	tp, ts, hasState := strings.Cut(tc, ";")
	if len(tp) != traceparentLen || tp[:3] != "00-" || tp[35] != '-' || tp[52] != '-' {
		return trace.SpanContext{}, traceErr("want a version-00 traceparent, 00-<32 hex>-<16 hex>-<2 hex>")
	}
	for _, c := range []byte(tp[3:35] + tp[36:52] + tp[53:]) {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return trace.SpanContext{}, traceErr("the traceparent's ids and flags are lowercase hex")
		}
	}
	tid, err1 := trace.TraceIDFromHex(tp[3:35])
	sid, err2 := trace.SpanIDFromHex(tp[36:52])
	if err1 != nil || err2 != nil {
		return trace.SpanContext{}, traceErr("the trace id and the span id must not be all zeros")
	}
	var flags [1]byte
	if _, err := hex.Decode(flags[:], []byte(tp[53:])); err != nil {
		return trace.SpanContext{}, traceErr("bad trace flags")
	}
	cfg := trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.TraceFlags(flags[0]), Remote: true}
	if hasState {
		if len(ts) > MaxTraceState {
			return trace.SpanContext{}, traceErr("tracestate of " + strconv.Itoa(len(ts)) + " bytes, want at most " + strconv.Itoa(MaxTraceState))
		}
		st, err := trace.ParseTraceState(ts)
		if err != nil {
			return trace.SpanContext{}, traceErr("bad tracestate: " + err.Error())
		}
		cfg.TraceState = st
	}
	return trace.NewSpanContext(cfg), nil
}

// FormatTraceContext returns sc as a job carries it: its traceparent, and
// ";" and its tracestate when it has one; "" when sc is not valid. A
// tracestate longer than MaxTraceState is left out.
func FormatTraceContext(sc trace.SpanContext) string {
	if !sc.IsValid() {
		return ""
	}
	var b [traceparentLen]byte
	tid, sid := sc.TraceID(), sc.SpanID()
	copy(b[:], "00-")
	hex.Encode(b[3:35], tid[:])
	b[35] = '-'
	hex.Encode(b[36:52], sid[:])
	b[52] = '-'
	hex.Encode(b[53:], []byte{byte(sc.TraceFlags())})
	s := string(b[:])
	if ts := sc.TraceState(); ts.Len() > 0 {
		if st := ts.String(); len(st) <= MaxTraceState {
			s += ";" + st
		}
	}
	return s
}

// TraceContextOf returns the trace context of the span in ctx, as a job
// carries it, or "" when ctx has none. Queue.Put gives it to the jobs put
// without a TraceContext of their own.
func TraceContextOf(ctx context.Context) string {
	return FormatTraceContext(trace.SpanContextFromContext(ctx))
}

// SpanContext returns the producer's span context the job carries (remote),
// or an invalid one when it carries none.
func (j Job) SpanContext() trace.SpanContext {
	sc, _ := parseTraceContext(j.TraceContext)
	return sc
}

// Context returns ctx with the job's producer span as its remote parent,
// so that spans a handler starts from it join the producer's trace; ctx
// itself when the job carries no trace context. A Worker's handler gets
// such a context (or one with its consumer span, when tracing is on).
func (j Job) Context(ctx context.Context) context.Context {
	if j.TraceContext == "" {
		return ctx
	}
	sc := j.SpanContext()
	if !sc.IsValid() {
		return ctx
	}
	return trace.ContextWithRemoteSpanContext(ctx, sc)
}

// Span names and attributes (docs/tracing.md): OpenTelemetry's messaging
// conventions, with messaging.system "hourglass" and the tube as the
// destination.

func attrSystem() attribute.KeyValue { return semconv.MessagingSystemKey.String(System) }

// startPut starts the producer span of a put of n jobs into tube, or
// returns ctx and nil when tracing is off.
func (q *Queue) startPut(ctx context.Context, tube string, jobs []NewJob) (context.Context, trace.Span) {
	tr := q.trace.Tracer()
	if tr == nil {
		return ctx, nil
	}
	attrs := []attribute.KeyValue{
		attrSystem(),
		semconv.MessagingOperationName("put"),
		semconv.MessagingOperationTypeSend,
		semconv.MessagingDestinationName(tube),
	}
	if len(jobs) > 1 {
		attrs = append(attrs, semconv.MessagingBatchMessageCount(len(jobs)))
	} else {
		attrs = append(attrs, semconv.MessagingMessageBodySize(len(jobs[0].Body)))
		if jobs[0].Delay > 0 {
			attrs = append(attrs, attribute.Int64("hourglass.job.delay_ms", jobs[0].Delay.Milliseconds()))
		}
	}
	return tr.Start(ctx, "put "+tube, trace.WithSpanKind(trace.SpanKindProducer), trace.WithAttributes(attrs...))
}

// endPut ends a put's span with the IDs it stored, or its error.
func endPut(span trace.Span, res []PutResult, err error) {
	if span == nil {
		return
	}
	if err != nil {
		tracing.Fail(span, err)
	} else if len(res) == 1 {
		span.SetAttributes(semconv.MessagingMessageID(res[0].ID.String()))
		if res[0].Duplicate {
			span.SetAttributes(attribute.Bool("hourglass.job.duplicate", true))
		}
	}
	span.End()
}

// startProcess starts the consumer span of a Worker's handler of job:
// a child of the producer's span the job carries (linked to it as well,
// as the messaging conventions ask), started when the handler starts; the
// job's wait in the queue is the gap between the producer's span and it.
// The job's delete (with the worker's next reserve), release or bury is an
// event on it, with the reason.
// Without tracing it returns the job's context (Job.Context) and nil.
func (q *Queue) startProcess(ctx context.Context, job Job) (context.Context, trace.Span) {
	tr := q.trace.Tracer()
	if tr == nil {
		return job.Context(ctx), nil
	}
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindConsumer)}
	sc := job.SpanContext()
	if sc.IsValid() {
		ctx = trace.ContextWithRemoteSpanContext(ctx, sc)
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: sc}))
	}
	opts = append(opts, trace.WithAttributes(
		attrSystem(),
		semconv.MessagingOperationName("process"),
		semconv.MessagingOperationTypeProcess,
		semconv.MessagingDestinationName(job.Tube),
		semconv.MessagingMessageID(job.ID.String()),
		semconv.MessagingMessageBodySize(len(job.Body)),
		semconv.MessagingConsumerGroupName(q.owner),
		attribute.Int("hourglass.job.reserves", int(job.Reserves)),
		attribute.Int64("hourglass.job.ttr_ms", job.TTR.Milliseconds()),
	))
	return tr.Start(ctx, "process "+job.Tube, opts...)
}

// settled notes on the span in ctx, when it records, that job id was
// settled (delete, release, bury): an event with the reason and the
// outcome. It costs nothing when ctx has no recording span.
func settled(ctx context.Context, op string, id ID, reason string, delay time.Duration, err error) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	attrs := []attribute.KeyValue{semconv.MessagingOperationName(op), semconv.MessagingMessageID(id.String())}
	if reason != "" {
		attrs = append(attrs, attribute.String("hourglass.job.reason", reason))
	}
	if delay > 0 {
		attrs = append(attrs, attribute.Int64("hourglass.job.delay_ms", delay.Milliseconds()))
	}
	if err != nil {
		attrs = append(attrs, attribute.String("hourglass.error", err.Error()))
	}
	span.AddEvent(op, trace.WithAttributes(attrs...))
}
