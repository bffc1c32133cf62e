package beanstalk_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/internal/testkit/backendtest"
	"github.com/hourglass-io/hourglass/internal/testkit/redistest"
	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/server/beanstalk"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// backend is a store to run the server on.
type backend = backendtest.Backend

var backends = []backend{backendtest.RedisBackend, backendtest.MemoryBackend}

var (
	memStore     = backendtest.MemoryBackend.Open
	redisStore   = backendtest.RedisBackend.Open
	clusterStore = backendtest.ClusterBackend.Open
)

// testLogger logs to t, so that a failing test shows what the server said.
func testLogger(t testing.TB) *slog.Logger { return backendtest.Logger(t, slog.LevelDebug) }

// startServer serves a fresh queue on store on 127.0.0.1 and returns the
// server and its address; the server is shut down when the test ends.
func startServer(t testing.TB, store queue.Store, configure func(*beanstalk.Server)) (*beanstalk.Server, string) {
	t.Helper()
	q, err := queue.New(store, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := &beanstalk.Server{Queue: q, Logger: testLogger(t)}
	if configure != nil {
		configure(srv)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if err := <-served; !errors.Is(err, beanstalk.ErrServerClosed) {
			t.Errorf("Serve returned %v, want ErrServerClosed", err)
		}
		q.Close()
	})
	return srv, l.Addr().String()
}

// reference is a beanstalkd started for a test.
type reference struct {
	addr  string
	drain func() // SIGUSR1: drain mode
}

// startBeanstalkd starts the reference beanstalkd on a free port of
// 127.0.0.1; it is killed (by PID) when the test ends. The test opens the listening socket and hands it over the way
// systemd does (LISTEN_FDS), so connections made at once are queued until
// beanstalkd accepts them: there is no start-up race to wait out.
func startBeanstalkd(t testing.TB) reference {
	t.Helper()
	bin, err := exec.LookPath("beanstalkd")
	if err != nil {
		t.Fatal("beanstalkd not found: install it with `apt-get install -y beanstalkd` (make deps does)")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if l.Addr().(*net.TCPAddr).Port == 11300 {
		t.Fatal("got beanstalkd's default port; refusing to use it")
	}
	f, err := l.(*net.TCPListener).File()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// sd_listen_fds wants LISTEN_PID to be beanstalkd's own PID: the shell
	// sets it to its own, then becomes beanstalkd.
	cmd := exec.Command("/bin/sh", "-c", `LISTEN_PID=$$ exec "$0"`, bin)
	cmd.Env = append(os.Environ(), "LISTEN_FDS=1")
	cmd.ExtraFiles = []*os.File{f} // fd 3
	cmd.SysProcAttr = refProcAttr()
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	t.Cleanup(func() {
		syscall.Kill(pid, syscall.SIGKILL)
		cmd.Wait()
		if t.Failed() && out.Len() > 0 {
			t.Logf("beanstalkd output:\n%s", out.String())
		}
	})
	drain := func() {
		if err := syscall.Kill(pid, syscall.SIGUSR1); err != nil {
			t.Fatalf("SIGUSR1 to beanstalkd: %v", err)
		}
	}
	return reference{addr: l.Addr().String(), drain: drain}
}
