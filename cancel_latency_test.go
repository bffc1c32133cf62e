package hourglass_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/internal/testkit/redistest"
	"github.com/hourglass-io/hourglass/memstore"
	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/redisstore"
	"github.com/hourglass-io/hourglass/server/httpapi"
	"github.com/redis/go-redis/v9"
)

// The child of the cancel latency benchmarks: a process of its own that
// runs a queue.Worker on tube "lat" and prints, for each job, "started
// <id>" when its handler starts and "ended <id> <unix ns> <cause>" when the
// handler's context ends. With HG_CANCEL_CHILD=redis:<addr>:<prefix> its
// store is Redis; with HG_CANCEL_CHILD=embedded its store is the embedded
// engine, and it serves the HTTP API on a loopback port it prints first
// ("http <addr>"), through which the parent cancels.
func init() {
	spec := os.Getenv("HG_CANCEL_CHILD")
	if spec == "" {
		return
	}
	os.Exit(cancelChild(spec))
}

func cancelChild(spec string) int {
	ctx := context.Background()
	var store queue.Store
	out := bufio.NewWriter(os.Stdout)
	if rest, ok := strings.CutPrefix(spec, "redis:"); ok {
		addr, prefix, _ := strings.Cut(rest, "|")
		c := redis.NewClient(&redis.Options{Addr: addr})
		s, err := redisstore.New(ctx, c, &redisstore.Options{Prefix: prefix})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer s.Close()
		store = s
	} else {
		s, err := memstore.New(nil)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer s.Close()
		store = s
	}
	q, err := queue.New(store, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if spec == "embedded" {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		srv := &httpapi.Server{Queue: q}
		go srv.Serve(l)
		fmt.Fprintf(out, "http %s\n", l.Addr())
		out.Flush()
	}
	lines := make(chan string, 1024)
	go func() {
		for l := range lines {
			out.WriteString(l)
			out.Flush()
		}
	}()
	w, err := queue.NewWorker(q, queue.HandlerFunc(func(ctx context.Context, job queue.Job) error {
		lines <- fmt.Sprintf("started %d\n", job.ID)
		<-ctx.Done()
		lines <- fmt.Sprintf("ended %d %d %v\n", job.ID, time.Now().UnixNano(), context.Cause(ctx))
		return ctx.Err()
	}), &queue.WorkerOptions{Tubes: []string{"lat"}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	go func() { io.Copy(io.Discard, os.Stdin); os.Exit(0) }() // the parent's end
	if err := w.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// cancelRun is the parent's side: the child process and its lines.
type cancelRun struct {
	cmd   *exec.Cmd
	lines chan string
	stdin io.WriteCloser
}

func startCancelChild(b *testing.B, spec string) *cancelRun {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "HG_CANCEL_CHILD="+spec)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	r := &cancelRun{cmd: cmd, lines: make(chan string, 1024), stdin: stdin}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			r.lines <- sc.Text()
		}
		close(r.lines)
	}()
	b.Cleanup(func() {
		stdin.Close()
		cmd.Wait()
	})
	return r
}

// next returns the child's next line, failing after a minute.
func (r *cancelRun) next(b *testing.B) string {
	b.Helper()
	select {
	case l, ok := <-r.lines:
		if !ok {
			b.Fatal("the child exited")
		}
		return l
	case <-time.After(time.Minute):
		b.Fatal("the child said nothing for a minute")
	}
	return ""
}

// measureCancels puts n jobs one at a time into tube "lat"; for each it
// waits for the child's handler to start, cancels it (cancel, returning
// the state the job was in) and reads when the handler's context ended.
// It reports the latencies' p50, p99 and max in ms, and fails if a job was
// started twice, was not reserved when cancelled, or if the tube counts
// a delete, a release or a ready job at the end.
func measureCancels(b *testing.B, r *cancelRun, n int, put func() (queue.ID, error), cancel func(id queue.ID) (string, error), stats func() (httpapi.TubeStats, error)) {
	lat := make([]time.Duration, 0, n)
	started := map[queue.ID]bool{}
	for range n {
		id, err := put()
		if err != nil {
			b.Fatal(err)
		}
		line := r.next(b)
		if line != fmt.Sprintf("started %d", id) {
			b.Fatalf("the child said %q, want the start of job %d", line, id)
		}
		if started[id] {
			b.Fatalf("job %d started twice", id)
		}
		started[id] = true
		t0 := time.Now()
		was, err := cancel(id)
		if err != nil || was != "reserved" {
			b.Fatalf("cancel of job %d: was %q, %v", id, was, err)
		}
		f := strings.Fields(r.next(b))
		if len(f) < 3 || f[0] != "ended" || f[1] != strconv.FormatUint(uint64(id), 10) || !strings.Contains(strings.Join(f[3:], " "), "cancelled") {
			b.Fatalf("the child said %q, want the cancelled end of job %d", f, id)
		}
		ns, _ := strconv.ParseInt(f[2], 10, 64)
		lat = append(lat, time.Unix(0, ns).Sub(t0))
	}
	// The tube is gone with its last job; while it lives it holds no job
	// and counts no delete.
	if st, err := stats(); err == nil && (st.Deletes != 0 || st.Ready+st.Delayed+st.Reserved+st.Buried != 0) {
		b.Errorf("after the cancels: %+v; want no job and no delete", st)
	}
	slices.Sort(lat)
	p := func(f float64) float64 { return float64(lat[int(f*float64(len(lat)-1))]) / 1e6 }
	b.ReportMetric(p(0.5), "p50-ms")
	b.ReportMetric(p(0.99), "p99-ms")
	b.ReportMetric(p(1), "max-ms")
	b.ReportMetric(float64(len(started)), "jobs")
}

// BenchmarkCancelLatencyRedis: from a Cancel in this process to the end of
// the handler's context in a Worker of another process, both on one
// redis-server, over 1,000 cancels (run with -benchtime 1x).
func BenchmarkCancelLatencyRedis(b *testing.B) {
	srv, err := redistest.SharedStandalone()
	if err != nil {
		b.Fatal(err)
	}
	prefix := redistest.Prefix(b)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr})
	s, err := redisstore.New(context.Background(), c, &redisstore.Options{Prefix: prefix})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	q, _ := queue.New(s, nil)
	ctx := context.Background()
	r := startCancelChild(b, "redis:"+srv.Addr+"|"+prefix)
	for range b.N {
		measureCancels(b, r, 1000,
			func() (queue.ID, error) { return q.Put(ctx, "lat", queue.NewJob{Body: []byte("x"), TTR: time.Minute}) },
			func(id queue.ID) (string, error) {
				was, err := q.Cancel(ctx, id, "benchmark")
				return was.String(), err
			},
			func() (httpapi.TubeStats, error) {
				st, err := q.StatsTube(ctx, "lat")
				return httpapi.TubeStats{Deletes: st.Deletes, Ready: st.Ready, Delayed: st.Delayed, Reserved: st.Reserved, Buried: st.Buried}, err
			})
	}
}

// BenchmarkCancelLatencyEmbedded: the Worker and the embedded engine in a
// child process, the cancel from this one over the child's HTTP API, over
// 1,000 cancels; jobs are put over HTTP too.
func BenchmarkCancelLatencyEmbedded(b *testing.B) {
	r := startCancelChild(b, "embedded")
	addr, ok := strings.CutPrefix(r.next(b), "http ")
	if !ok {
		b.Fatal("the child did not say its HTTP address")
	}
	base := "http://" + addr
	call := func(method, path, body string, out any) error {
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		defer res.Body.Close()
		if res.StatusCode >= 300 {
			return fmt.Errorf("%s %s: %s", method, path, res.Status)
		}
		return json.NewDecoder(res.Body).Decode(out)
	}
	for range b.N {
		measureCancels(b, r, 1000,
			func() (queue.ID, error) {
				var p struct{ ID uint64 }
				err := call("POST", "/v1/tubes/lat/jobs", `{"body":"x","ttr_ms":60000}`, &p)
				return queue.ID(p.ID), err
			},
			func(id queue.ID) (string, error) {
				var c httpapi.CancelReply
				err := call("POST", fmt.Sprintf("/v1/jobs/%d/cancel", id), `{"reason":"benchmark"}`, &c)
				return c.Was, err
			},
			func() (httpapi.TubeStats, error) {
				var st httpapi.TubeStats
				err := call("GET", "/v1/tubes/lat", "", &st)
				return st, err
			})
	}
}
