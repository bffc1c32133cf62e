//go:build unix

package main

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptrace"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/internal/testkit/redistest"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// nodeProc is a running helper of the tracing test (tracehelper_test.go).
type nodeProc struct {
	cmd   *exec.Cmd
	out   *lineLog
	stdin io.WriteCloser
	done  chan struct{}
}

func startNode(t *testing.T, env ...string) *nodeProc {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(baseEnv(), append(env, "HG_TRACE_HELPER=node")...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	n := &nodeProc{cmd: cmd, out: newLineLog(), stdin: stdin, done: make(chan struct{})}
	go func() {
		n.out.read(stdout)
		cmd.Wait()
		close(n.done)
	}()
	t.Cleanup(func() {
		stdin.Close()
		select {
		case <-n.done:
		case <-time.After(20 * time.Second):
			cmd.Process.Signal(syscall.SIGKILL)
			<-n.done
		}
		if strings.Contains(stderr.String(), "WARNING: DATA RACE") {
			t.Errorf("the race detector found a data race in the helper %q", env)
		}
		if t.Failed() {
			t.Logf("helper %q:\nstdout:\n%s\nstderr:\n%s", env, n.out, stderr.String())
		}
	})
	return n
}

// line waits for the helper's line what (of job or event id, when set).
func (n *nodeProc) line(t *testing.T, what, id string) helperLine {
	t.Helper()
	return parseHelperLine(t, n.out, what, id)
}

func parseHelperLine(t *testing.T, l *lineLog, what, id string) helperLine {
	t.Helper()
	pat := `{"what":"` + what + `"`
	if id != "" {
		pat += `,"id":"` + id + `"`
	}
	var h helperLine
	if err := json.Unmarshal([]byte(l.waitFor(t, pat, 30*time.Second)), &h); err != nil {
		t.Fatal(err)
	}
	return h
}

// postJSON sends a POST with a JSON body and headers, and returns the status,
// the reply and the time the reply's first byte came.
func postJSON(t *testing.T, url, body string, header ...string) (int, []byte, time.Time) {
	code, b, _, first := postTimed(t, url, body, header...)
	return code, b, first
}

// postTimed is postJSON that also says when the request was sent.
func postTimed(t *testing.T, url, body string, header ...string) (int, []byte, time.Time, time.Time) {
	t.Helper()
	var first time.Time
	ctx := httptrace.WithClientTrace(t.Context(), &httptrace.ClientTrace{GotFirstResponseByte: func() { first = time.Now() }})
	req, err := http.NewRequestWithContext(ctx, "POST", url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	sent := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b, sent, first
}

func putOver(t *testing.T, addr, tube, body, traceparent string) (id string, at putTimes) {
	t.Helper()
	code, reply, sent, first := postTimed(t, "http://"+addr+"/v1/tubes/"+tube+"/jobs", `{"body":"`+body+`"}`, "traceparent", traceparent)
	var r struct {
		ID uint64 `json:"id"`
	}
	if code != http.StatusCreated || json.Unmarshal(reply, &r) != nil || r.ID == 0 {
		t.Fatalf("put: %d %s", code, reply)
	}
	return jsonID(r.ID), putTimes{sent, first}
}

// putTimes are when the producer sent a put and when its reply came: the
// put's end lies between them.
type putTimes struct{ sent, replied time.Time }

// waited checks a job's wait in the queue across processes: the gap from
// the put span's end to the process span's start (proc) must agree with
// the wait measured from the producer's side, from the put's reply to the
// handler's start, except for the time the reply took to reach the
// producer after the put ended, which load on the machine can lengthen:
// so it must lie between that measure less 1 ms and the wait measured
// from the put's sending.
func waited(t *testing.T, what string, span time.Duration, put putTimes, start time.Time) {
	t.Helper()
	lo, hi := start.Sub(put.replied), start.Sub(put.sent)
	if span < lo-time.Millisecond || span > hi {
		t.Errorf("%s: the spans say %v, measured from the put's reply %v and from its sending %v", what, span, lo, hi)
	} else {
		t.Logf("%s: spans %v, measured from the put's reply %v (%v apart), from its sending %v", what, span, lo, span-lo, hi)
	}
}

func jsonID(id uint64) string {
	b, _ := json.Marshal(id)
	return string(b)
}

func attrOf(s *tracepb.Span, key string) (v any, ok bool) {
	for _, a := range s.Attributes {
		if a.Key != key {
			continue
		}
		switch x := a.GetValue().GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			return x.StringValue, true
		case *commonpb.AnyValue_IntValue:
			return x.IntValue, true
		case *commonpb.AnyValue_DoubleValue:
			return x.DoubleValue, true
		case *commonpb.AnyValue_BoolValue:
			return x.BoolValue, true
		}
		return nil, true
	}
	return nil, false
}

func spanDur(s *tracepb.Span) time.Duration {
	return time.Duration(s.EndTimeUnixNano - s.StartTimeUnixNano)
}

func sid(b []byte) string { return hex.EncodeToString(b) }

// agree fails the test unless a span's time and the time measured differ
// by at most a millisecond.
func agree(t *testing.T, what string, span, measured time.Duration) {
	t.Helper()
	if d := span - measured; d > time.Millisecond || d < -time.Millisecond {
		t.Errorf("%s: the spans say %v, measured %v (%v apart, more than 1ms)", what, span, measured, d)
	} else {
		t.Logf("%s: spans %v, measured %v", what, span, measured)
	}
}

func wantAttrs(t *testing.T, s *tracepb.Span, want map[string]any) {
	t.Helper()
	for k, w := range want {
		if got, _ := attrOf(s, k); got != w {
			t.Errorf("span %q: %s = %v (%T), want %v (%T)", s.Name, k, got, got, w, w)
		}
	}
}

func childOf(t *testing.T, what string, s, parent *tracepb.Span) {
	t.Helper()
	if string(s.ParentSpanId) != string(parent.SpanId) || string(s.TraceId) != string(parent.TraceId) {
		t.Errorf("%s: span %q has parent %x in trace %x, want %q %x in trace %x", what, s.Name, s.ParentSpanId, s.TraceId, parent.Name, parent.SpanId, parent.TraceId)
	}
}

func ns(u int64) time.Time   { return time.Unix(0, u) }
func uns(u uint64) time.Time { return time.Unix(0, int64(u)) }

// One trace across processes, on both back ends: the test is the producer
// (an HTTP put with a traceparent) and holds a lock; a Go program in
// another process (the test binary run again, tracehelper_test.go) runs a
// queue.Worker whose handler waits on a rate limit twice and on that lock;
// the same program fires a schedule into the tube and consumes a hash's
// expiry events; "hourglass work" runs a command that makes its span from
// TRACEPARENT. Every process exports to an OTLP receiver in the test. On
// Redis the HTTP API and the worker are two processes; the embedded engine
// lives in one process, so there one program serves both. The test checks
// each parent, link and attribute, and that the spans' durations (and the
// gaps between them: a job's wait) agree with the times the programs
// measured within 1 ms.
func TestTraceAcrossProcesses(t *testing.T) {
	rs := redistest.Standalone(t)
	for _, store := range []string{"mem://", "redis://" + rs.Addr + "/0"} {
		t.Run(strings.SplitN(store, ":", 2)[0], func(t *testing.T) {
			rec := startReceiver(t)
			name := strings.SplitN(store, ":", 2)[0] + "-" + time.Now().Format("150405.000")
			tube, cmdTube, lockName, sched, hash := "go-"+name, "sh-"+name, "lock-"+name, "sched-"+name, "hash-"+name
			common := []string{"HG_STORE=" + store, "HG_OTLP=" + rec.addr, "HG_TUBE=" + tube, "HG_LOCK=" + lockName, "HG_SCHEDULE=" + sched, "HG_HASH=" + hash}
			var front, worker *nodeProc
			if store == "mem://" {
				front = startNode(t, append(common, "HG_SERVICE=node", "HG_ROLES=http,work,schedule,hash")...)
				worker = front
			} else {
				front = startNode(t, append(common, "HG_SERVICE=front", "HG_ROLES=http")...)
				worker = startNode(t, append(common, "HG_SERVICE=worker", "HG_ROLES=work,schedule,hash")...)
			}
			addr := front.line(t, "http", "").Addr

			// The test holds the lock the handler will wait for.
			code, reply, _ := postJSON(t, "http://"+addr+"/v1/locks/"+lockName+"/obtain", `{"ttl_ms":30000}`)
			var held struct {
				Token string `json:"token"`
			}
			if code != http.StatusOK || json.Unmarshal(reply, &held) != nil {
				t.Fatalf("obtain: %d %s", code, reply)
			}

			const traceID, producer = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
			id, putAt := putOver(t, addr, tube, "full", "00-"+traceID+"-"+producer+"-01")
			// A second job, for hourglass work, in the same trace.
			const producer2 = "00f067aa0ba902b8"
			id2, putAt2 := putOver(t, addr, cmdTube, "x", "00-"+traceID+"-"+producer2+"-01")
			exe, err := os.Executable()
			if err != nil {
				t.Fatal(err)
			}
			wp := startWork(t, []string{"HOURGLASS_HTTP=http://" + addr, "HG_TRACE_HELPER=cmd", "HG_OTLP=" + rec.addr, "HG_SERVICE=command"},
				"--tube", cmdTube, "--", exe)
			worker.line(t, "obtaining", id)
			if code, reply, _ := postJSON(t, "http://"+addr+"/v1/locks/"+lockName+"/release", "", "Hourglass-Lock-Token", held.Token); code != http.StatusNoContent {
				t.Fatalf("release: %d %s", code, reply)
			}
			ran := worker.line(t, "ran", id)

			server := rec.waitSpan(t, "of the HTTP put", func(s *tracepb.Span) bool {
				return s.Kind == tracepb.Span_SPAN_KIND_SERVER && sid(s.ParentSpanId) == producer
			})
			if sid(server.TraceId) != traceID {
				t.Errorf("the HTTP span's trace %x, want the producer's", server.TraceId)
			}
			put := rec.waitSpan(t, "put "+tube, func(s *tracepb.Span) bool { return s.Name == "put "+tube })
			childOf(t, "put", put, server)
			proc := rec.waitSpan(t, "process "+tube, func(s *tracepb.Span) bool {
				v, _ := attrOf(s, "messaging.message.id")
				return s.Name == "process "+tube && v == id
			})
			childOf(t, "process", proc, put)
			if proc.Kind != tracepb.Span_SPAN_KIND_CONSUMER {
				t.Errorf("the process span's kind %v, want consumer", proc.Kind)
			}
			if len(proc.Links) != 1 || string(proc.Links[0].SpanId) != string(put.SpanId) {
				t.Errorf("the process span's links %v, want one to the put span %x", proc.Links, put.SpanId)
			}
			wantAttrs(t, proc, map[string]any{"messaging.system": "hourglass", "messaging.destination.name": tube,
				"messaging.operation.name": "process", "messaging.operation.type": "process", "hourglass.job.reserves": int64(1)})
			if !slices.ContainsFunc(proc.Events, func(e *tracepb.Span_Event) bool { return e.Name == "delete" }) {
				t.Errorf("the process span has no delete event: %v", proc.Events)
			}
			if rec.service[sid(proc.SpanId)] == rec.service[sid(put.SpanId)] && store != "mem://" {
				t.Errorf("put and process in one service %q, want two processes", rec.service[sid(put.SpanId)])
			}
			waited(t, "the job's wait", uns(proc.StartTimeUnixNano).Sub(uns(put.EndTimeUnixNano)), putAt, ns(ran.Start))
			agree(t, "the handler's run", spanDur(proc), ns(ran.End).Sub(ns(ran.Start)))

			// The rate limit's two waits and the lock's, children of the
			// process span.
			var limits []*tracepb.Span
			for range 2 {
				limits = append(limits, rec.waitSpan(t, "ratelimit wait", func(s *tracepb.Span) bool {
					return s.Name == "ratelimit wait" && string(s.ParentSpanId) == string(proc.SpanId) && !slices.Contains(limits, s)
				}))
			}
			slices.SortFunc(limits, func(a, b *tracepb.Span) int { return int(int64(a.StartTimeUnixNano) - int64(b.StartTimeUnixNano)) })
			for i, s := range limits {
				childOf(t, "ratelimit wait", s, proc)
				want := map[string]any{"hourglass.ratelimit.key": "traced-" + id, "hourglass.ratelimit.n": int64(1), "hourglass.ratelimit.decision": []string{"pass", "waited"}[i]}
				wantAttrs(t, s, want)
				measured := ns(ran.LimitWaits[i][1]).Sub(ns(ran.LimitWaits[i][0]))
				agree(t, "limit wait "+[]string{"1", "2"}[i], spanDur(s), measured)
				w, _ := attrOf(s, "hourglass.ratelimit.wait_ms")
				wf, _ := w.(float64)
				agree(t, "limit wait's wait_ms", time.Duration(wf*float64(time.Millisecond)), measured)
			}
			if v, _ := attrOf(limits[1], "hourglass.ratelimit.slot_ms"); v == nil || v.(float64) < 100 || v.(float64) > 200 {
				t.Errorf("the second wait's slot_ms %v, want (100, 200]", v)
			}
			lk := rec.waitSpan(t, "lock obtain", func(s *tracepb.Span) bool {
				return s.Name == "lock obtain" && string(s.ParentSpanId) == string(proc.SpanId)
			})
			wantAttrs(t, lk, map[string]any{"hourglass.lock.name": lockName, "hourglass.lock.obtained": true,
				"hourglass.lock.fence": int64(ran.Fence), "hourglass.lock.wait": true})
			lockWait := ns(ran.LockWait[1]).Sub(ns(ran.LockWait[0]))
			agree(t, "the lock's wait", spanDur(lk), lockWait)
			w, _ := attrOf(lk, "hourglass.lock.wait_ms")
			wf, _ := w.(float64)
			agree(t, "the lock's wait_ms", time.Duration(wf*float64(time.Millisecond)), lockWait)

			// A schedule's fire puts a job that carries the fire's span.
			fired := worker.line(t, "fired", "")
			fire := rec.waitSpan(t, "schedule fire", func(s *tracepb.Span) bool {
				v, _ := attrOf(s, "messaging.message.id")
				return s.Name == "schedule fire" && v == fired.ID
			})
			wantAttrs(t, fire, map[string]any{"hourglass.schedule.name": sched, "hourglass.schedule.outcome": "fired",
				"messaging.destination.name": tube, "messaging.operation.type": "send", "hourglass.schedule.manual": false})
			if fire.Kind != tracepb.Span_SPAN_KIND_PRODUCER {
				t.Errorf("the fire span's kind %v, want producer", fire.Kind)
			}
			if l, _ := attrOf(fire, "hourglass.schedule.lateness_ms"); l != float64(fired.Lateness)/1e6 {
				t.Errorf("the fire's lateness_ms %v, want the fire's %v", l, time.Duration(fired.Lateness))
			}
			sran := worker.line(t, "ran", fired.ID)
			sproc := rec.waitSpan(t, "process of the fired job", func(s *tracepb.Span) bool {
				v, _ := attrOf(s, "messaging.message.id")
				return s.Name == "process "+tube && v == fired.ID
			})
			childOf(t, "the fired job's process", sproc, fire)
			agree(t, "the fired job's wait", uns(sproc.StartTimeUnixNano).Sub(uns(fire.EndTimeUnixNano)), ns(sran.Start).Sub(ns(fired.End)))
			agree(t, "the fired job's run", spanDur(sproc), ns(sran.End).Sub(ns(sran.Start)))

			// An expiry event delivered.
			exp := worker.line(t, "expired", "")
			ev := rec.waitSpan(t, "expired "+hash, func(s *tracepb.Span) bool { return s.Name == "expired "+hash })
			wantAttrs(t, ev, map[string]any{"messaging.destination.name": hash, "messaging.message.id": exp.ID,
				"messaging.consumer.group.name": "traced", "hourglass.hash.field": "f", "messaging.operation.type": "process"})
			agree(t, "the event's handling", spanDur(ev), ns(exp.End).Sub(ns(exp.Start)))
			d, _ := attrOf(ev, "hourglass.expiry.delivery_ms")
			df, _ := d.(float64)
			agree(t, "the event's delivery_ms", time.Duration(df*float64(time.Millisecond)), ns(exp.Start).Sub(ns(exp.Deadline)))

			// hourglass work: the command's span under the second put's.
			cl := parseHelperLine(t, wp.stdout, "command", id2)
			wp.stderr.waitFor(t, "job "+id2+": done; ", 30*time.Second)
			if code := wp.stop(t, 30*time.Second); code != 0 {
				t.Errorf("work exited %d", code)
			}
			put2 := rec.waitSpan(t, "put "+cmdTube, func(s *tracepb.Span) bool { return s.Name == "put "+cmdTube })
			server2 := rec.waitSpan(t, "of the second HTTP put", func(s *tracepb.Span) bool {
				return s.Kind == tracepb.Span_SPAN_KIND_SERVER && sid(s.ParentSpanId) == producer2
			})
			childOf(t, "the second put", put2, server2)
			if want := "00-" + traceID + "-" + sid(put2.SpanId) + "-01"; cl.Traceparent != want {
				t.Errorf("the command's TRACEPARENT %q, want %q", cl.Traceparent, want)
			}
			cs := rec.waitSpan(t, "command", func(s *tracepb.Span) bool { return s.Name == "command" })
			childOf(t, "the command", cs, put2)
			waited(t, "the command job's wait", uns(cs.StartTimeUnixNano).Sub(uns(put2.EndTimeUnixNano)), putAt2, ns(cl.Start))
			agree(t, "the command's run", spanDur(cs), ns(cl.End).Sub(ns(cl.Start)))

			// HG_TRACE_SVG=dir draws the producer's trace, of each back
			// end, to dir/trace-<back end>.svg (docs/tracing-trace.svg).
			if dir := os.Getenv("HG_TRACE_SVG"); dir != "" {
				rec.mu.Lock()
				var trace []*tracepb.Span
				for _, s := range rec.spans {
					if sid(s.TraceId) == traceID {
						trace = append(trace, s)
					}
				}
				err := writeTraceSVG(filepath.Join(dir, "trace-"+strings.SplitN(store, ":", 2)[0]+".svg"), trace, rec.service)
				rec.mu.Unlock()
				if err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}
