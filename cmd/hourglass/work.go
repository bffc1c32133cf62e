package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/server/httpapi"
)

var workCommand = &command{
	name:    "work",
	forms:   []string{""},
	args:    "[flags] -- CMD [ARGS...]",
	summary: "run CMD for each job of the tubes, the job's body on its standard input",
	help: `A shell worker over the HTTP API (--http, or HOURGLASS_HTTP). It reserves
jobs from the --tube tubes (default: "default"), --concurrency at a time, and
runs CMD ARGS for each with the body on standard input and these variables
in its environment: HOURGLASS_JOB_ID, HOURGLASS_JOB_TUBE,
HOURGLASS_JOB_PRIORITY and HOURGLASS_JOB_ATTEMPT (1 on the first try), and,
for a job put with a W3C trace context, TRACEPARENT (and TRACESTATE), which
OpenTelemetry's SDKs and tools such as otel-cli read as the parent of the
command's spans (docs/tracing.md). What CMD writes goes to the worker's
standard output and error (and its standard output, up to 64 KiB, becomes
the job's result).

  exit 0        the job is finished with what CMD wrote to standard output
                as its result (the first 64 KiB; the rest is not kept):
                a tube with a retention keeps it with the job, which
                "hourglass job" shows; in a tube without one, finishing
                is deleting and the result is dropped
  other exits   the job is released, delayed 1s, 2s, 4s … (doubling, at
                most an hour; --backoff sets the first), or buried once it
                has been tried --attempts times. Either way the end of what
                CMD wrote to standard error (else its exit status) becomes
                the job's last error. The job keeps its priority.

While CMD runs the worker touches the job at half its TTR, so a long run
keeps it. If a touch fails (the TTR ran out first, and the job may be
another worker's now) CMD is stopped. While CMD runs the worker also waits
to hear that its job was cancelled ("hourglass cancel", from any client of
any server on the store): it then sends SIGTERM to CMD's process group and
SIGKILL after --grace, and leaves the job alone (it is gone).

SIGTERM or SIGINT stops the worker: it takes no new job, sends SIGTERM to
each running CMD (to its process group), waits --grace for them, then kills
them. A job whose CMD exits 0 in time is finished; the others go back to
ready at once, keeping their priority (the try counts as an attempt). A
second signal stops at once.

Exit status: 0 after a stop by signal, 1 when the worker cannot go on (the
server refused a reserve), 2 for a usage error.

Examples:

  hourglass work --tube emails -- ./send-email.sh
  hourglass work --tube thumbs --concurrency 4 --attempts 5 -- convert - -resize 64x64 png:-
  hourglass work --tube hooks -- sh -c 'curl -fsS -d @- "$HOOK_URL"'
`,
	flags: func(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
		var lf leaseFlags
		lf.define(fs, false)
		var tubes tubeList
		fs.Var(&tubes, "tube", "`tube` to take jobs from; repeat for several (default default)")
		concurrency := fs.Int("concurrency", 1, "how many jobs run at once (a `count`)")
		attempts := fs.Int("attempts", 10, "tries of a job before a failure buries it instead of releasing it (a `count`)")
		backoff := secondsVar(fs, "backoff", time.Second, "delay of the release after the first failed try; it doubles with each (a `duration`)")
		grace := secondsVar(fs, "grace", 10*time.Second, "on SIGTERM, how long running commands may finish before they are killed (a `duration`)")
		return func(ctx context.Context, c *cli, args []string) error {
			if len(args) == 0 {
				return usagef("work needs the command to run: hourglass work [flags] -- CMD [ARGS...]")
			}
			switch {
			case *concurrency < 1 || *concurrency > 1000:
				return usagef("--concurrency %d: want 1 to 1000", *concurrency)
			case *attempts < 1:
				return usagef("--attempts %d: want 1 or more", *attempts)
			case *backoff < time.Millisecond:
				return usagef("--backoff %v: want at least 1ms", *backoff)
			case *grace < 0:
				return usagef("--grace %v: want 0 or more", *grace)
			}
			if len(tubes) == 0 {
				tubes = tubeList{"default"}
			}
			w := &shellWorker{c: c, hc: lf.client(), tubes: tubes, cmd: args, attempts: *attempts,
				backoff: *backoff, grace: *grace}
			return w.run(ctx, *concurrency)
		}
	},
}

// shellWorker runs a command per job.
type shellWorker struct {
	c        *cli
	hc       *httpClient
	tubes    []string
	cmd      []string
	attempts int
	backoff  time.Duration
	grace    time.Duration

	// out guards the worker's writes to the cli's streams, and the
	// commands' when those are not files.
	out sync.Mutex
}

// logf prints one line of the worker's own to standard error.
func (w *shellWorker) logf(format string, args ...any) {
	w.out.Lock()
	defer w.out.Unlock()
	fmt.Fprintf(w.c.stderr, "hourglass work: "+format+"\n", args...)
}

// run runs the slots until ctx ends (a signal) or a reserve is refused.
func (w *shellWorker) run(ctx context.Context, n int) error {
	// stop ends the reserving; the commands' context ends after the grace.
	stopping, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		<-stopping.Done()
		if ctx.Err() != nil && w.c.stopSignals != nil {
			w.c.stopSignals() // a second signal stops the worker at once
		}
	}()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := w.slot(stopping); err != nil {
				errs <- err
				stop()
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	return nil
}

// slot reserves and runs jobs one at a time until ctx ends.
func (w *shellWorker) slot(ctx context.Context) error {
	failures := 0
	for ctx.Err() == nil {
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second+commandTimeout)
		status, body, err := w.hc.call(rctx, "POST", "/v1/reserve", httpapi.ReserveRequest{Tubes: w.tubes, TimeoutMS: 30000})
		cancel()
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			var ae *apiError
			if errors.As(err, &ae) && ae.Status < 500 && ae.Code != httpapi.CodeTooManyWaits {
				return fmt.Errorf("reserve: %w", err) // refused: going on would not help
			}
			failures++
			pause := min(time.Second<<min(failures-1, 5), 30*time.Second)
			w.logf("reserve: %v; again in %v", err, pause)
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(pause):
			}
			continue
		case status != http.StatusOK:
			continue // no job within the poll
		}
		failures = 0
		var r httpapi.ReserveReply
		if err := json.Unmarshal(body, &r); err != nil {
			return fmt.Errorf("reserve: the server's reply: %w", err)
		}
		w.handle(ctx, r.Lease, r.Job)
	}
	return nil
}

// handle runs the command for job and then deletes, releases or buries it.
func (w *shellWorker) handle(stopping context.Context, lease string, job httpapi.Job) {
	hc := *w.hc
	hc.header = map[string]string{httpapi.LeaseHeader: lease}
	body, err := base64.StdEncoding.DecodeString(job.BodyBase64)
	if err != nil {
		w.logf("job %d: the server's reply: %v", job.ID, err)
		return
	}

	cmd := exec.Command(w.cmd[0], w.cmd[1:]...)
	cmd.Stdin = bytes.NewReader(body)
	out := &headBuffer{max: queue.MaxResultLen}
	cmd.Stdout = io.MultiWriter(w.stream(w.c.stdout), out)
	tail := &tailBuffer{max: 900}
	cmd.Stderr = io.MultiWriter(w.stream(w.c.stderr), tail)
	cmd.Env = append(os.Environ(),
		"HOURGLASS_JOB_ID="+strconv.FormatUint(job.ID, 10),
		"HOURGLASS_JOB_TUBE="+job.Tube,
		"HOURGLASS_JOB_PRIORITY="+strconv.FormatUint(uint64(job.Priority), 10),
		"HOURGLASS_JOB_ATTEMPT="+strconv.FormatUint(uint64(job.Reserves), 10))
	cmd.Env = traceEnv(cmd.Env, job)
	ownGroup(cmd)
	if err := cmd.Start(); err != nil {
		w.finish(&hc, job, fmt.Errorf("cannot run %s: %w", w.cmd[0], err), "", nil, false)
		return
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	ttr := time.Duration(job.TTRMS) * time.Millisecond
	touch := time.NewTicker(max(ttr/2, 100*time.Millisecond))
	defer touch.Stop()
	watching, stopWatching := context.WithCancel(context.WithoutCancel(stopping))
	defer stopWatching()
	cancelled := make(chan string, 1)
	go w.watch(watching, &hc, job.ID, cancelled)
	var (
		runErr      error
		interrupted bool // stopped by the worker: the job goes back
		killAt      <-chan time.Time
		wasCancel   bool // the job was cancelled: it is gone
	)
	stopCh := stopping.Done()
wait:
	for {
		select {
		case runErr = <-exited:
			break wait
		case reason := <-cancelled:
			wasCancel = true
			if reason != "" {
				w.logf("job %d: cancelled (%s); stopping %s", job.ID, reason, w.cmd[0])
			} else {
				w.logf("job %d: cancelled; stopping %s", job.ID, w.cmd[0])
			}
			if !interrupted {
				interrupted = true
				terminate(cmd)
				killAt = time.After(w.grace)
			}
		case <-touch.C:
			tctx, cancel := context.WithTimeout(context.WithoutCancel(stopping), max(ttr/4, time.Second))
			_, _, err := hc.call(tctx, "POST", fmt.Sprintf("/v1/jobs/%d/touch", job.ID), struct{}{})
			cancel()
			if err != nil && !interrupted {
				w.logf("job %d: touch failed (%v); stopping %s, the job may be another worker's now", job.ID, heldError(err, job.ID), w.cmd[0])
				interrupted = true
				terminate(cmd)
				killAt = time.After(w.grace)
			}
		case <-stopCh:
			stopCh = nil
			interrupted = true
			terminate(cmd)
			killAt = time.After(w.grace)
		case <-killAt:
			killAt = nil
			w.logf("job %d: %s still runs %v after SIGTERM; killing it", job.ID, w.cmd[0], w.grace)
			kill(cmd)
		}
	}
	if wasCancel {
		w.logf("job %d: cancelled; %s stopped (%v)", job.ID, w.cmd[0], runErr)
		return // the job is gone: nothing to delete or give back
	}
	w.finish(&hc, job, runErr, tail.String(), out, interrupted)
}

// watch keeps a long poll open in which the server tells the lease's
// holder that job id was cancelled, and then sends the reason on
// cancelled (once), until ctx ends. A job found gone counts as cancelled.
func (w *shellWorker) watch(ctx context.Context, hc *httpClient, id uint64, cancelled chan<- string) {
	path := fmt.Sprintf("/v1/jobs/%d/watch", id)
	failures := 0
	for ctx.Err() == nil {
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second+commandTimeout)
		status, body, err := hc.call(wctx, "POST", path, httpapi.WatchRequest{TimeoutMS: 30000})
		cancel()
		var ae *apiError
		switch {
		case ctx.Err() != nil:
			return
		case err == nil && status == http.StatusOK:
			var r httpapi.WatchReply
			_ = json.Unmarshal(body, &r)
			cancelled <- r.Reason
			return
		case errors.As(err, &ae) && ae.Code == httpapi.CodeNotFound:
			cancelled <- ""
			return
		case errors.As(err, &ae) && ae.Status < 500 && ae.Code != httpapi.CodeTooManyWaits:
			return // not held under this lease: the touch says so
		case err != nil:
			failures++
			select {
			case <-ctx.Done():
				return
			case <-time.After(min(100*time.Millisecond<<min(failures-1, 8), 10*time.Second)):
			}
		default:
			failures = 0 // 204: still held; watch again
		}
	}
}

// finish finishes the job with the command's standard output as its
// result when the command succeeded, gives it back when the worker
// interrupted it, and else releases it with a backoff or buries it after
// its last attempt, with the end of the command's standard error as the
// reason.
func (w *shellWorker) finish(hc *httpClient, job httpapi.Job, runErr error, stderrTail string, out *headBuffer, interrupted bool) {
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	path := fmt.Sprintf("/v1/jobs/%d", job.ID)
	if runErr == nil {
		var req httpapi.FinishRequest
		result, written := out.bytes()
		if len(result) > 0 {
			r64 := base64.StdEncoding.EncodeToString(result)
			req.ResultBase64 = &r64
		}
		if _, _, err := hc.call(ctx, "POST", path+"/finish", req); err != nil {
			w.logf("job %d: done, but finishing it failed: %v", job.ID, heldError(err, job.ID))
			return
		}
		switch {
		case written > int64(len(result)):
			w.logf("job %d: done; finished with the first %d of the %d bytes of its output as its result", job.ID, len(result), written)
		case len(result) > 0:
			w.logf("job %d: done; finished with its output (%d bytes) as its result", job.ID, len(result))
		default:
			w.logf("job %d: done; finished (no output, no result)", job.ID)
		}
		return
	}
	if interrupted {
		if _, _, err := hc.call(ctx, "POST", path+"/release", httpapi.ReleaseRequest{}); err != nil {
			w.logf("job %d: giving it back failed: %v", job.ID, heldError(err, job.ID))
			return
		}
		w.logf("job %d: interrupted; back to ready", job.ID)
		return
	}
	reason := runErr.Error()
	if t := strings.TrimSpace(stderrTail); t != "" {
		reason += ": " + t
	}
	if int(job.Reserves) >= w.attempts {
		if _, _, err := hc.call(ctx, "POST", path+"/bury", httpapi.BuryRequest{Reason: reason}); err != nil {
			w.logf("job %d: burying it failed: %v", job.ID, heldError(err, job.ID))
			return
		}
		w.logf("job %d: %v on attempt %d of %d; buried", job.ID, runErr, job.Reserves, w.attempts)
		return
	}
	delay := w.delay(int(job.Reserves))
	if _, _, err := hc.call(ctx, "POST", path+"/release", httpapi.ReleaseRequest{DelayMS: delay.Milliseconds(), Reason: reason}); err != nil {
		w.logf("job %d: releasing it failed: %v", job.ID, heldError(err, job.ID))
		return
	}
	w.logf("job %d: %v on attempt %d of %d; released, ready again in %v", job.ID, runErr, job.Reserves, w.attempts, delay)
}

// delay is the release delay after the n-th failed attempt: the backoff
// doubled n-1 times, at most an hour.
func (w *shellWorker) delay(n int) time.Duration {
	d := float64(w.backoff) * math.Pow(2, float64(max(n-1, 0)))
	return min(time.Duration(min(d, float64(time.Hour))), time.Hour)
}

// stream is where a command writes: the stream itself when it is a file
// (the command writes to it directly), else a writer that takes turns with
// the worker's other writers.
func (w *shellWorker) stream(to io.Writer) io.Writer {
	if f, ok := to.(*os.File); ok {
		return f
	}
	return writerFunc(func(p []byte) (int, error) {
		w.out.Lock()
		defer w.out.Unlock()
		return to.Write(p)
	})
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// headBuffer keeps the first max bytes written to it and counts them all.
type headBuffer struct {
	mu      sync.Mutex
	max     int
	b       []byte
	written int64
}

func (h *headBuffer) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.written += int64(len(p))
	if room := h.max - len(h.b); room > 0 {
		h.b = append(h.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

// bytes returns what h kept and how many bytes were written in all.
func (h *headBuffer) bytes() ([]byte, int64) {
	if h == nil {
		return nil, 0
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.b, h.written
}

// tailBuffer keeps the last max bytes written to it, cut at the start of a
// whole line where it can be.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - 2*t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.b
	if len(b) > t.max {
		b = b[len(b)-t.max:]
		if i := bytes.IndexByte(b, '\n'); i >= 0 && i < len(b)-1 {
			b = b[i+1:]
		}
	}
	return strings.ToValidUTF8(string(b), "")
}

// traceEnv is env with the job's trace context as TRACEPARENT and
// TRACESTATE, the variables OpenTelemetry's environment carrier names,
// replacing those the worker itself was started with; a job without one
// runs with neither.
func traceEnv(env []string, job httpapi.Job) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, "TRACEPARENT=") && !strings.HasPrefix(kv, "TRACESTATE=") {
			out = append(out, kv)
		}
	}
	if job.Traceparent != "" {
		out = append(out, "TRACEPARENT="+job.Traceparent)
		if job.Tracestate != "" {
			out = append(out, "TRACESTATE="+job.Tracestate)
		}
	}
	return out
}
