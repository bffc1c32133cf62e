package queue_test

import (
	"context"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/hourglass-io/hourglass/memstore"
	"github.com/hourglass-io/hourglass/queue"
)

// discard is a span exporter that drops what it is given: the cost of
// making, ending and batching spans without that of a network.
type discard struct{}

func (discard) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discard) Shutdown(context.Context) error                             { return nil }

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkJobCPU is the CPU of the process per job (user and system,
// getrusage) over the embedded engine: a Put of a 100-byte job, then a
// Worker (concurrency 1) that reserves and runs it and deletes it with
// its next reserve. "no-tracer" has no provider (nor a global one): the
// cost of tracing when it is off (docs/tracing.md, "Cost"); "sampled"
// has an SDK provider sampling every trace, its spans batched to an
// exporter that drops them.
//
//	go test -run '^$' -bench JobCPU -benchtime 20000x ./queue/
func BenchmarkJobCPU(b *testing.B) {
	for _, c := range []struct {
		name string
		tp   func() (trace.TracerProvider, func())
	}{
		{"no-tracer", func() (trace.TracerProvider, func()) { return nil, func() {} }},
		{"sampled", func() (trace.TracerProvider, func()) {
			tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithBatcher(discard{}))
			return tp, func() { _ = tp.Shutdown(context.Background()) }
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			tp, stop := c.tp()
			defer stop()
			s, err := memstore.New(nil)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			q, err := queue.New(s, &queue.Options{TracerProvider: tp})
			if err != nil {
				b.Fatal(err)
			}
			defer q.Close()
			var done atomic.Int64
			all := make(chan struct{})
			n := int64(b.N)
			w, err := queue.NewWorker(q, queue.HandlerFunc(func(context.Context, queue.Job) error {
				if done.Add(1) == n {
					close(all)
				}
				return nil
			}), &queue.WorkerOptions{Tubes: []string{"t"}})
			if err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			ran := make(chan error, 1)
			go func() { ran <- w.Run(ctx) }()
			job := queue.NewJob{Body: make([]byte, 100)}
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := cpuTime()
			for range b.N {
				if _, err := q.Put(ctx, "t", job); err != nil {
					b.Fatal(err)
				}
			}
			<-all
			cpu := cpuTime() - cpu0
			b.StopTimer()
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/job")
			_ = w.Shutdown(context.Background())
			cancel()
			<-ran
		})
	}
}
