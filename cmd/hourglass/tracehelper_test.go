//go:build unix

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/hourglass-io/hourglass"
	"github.com/hourglass-io/hourglass/lock"
	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/ratelimit"
	"github.com/hourglass-io/hourglass/schedule"
	"github.com/hourglass-io/hourglass/server/httpapi"
	"github.com/hourglass-io/hourglass/ttlhash"
)

// The programs of the cross-process tracing test (tracing_test.go): the
// test binary run again with HG_TRACE_HELPER set, so that the spans it
// checks come from processes other than the test's.
//
//	HG_TRACE_HELPER=node  a Go program on the back end HG_STORE that exports
//	                      its spans over OTLP (gRPC) to HG_OTLP as service
//	                      HG_SERVICE, given to every primitive through its
//	                      options' TracerProvider, with the roles of
//	                      HG_ROLES: http (the HTTP API, traced by otelhttp),
//	                      work (a queue.Worker on HG_TUBE), schedule (sets
//	                      schedule HG_SCHEDULE into HG_TUBE and fires it),
//	                      hash (an expiring field in hash HG_HASH and a
//	                      consumer of its expiry events). It prints what it
//	                      measured as lines of JSON and runs until its
//	                      standard input ends.
//	HG_TRACE_HELPER=cmd   the command of "hourglass work": a span "command"
//	                      whose parent is TRACEPARENT's, around 20 ms of work.

// helperLine is a line a helper prints: what it did and when (Unix ns).
type helperLine struct {
	What        string     `json:"what"` // http, obtaining, ran, fired, expired, command
	Addr        string     `json:"addr,omitempty"`
	ID          string     `json:"id,omitempty"`
	Body        string     `json:"body,omitempty"`
	Start       int64      `json:"start,omitempty"`
	End         int64      `json:"end,omitempty"`
	LimitWaits  [][2]int64 `json:"limit_waits,omitempty"`
	LockWait    [2]int64   `json:"lock_wait,omitzero"`
	Fence       uint64     `json:"fence,omitempty"`
	Lateness    int64      `json:"lateness,omitempty"`
	Deadline    int64      `json:"deadline,omitempty"`
	Traceparent string     `json:"traceparent,omitempty"`
}

// sayLines, in a node, takes the lines to print, so that printing one
// does not lengthen what it measured; nil in the command, which prints.
var sayLines chan helperLine

func say(l helperLine) {
	if sayLines != nil {
		sayLines <- l
		return
	}
	b, _ := json.Marshal(l)
	fmt.Printf("%s\n", b)
}

// traceHelper runs the helper HG_TRACE_HELPER names and returns its exit
// status.
func traceHelper() int {
	if err := runTraceHelper(os.Getenv("HG_TRACE_HELPER")); err != nil {
		fmt.Fprintln(os.Stderr, "trace helper:", err)
		return 1
	}
	return 0
}

func helperProvider(ctx context.Context) (*sdktrace.TracerProvider, error) {
	exp, err := otlptracegrpc.New(ctx, otlptracegrpc.WithEndpoint(os.Getenv("HG_OTLP")), otlptracegrpc.WithInsecure())
	if err != nil {
		return nil, err
	}
	// Spans go out in batches every 50 ms (an export as each span ends
	// would hold up the call that ends it); Shutdown sends the rest.
	return sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp, sdktrace.WithBatchTimeout(50*time.Millisecond)), sdktrace.WithSampler(sdktrace.AlwaysSample()),
		sdktrace.WithResource(resource.NewSchemaless(semconv.ServiceName(os.Getenv("HG_SERVICE"))))), nil
}

func runTraceHelper(kind string) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tp, err := helperProvider(ctx)
	if err != nil {
		return err
	}
	defer tp.Shutdown(context.WithoutCancel(ctx))
	if kind == "cmd" {
		return helperCommand(ctx, tp)
	}
	sayLines = make(chan helperLine, 64)
	go func() {
		for l := range sayLines {
			b, _ := json.Marshal(l)
			fmt.Printf("%s\n", b)
		}
	}()
	b, err := hourglass.Open(ctx, os.Getenv("HG_STORE"), nil)
	if err != nil {
		return err
	}
	defer b.Close()
	q, err := queue.New(b.Queue, &queue.Options{TracerProvider: tp})
	if err != nil {
		return err
	}
	defer q.Close()
	locks, err := lock.New(b.Locks, &lock.Options{TracerProvider: tp})
	if err != nil {
		return err
	}
	lim, err := ratelimit.New(b.Limits, &ratelimit.Options{TracerProvider: tp})
	if err != nil {
		return err
	}
	roles := map[string]bool{}
	for _, r := range strings.Split(os.Getenv("HG_ROLES"), ",") {
		roles[r] = true
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	tube := os.Getenv("HG_TUBE")
	if roles["http"] {
		hs := &httpapi.Server{Queue: q, Locks: locks, Limiter: lim, Wrap: func(h http.Handler) http.Handler {
			return otelhttp.NewHandler(h, "hourglass", otelhttp.WithTracerProvider(tp), otelhttp.WithPropagators(propagation.TraceContext{}))
		}}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		wg.Go(func() { _ = hs.Serve(l) })
		defer hs.Shutdown(context.WithoutCancel(ctx))
		say(helperLine{What: "http", Addr: l.Addr().String()})
	}
	if roles["work"] {
		h := queue.HandlerFunc(func(ctx context.Context, job queue.Job) error {
			return helperJob(ctx, job, locks, lim)
		})
		w, err := queue.NewWorker(q, h, &queue.WorkerOptions{Tubes: []string{tube}})
		if err != nil {
			return err
		}
		wg.Go(func() { _ = w.Run(ctx) })
		defer w.Shutdown(context.WithoutCancel(ctx))
	}
	if roles["schedule"] {
		sc, err := schedule.New(b.Schedules, &schedule.Options{TracerProvider: tp, PollInterval: 50 * time.Millisecond,
			OnFire: func(name string, f schedule.Fire) {
				say(helperLine{What: "fired", ID: queue.ID(f.JobID).String(), End: time.Now().UnixNano(), Lateness: int64(f.Lateness)})
			}})
		if err != nil {
			return err
		}
		if _, err := sc.Set(ctx, schedule.Schedule{Name: os.Getenv("HG_SCHEDULE"), Spec: "@every 1s", End: time.Now().Add(20 * time.Second),
			Job: schedule.Job{Tube: tube, Body: []byte("scheduled")}}); err != nil {
			return err
		}
		wg.Go(func() { _ = sc.Run(ctx) })
	}
	if roles["hash"] {
		if err := helperHash(ctx, &wg, b, tp); err != nil {
			return err
		}
	}
	// Until the test closes the standard input.
	_, _ = bufio.NewReader(os.Stdin).ReadString(0)
	return nil
}

// helperJob is the Go worker's handler: a job "full" waits twice on a
// rate limit of one event per 200 ms (the second wait is the slot's),
// then obtains the lock HG_LOCK, which the test holds until it reads
// "obtaining", then works 20 ms; any other job only works 20 ms.
func helperJob(ctx context.Context, job queue.Job, locks *lock.Client, lim *ratelimit.Limiter) error {
	out := helperLine{What: "ran", ID: job.ID.String(), Body: string(job.Body), Start: time.Now().UnixNano()}
	if string(job.Body) == "full" {
		for range 2 {
			t0 := time.Now()
			if err := lim.Wait(ctx, "traced-"+job.ID.String(), ratelimit.Every(200*time.Millisecond)); err != nil {
				return err
			}
			out.LimitWaits = append(out.LimitWaits, [2]int64{t0.UnixNano(), time.Now().UnixNano()})
		}
		say(helperLine{What: "obtaining", ID: job.ID.String()})
		t0 := time.Now()
		l, err := locks.Obtain(ctx, os.Getenv("HG_LOCK"), &lock.ObtainOptions{TTL: 10 * time.Second})
		if err != nil {
			return err
		}
		out.LockWait = [2]int64{t0.UnixNano(), time.Now().UnixNano()}
		out.Fence = l.Fence()
		time.Sleep(20 * time.Millisecond) // the job's work, under the lock
		if err := l.Release(ctx); err != nil {
			return err
		}
	} else {
		time.Sleep(20 * time.Millisecond) // the job's work
	}
	out.End = time.Now().UnixNano()
	say(out)
	return nil
}

// helperHash sets a field of HG_HASH to expire in 300 ms and consumes the
// hash's expiry events.
func helperHash(ctx context.Context, wg *sync.WaitGroup, b *hourglass.Backend, tp *sdktrace.TracerProvider) error {
	hs, err := ttlhash.New(b.Hashes, &ttlhash.Options{TracerProvider: tp})
	if err != nil {
		return err
	}
	sw, err := ttlhash.NewSweeper(b.Hashes, nil)
	if err != nil {
		return err
	}
	if err := sw.Start(); err != nil {
		return err
	}
	go func() { <-ctx.Done(); sw.Close() }()
	group := "traced"
	if err := hs.CreateGroup(ctx, group); err != nil {
		return err
	}
	name := os.Getenv("HG_HASH")
	wg.Go(func() {
		_ = hs.Consume(ctx, group, "c1", func(ctx context.Context, e ttlhash.Event) error {
			if e.Hash != name {
				return nil
			}
			start := time.Now()
			time.Sleep(10 * time.Millisecond) // the event's work
			say(helperLine{What: "expired", ID: e.ID, Start: start.UnixNano(), End: time.Now().UnixNano(), Deadline: e.Deadline.UnixNano()})
			return nil
		})
	})
	_, err = hs.Hash(name).SetTTL(ctx, "f", []byte("v"), 300*time.Millisecond)
	return err
}

// helperCommand is the command "hourglass work" runs: its span's parent
// is the job's trace context, from TRACEPARENT.
func helperCommand(ctx context.Context, tp *sdktrace.TracerProvider) error {
	carrier := propagation.MapCarrier{"traceparent": os.Getenv("TRACEPARENT"), "tracestate": os.Getenv("TRACESTATE")}
	ctx = propagation.TraceContext{}.Extract(ctx, carrier)
	start := time.Now()
	_, span := tp.Tracer("command").Start(ctx, "command")
	time.Sleep(20 * time.Millisecond) // the command's work
	span.End()
	end := time.Now()
	say(helperLine{What: "command", ID: os.Getenv("HOURGLASS_JOB_ID"), Start: start.UnixNano(), End: end.UnixNano(), Traceparent: os.Getenv("TRACEPARENT")})
	return nil
}
