//go:build unix

package main

import (
	"context"
	"encoding/hex"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/internal/testkit/redistest"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
)

// receiver is an OTLP trace receiver over gRPC: the collector's
// TraceService, keeping every span it is sent.
type receiver struct {
	collectortrace.UnimplementedTraceServiceServer
	addr string

	mu      sync.Mutex
	changed chan struct{} // closed and replaced at each export
	spans   []*tracepb.Span
	service map[string]string // span id (hex) → service.name of its resource
}

func startReceiver(t *testing.T) *receiver {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &receiver{addr: l.Addr().String(), changed: make(chan struct{}), service: map[string]string{}}
	g := grpc.NewServer()
	collectortrace.RegisterTraceServiceServer(g, r)
	go g.Serve(l)
	t.Cleanup(g.Stop)
	return r
}

func (r *receiver) Export(_ context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rs := range req.ResourceSpans {
		svc := ""
		for _, a := range rs.GetResource().GetAttributes() {
			if a.Key == "service.name" {
				svc = a.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				r.spans = append(r.spans, s)
				r.service[hex.EncodeToString(s.SpanId)] = svc
			}
		}
	}
	close(r.changed)
	r.changed = make(chan struct{})
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

// waitSpan waits until a span that match accepts has come, and returns it.
func (r *receiver) waitSpan(t *testing.T, what string, match func(*tracepb.Span) bool) *tracepb.Span {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		r.mu.Lock()
		for _, s := range r.spans {
			if match(s) {
				r.mu.Unlock()
				return s
			}
		}
		ch := r.changed
		r.mu.Unlock()
		select {
		case <-ch:
		case <-deadline:
			r.mu.Lock()
			defer r.mu.Unlock()
			var names []string
			for _, s := range r.spans {
				names = append(names, s.Name)
			}
			t.Fatalf("no span %s among the %d received: %q", what, len(r.spans), names)
		}
	}
}

func attr(s *tracepb.Span, key string) string {
	for _, a := range s.Attributes {
		if a.Key == key {
			return a.GetValue().GetStringValue()
		}
	}
	return ""
}

// One trace from a producer's traceparent to the command that runs the
// job: "hourglass put --http" with TRACEPARENT puts a job through the HTTP
// API of a serve that exports OTLP (gRPC) to a receiver in the test; the
// receiver gets serve's HTTP server span, a child of the producer's span,
// and the queue's put span under it; "hourglass work" hands the command
// the put span's context as TRACEPARENT. On both back ends.
func TestTraceFromPutToWork(t *testing.T) {
	rs := redistest.Standalone(t)
	for _, store := range []string{"mem://", "redis://" + rs.Addr + "/0"} {
		t.Run(strings.SplitN(store, ":", 2)[0], func(t *testing.T) {
			rec := startReceiver(t)
			p := startServe(t, []string{
				"OTEL_EXPORTER_OTLP_ENDPOINT=http://" + rec.addr,
				"OTEL_EXPORTER_OTLP_PROTOCOL=grpc",
				"OTEL_SERVICE_NAME=hourglass-under-test",
			}, "--store", store)
			p.log.waitFor(t, "exporting traces over OTLP", 10*time.Second)
			env := append(p.env, "HOURGLASS_HTTP=http://"+p.httpAddr)
			tube := "traced-" + strings.ReplaceAll(t.Name(), "/", "-")

			const traceID, parentID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
			putEnv := append(env, "TRACEPARENT=00-"+traceID+"-"+parentID+"-01", "TRACESTATE=vendor=x1")
			start := time.Now()
			out := ok(t, putEnv, "put", "--http", "http://"+p.httpAddr, "--tube", tube, "hello")
			putWall := time.Since(start)
			id := kv(t, out)["id"]
			if id == "" {
				t.Fatalf("put printed %q", out)
			}

			httpSpan := rec.waitSpan(t, "of the HTTP put", func(s *tracepb.Span) bool {
				return s.Kind == tracepb.Span_SPAN_KIND_SERVER && hex.EncodeToString(s.ParentSpanId) == parentID
			})
			if got := hex.EncodeToString(httpSpan.TraceId); got != traceID {
				t.Errorf("the HTTP span's trace %s, want the producer's %s", got, traceID)
			}
			putSpan := rec.waitSpan(t, "put "+tube, func(s *tracepb.Span) bool { return s.Name == "put "+tube })
			if string(putSpan.ParentSpanId) != string(httpSpan.SpanId) || string(putSpan.TraceId) != string(httpSpan.TraceId) {
				t.Errorf("the put span's parent %x (trace %x), want the HTTP span %x", putSpan.ParentSpanId, putSpan.TraceId, httpSpan.SpanId)
			}
			if putSpan.Kind != tracepb.Span_SPAN_KIND_PRODUCER {
				t.Errorf("the put span's kind %v, want producer", putSpan.Kind)
			}
			for k, want := range map[string]string{
				"messaging.system": "hourglass", "messaging.destination.name": tube,
				"messaging.operation.name": "put", "messaging.operation.type": "send", "messaging.message.id": id,
			} {
				if got := attr(putSpan, k); got != want {
					t.Errorf("the put span's %s = %q, want %q", k, got, want)
				}
			}
			if svc := rec.service[hex.EncodeToString(putSpan.SpanId)]; svc != "hourglass-under-test" {
				t.Errorf("the put span's service.name %q, want OTEL_SERVICE_NAME's", svc)
			}
			// Timing: the put inside the HTTP request, both inside the
			// command's wall time.
			if putSpan.StartTimeUnixNano < httpSpan.StartTimeUnixNano || putSpan.EndTimeUnixNano > httpSpan.EndTimeUnixNano {
				t.Errorf("the put span [%d, %d] is not inside the HTTP span [%d, %d]", putSpan.StartTimeUnixNano, putSpan.EndTimeUnixNano, httpSpan.StartTimeUnixNano, httpSpan.EndTimeUnixNano)
			}
			if d := time.Duration(httpSpan.EndTimeUnixNano - httpSpan.StartTimeUnixNano); d > putWall {
				t.Errorf("the HTTP span lasted %v, longer than the whole put command (%v)", d, putWall)
			}

			// The worker hands the command the put span's context.
			w := startWork(t, env, "--tube", tube, "--", "sh", "-c", `echo "tp=$TRACEPARENT ts=$TRACESTATE"`)
			want := "tp=00-" + traceID + "-" + hex.EncodeToString(putSpan.SpanId) + "-01 ts=vendor=x1"
			w.stdout.waitFor(t, want, 30*time.Second)
			if code := w.stop(t, 30*time.Second); code != 0 {
				t.Errorf("work exited %d", code)
			}
		})
	}
}
