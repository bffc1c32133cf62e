package faulttest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/internal/testkit/redistest"
	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/redisstore"
	"github.com/redis/go-redis/v9"
)

// childEnv names the role a re-run of this binary plays (see child.go).
const childEnv = "HOURGLASS_FAULT_CHILD"

func TestMain(m *testing.M) {
	if role := os.Getenv(childEnv); role != "" {
		os.Exit(runChild(role))
	}
	redistest.Main(m)
}

// child is a re-run of this test binary in a role, with its output lines
// on a channel.
type child struct {
	cmd   *exec.Cmd
	lines chan string
	done  chan struct{}
}

// startChild runs this binary as role with env, and stops it when the test
// ends.
func startChild(t testing.TB, role string, env ...string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append([]string{childEnv + "=" + role}, env...)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, lines: make(chan string, 1<<16), done: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
		_, _ = io.Copy(io.Discard, out)
		_ = cmd.Wait()
		close(c.lines)
		close(c.done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-c.done
	})
	return c
}

// next returns the child's next line that starts with prefix, failing the
// test when none comes before the deadline.
func (c *child) next(t testing.TB, prefix string, within time.Duration) string {
	t.Helper()
	timer := time.NewTimer(within)
	defer timer.Stop()
	for {
		select {
		case l, ok := <-c.lines:
			if !ok {
				t.Fatalf("the child ended without a line starting %q", prefix)
			}
			if strings.HasPrefix(l, prefix) {
				return strings.TrimSpace(strings.TrimPrefix(l, prefix))
			}
		case <-timer.C:
			t.Fatalf("no line starting %q within %v", prefix, within)
		}
	}
}

// wait waits for the child to exit, within a deadline.
func (c *child) wait(t testing.TB, within time.Duration) {
	t.Helper()
	select {
	case <-c.done:
	case <-time.After(within):
		t.Fatalf("the child did not exit within %v", within)
	}
}

// deadline is a context for one fault test.
func deadline(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

// openQueue opens a queue on c (a store with opts) for the test.
func openQueue(t testing.TB, ctx context.Context, c redis.UniversalClient, opts *redisstore.Options) *queue.Queue {
	t.Helper()
	s, err := redisstore.New(ctx, c, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	q, err := queue.New(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Close() })
	return q
}

// waitFor polls cond (the load's own counters, or a cheap call) until it
// holds, failing the test when ctx ends first.
func waitFor(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		if ctx.Err() != nil {
			t.Fatalf("%s: not before the deadline", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
}
