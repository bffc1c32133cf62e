package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"google.golang.org/grpc"

	"github.com/hourglass-io/hourglass/internal/buildinfo"
)

// tracingOptions say where serve sends its spans (docs/tracing.md): OTLP
// over gRPC or HTTP, as OpenTelemetry's standard variables say
// (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, the
// protocol in OTEL_EXPORTER_OTLP_PROTOCOL or ..._TRACES_PROTOCOL, the
// service in OTEL_SERVICE_NAME, the sampler in OTEL_TRACES_SAMPLER), or
// the flags.
type tracingOptions struct {
	endpoint string // --otlp-endpoint
	protocol string // --otlp-protocol
}

func (o *tracingOptions) define(fs *flag.FlagSet) {
	fs.StringVar(&o.endpoint, "otlp-endpoint", "", "export traces over OTLP to `URL` (http://host:port); default: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT, none when neither is set")
	fs.StringVar(&o.protocol, "otlp-protocol", "", "OTLP `protocol`: grpc or http/protobuf; default: OTEL_EXPORTER_OTLP_TRACES_PROTOCOL or OTEL_EXPORTER_OTLP_PROTOCOL, else http/protobuf")
}

// protocolOf is the OTLP protocol the flags and the environment name.
func (o *tracingOptions) protocolOf() string {
	for _, p := range []string{o.protocol, os.Getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"), os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL")} {
		if p != "" {
			return p
		}
	}
	return "http/protobuf"
}

// enabled reports whether traces are exported: an endpoint is given, and
// OTEL_TRACES_EXPORTER (or OTEL_SDK_DISABLED) does not turn them off.
func (o *tracingOptions) enabled() bool {
	if strings.EqualFold(os.Getenv("OTEL_SDK_DISABLED"), "true") || os.Getenv("OTEL_TRACES_EXPORTER") == "none" {
		return false
	}
	return o.endpoint != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != ""
}

func (o *tracingOptions) validate() error {
	switch p := o.protocolOf(); p {
	case "grpc", "http/protobuf":
	default:
		return usagef("--otlp-protocol %q: want grpc or http/protobuf", p)
	}
	if o.endpoint != "" && !strings.HasPrefix(o.endpoint, "http://") && !strings.HasPrefix(o.endpoint, "https://") {
		return usagef("--otlp-endpoint %q: want a URL, http://host:port or https://host:port", o.endpoint)
	}
	return nil
}

// start installs the global TracerProvider and W3C propagator when traces
// are exported, and returns what ends it (flushing the spans still
// buffered); without an endpoint it changes nothing and every primitive
// stays untraced at no cost.
func (o *tracingOptions) start(ctx context.Context, log *slog.Logger) (stop func(context.Context) error, err error) {
	if !o.enabled() {
		return func(context.Context) error { return nil }, nil
	}
	var exp sdktrace.SpanExporter
	proto := o.protocolOf()
	switch proto {
	case "grpc":
		var opts []otlptracegrpc.Option
		if o.endpoint != "" {
			opts = append(opts, otlptracegrpc.WithEndpointURL(o.endpoint))
		}
		exp, err = otlptracegrpc.New(ctx, opts...)
	default:
		var opts []otlptracehttp.Option
		if o.endpoint != "" {
			opts = append(opts, otlptracehttp.WithEndpointURL(o.endpoint))
		}
		exp, err = otlptracehttp.New(ctx, opts...)
	}
	if err != nil {
		return nil, fmt.Errorf("the OTLP exporter: %w", err)
	}
	res, err := resource.Merge(resource.NewSchemaless(semconv.ServiceName("hourglass"), semconv.ServiceVersion(buildinfo.Read().Version)), resource.Environment())
	if err != nil {
		res = resource.Environment()
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp, sdktrace.WithBatchTimeout(time.Second)), sdktrace.WithResource(res))
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	log.Info("exporting traces over OTLP", "protocol", proto, "endpoint", o.endpoint)
	return tp.Shutdown, nil
}

// wrapHTTP traces each HTTP request (a server span, the parent of the
// spans of the primitives it calls), its name the route's pattern.
func wrapHTTP(h http.Handler) http.Handler {
	return otelhttp.NewHandler(h, "hourglass", otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string {
		if r.Pattern != "" {
			return r.Pattern
		}
		return r.Method
	}))
}

// grpcTracing traces each gRPC call of Envoy's rate limit service.
func grpcTracing() []grpc.ServerOption {
	return []grpc.ServerOption{grpc.StatsHandler(otelgrpc.NewServerHandler())}
}
