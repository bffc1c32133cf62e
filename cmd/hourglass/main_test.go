//go:build unix

package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// These tests build the hourglass binary once and run it as a user would:
// serve in a child process listening on 127.0.0.1, the client commands
// against it. They wait for events (a log line, a process exit) with
// deadlines, never by sleeping.

// binary is the hourglass binary TestMain builds.
var binary string

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	if os.Getenv("HG_TRACE_HELPER") != "" {
		return traceHelper() // a program of the tracing test (tracehelper_test.go)
	}
	dir, err := os.MkdirTemp("", "hourglass-cmd-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	binary = filepath.Join(dir, "hourglass")
	args := []string{"build", "-o", binary}
	if raceEnabled {
		args = append(args, "-race")
	}
	out, err := exec.Command(goTool(), append(args, ".")...).CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}

// goTool finds the go command: on PATH, else under $GOROOT.
func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	if root := os.Getenv("GOROOT"); root != "" {
		return filepath.Join(root, "bin", "go")
	}
	return "go"
}

// baseEnv is the test's environment without HOURGLASS_ variables, so that
// the caller's settings cannot change what the binary does. A binary built
// with the race detector exits at once rather than after its default
// second's wait.
func baseEnv() []string {
	var env []string
	gorace := "atexit_sleep_ms=0"
	for _, kv := range os.Environ() {
		if v, ok := strings.CutPrefix(kv, "GORACE="); ok {
			gorace = v + " " + gorace
			continue
		}
		if !strings.HasPrefix(kv, "HOURGLASS_") {
			env = append(env, kv)
		}
	}
	return append(env, "GORACE="+gorace)
}

// result is what a run of the binary did.
type result struct {
	stdout, stderr string
	code           int
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// run runs the binary to completion (within a minute) with env added to
// the environment and stdin as its standard input.
func run(t *testing.T, env []string, stdin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = append(baseEnv(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	if strings.Contains(r.stderr, "WARNING: DATA RACE") {
		t.Errorf("the race detector found a data race in hourglass %q:\n%s", args, r.stderr)
	}
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("hourglass %q did not finish within a minute\n%v", args, r)
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("hourglass %q: %v", args, err)
	}
	return r
}

// expect runs the binary and fails the test unless it exits with code and
// its standard error contains each of stderrHas.
func expect(t *testing.T, env []string, code int, args []string, stderrHas ...string) result {
	t.Helper()
	r := run(t, env, "", args...)
	if r.code != code {
		t.Fatalf("hourglass %q: want exit %d, got %v", args, code, r)
	}
	for _, s := range stderrHas {
		if !strings.Contains(r.stderr, s) {
			t.Errorf("hourglass %q: stderr does not contain %q:\n%s", args, s, r.stderr)
		}
	}
	return r
}

// ok runs the binary, fails the test unless it succeeds, and returns its
// standard output.
func ok(t *testing.T, env []string, args ...string) string {
	t.Helper()
	r := run(t, env, "", args...)
	if r.code != 0 {
		t.Fatalf("hourglass %q failed: %v", args, r)
	}
	return r.stdout
}

// serveProc is a running "hourglass serve".
type serveProc struct {
	cmd      *exec.Cmd
	log      *lineLog
	addr     string // the beanstalkd protocol
	httpAddr string
	env      []string // HOURGLASS_ADDR=addr, for the client commands

	done chan struct{} // closed once the process has exited
	err  error         // cmd.Wait's result, set before done is closed
}

// startServe starts "hourglass serve" on free ports of 127.0.0.1 with args
// and env added, waits until it logs that it serves and /healthz answers
// "ok", and kills it (by its PID) when the test ends if it still runs.
func startServe(t *testing.T, env []string, args ...string) *serveProc {
	t.Helper()
	p := launchServe(t, env, args...)
	line := p.log.waitFor(t, `msg="hourglass serving"`, 30*time.Second)
	p.addr, p.httpAddr = logValue(line, "beanstalk_addr"), logValue(line, "http_addr")
	if p.addr == "" || p.httpAddr == "" {
		t.Fatalf("no addresses in %q", line)
	}
	p.env = []string{"HOURGLASS_ADDR=" + p.addr}
	if code, body := p.health(t); code != http.StatusOK || body != "ok\n" {
		t.Fatalf("/healthz: %d %q, want 200 \"ok\\n\"", code, body)
	}
	return p
}

// launchServe starts "hourglass serve" without waiting for it.
func launchServe(t *testing.T, env []string, args ...string) *serveProc {
	t.Helper()
	full := append([]string{"serve", "--beanstalk-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0", "--log-level", "debug"}, args...)
	cmd := exec.Command(binary, full...)
	cmd.Env = append(baseEnv(), env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &serveProc{cmd: cmd, log: newLineLog(), done: make(chan struct{})}
	go func() {
		p.log.read(stderr) // all of it, before Wait
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.kill()
		if strings.Contains(p.log.String(), "WARNING: DATA RACE") {
			t.Error("the race detector found a data race in serve")
		}
		if t.Failed() {
			t.Logf("serve %q log:\n%s", args, p.log)
		}
	})
	return p
}

// kill stops the process with SIGKILL if it still runs, and waits for it.
func (p *serveProc) kill() {
	select {
	case <-p.done:
		return
	default:
	}
	p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

func (p *serveProc) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("%v: %v", sig, err)
	}
}

// wait waits for the process to exit, for at most timeout, and returns
// its exit code.
func (p *serveProc) wait(t *testing.T, timeout time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(timeout):
		t.Fatalf("serve did not exit within %v", timeout)
	}
	var ee *exec.ExitError
	switch {
	case errors.As(p.err, &ee):
		return ee.ExitCode()
	case p.err != nil:
		t.Fatalf("serve: %v", p.err)
	}
	return 0
}

// health asks /healthz and returns the status code and body.
func (p *serveProc) health(t *testing.T) (int, string) {
	t.Helper()
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get("http://" + p.httpAddr + "/healthz")
	if err != nil {
		t.Fatalf("/healthz: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("/healthz: %v", err)
	}
	return resp.StatusCode, string(b)
}

// lineLog collects the lines a process writes and lets tests wait for one.
type lineLog struct {
	mu      sync.Mutex
	lines   []string
	eof     bool
	changed chan struct{} // closed and replaced when a line comes or the stream ends
}

func newLineLog() *lineLog { return &lineLog{changed: make(chan struct{})} }

func (l *lineLog) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		l.mu.Lock()
		l.lines = append(l.lines, sc.Text())
		close(l.changed)
		l.changed = make(chan struct{})
		l.mu.Unlock()
	}
	io.Copy(io.Discard, r)
	l.mu.Lock()
	l.eof = true
	close(l.changed)
	l.changed = make(chan struct{})
	l.mu.Unlock()
}

// waitFor returns the first line that contains substr, waiting for it at
// most timeout; it fails the test when the stream ends without one.
func (l *lineLog) waitFor(t *testing.T, substr string, timeout time.Duration) string {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for i := 0; ; {
		l.mu.Lock()
		for ; i < len(l.lines); i++ {
			if strings.Contains(l.lines[i], substr) {
				line := l.lines[i]
				l.mu.Unlock()
				return line
			}
		}
		eof, changed := l.eof, l.changed
		l.mu.Unlock()
		if eof {
			t.Fatalf("the process ended without logging %q", substr)
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("no log line with %q within %v", substr, timeout)
		}
	}
}

func (l *lineLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// logValue returns the value of key in a log line of slog's text handler.
func logValue(line, key string) string {
	m := regexp.MustCompile(`(?:^| )` + regexp.QuoteMeta(key) + `=("(?:[^"\\]|\\.)*"|\S*)`).FindStringSubmatch(line)
	if m == nil {
		return ""
	}
	return strings.Trim(m[1], `"`)
}
