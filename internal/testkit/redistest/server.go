package redistest

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const (
	// readyTimeout bounds how long a single server may take to answer.
	readyTimeout = 10 * time.Second
	// stopTimeout is how long Stop waits after SIGTERM before SIGKILL.
	stopTimeout = 2 * time.Second
	// startAttempts is how often a start is retried when the port was
	// taken between picking it and the server binding it.
	startAttempts = 5
	// logTailLines is how many log lines are quoted in errors.
	logTailLines = 30
)

// Server is one redis-server process started by this package (a plain
// server, a cluster node or a sentinel). It listens on Addr until Stop.
type Server struct {
	// Addr is the address the server listens on, "127.0.0.1:port".
	Addr string

	port    int
	dir     string
	logFile string
	outFile string

	bin     string   // the redis-server binary
	args    []string // its command line, for Restart
	cmd     *exec.Cmd
	exited  chan struct{} // closed once cmd.Wait has returned
	waitErr error         // cmd.Wait's result; read only after exited is closed

	stopOnce sync.Once
}

// Pid returns the process ID of the redis-server process.
func (s *Server) Pid() int { return s.cmd.Process.Pid }

// Stop terminates the server process (SIGTERM, then SIGKILL if it has not
// exited within a short deadline), waits for it to exit and removes its
// temporary directory. Only the process this Server started is signalled.
// Stop is idempotent and safe to call from several goroutines.
func (s *Server) Stop() {
	s.stopOnce.Do(func() {
		s.kill()
		_ = os.RemoveAll(s.dir)
	})
}

// Restart crashes the server and starts it again (Crash, then Start).
func (s *Server) Restart() error {
	s.Crash()
	return s.Start()
}

// Crash kills the server (SIGKILL): it loses what it has not persisted,
// everything with the default configuration. Start brings it back.
func (s *Server) Crash() {
	if !s.hasExited() {
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
}

// Start starts a crashed server again on the same address, directory and
// configuration, and returns once it answers. Not for use concurrently with
// Stop.
func (s *Server) Start() error { return s.start() }

// StartReplicaOf starts a crashed server again, as Start does, but as a
// replica of master from its first moment. A crashed master that keeps
// nothing on disk must come back this way: started as it was, it is an
// empty master until a sentinel reconfigures it, and a sentinel that
// still counts it as the master can make the promoted replica copy its
// empty data set.
func (s *Server) StartReplicaOf(master *Server) error {
	return s.start("--replicaof", "127.0.0.1", strconv.Itoa(master.port))
}

func (s *Server) start(extra ...string) error {
	if !s.hasExited() {
		return fmt.Errorf("redistest: %s is running", s.Addr)
	}
	out, err := os.OpenFile(s.outFile, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("redistest: restart: %w", err)
	}
	cmd := exec.Command(s.bin, append(slices.Clone(s.args), extra...)...)
	cmd.Dir, cmd.Stdout, cmd.Stderr, cmd.SysProcAttr = s.dir, out, out, sysProcAttr()
	err = cmd.Start()
	_ = out.Close()
	if err != nil {
		return fmt.Errorf("redistest: restart %s: %w", s.bin, err)
	}
	exited := make(chan struct{})
	s.cmd, s.exited, s.waitErr = cmd, exited, nil
	go func() {
		s.waitErr = cmd.Wait()
		close(exited)
	}()
	_, err = s.waitReady(readyTimeout)
	return err
}

func (s *Server) kill() {
	if s.hasExited() {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	timer := time.NewTimer(stopTimeout)
	defer timer.Stop()
	select {
	case <-s.exited:
		return
	case <-timer.C:
	}
	_ = s.cmd.Process.Kill()
	<-s.exited
}

func (s *Server) hasExited() bool {
	select {
	case <-s.exited:
		return true
	default:
		return false
	}
}

// logTail returns the last n lines of the server's log file and of anything
// it wrote to stdout/stderr (where errors before the log file is opened go).
func (s *Server) logTail(n int) string {
	var b strings.Builder
	for _, f := range []string{s.outFile, s.logFile} {
		data, err := os.ReadFile(f)
		if err != nil || len(strings.TrimSpace(string(data))) == 0 {
			continue
		}
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		if len(lines) > n {
			lines = lines[len(lines)-n:]
		}
		fmt.Fprintf(&b, "--- %s (last %d lines) ---\n%s\n", filepath.Base(f), len(lines), strings.Join(lines, "\n"))
	}
	if b.Len() == 0 {
		return "(no log output)"
	}
	return b.String()
}

// Standalone starts one redis-server for t and registers a t.Cleanup that
// stops it. The server runs with --bind 127.0.0.1 --save "" --appendonly no
// --repl-diskless-sync-delay 0 in its own temporary directory. extraArgs are
// appended to the command line as additional "--name value" configuration
// arguments and override those defaults, e.g.
// Standalone(t, "--maxmemory", "10mb"). Start-up failures fail the test.
func Standalone(t testing.TB, extraArgs ...string) *Server {
	t.Helper()
	s, err := StartStandalone(extraArgs...)
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("redistest: redis-server %s (pid %d) log:\n%s", s.Addr, s.Pid(), s.logTail(logTailLines))
		}
		s.Stop()
	})
	return s
}

// StartStandalone is like Standalone but does not need a testing.TB, for use
// from TestMain. The caller must call Stop on the returned Server.
func StartStandalone(extraArgs ...string) (*Server, error) {
	return start(startOpts{extra: extraArgs})
}

// startOpts describes the redis-server process to start.
type startOpts struct {
	// cluster enables cluster mode; the cluster bus port (port+10000) is
	// then also required to be free.
	cluster bool
	// sentinelConf, if non-empty, is written to sentinel.conf and the
	// process is started in sentinel mode with it.
	sentinelConf string
	// extra are appended to the generated command line.
	extra []string
}

func serverBinary() (string, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return "", errors.New("redis-server not found: install it with `apt-get install -y redis-server`")
	}
	return bin, nil
}

func cliBinary() (string, error) {
	bin, err := exec.LookPath("redis-cli")
	if err != nil {
		return "", errors.New("redis-cli not found: install it with `apt-get install -y redis-server`")
	}
	return bin, nil
}

func start(o startOpts) (*Server, error) {
	bin, err := serverBinary()
	if err != nil {
		return nil, err
	}
	var lastErr error
	for attempt := 0; attempt < startAttempts; attempt++ {
		s, retry, err := startOnce(bin, o)
		if err == nil {
			return s, nil
		}
		lastErr = err
		if !retry {
			break
		}
	}
	return nil, lastErr
}

// startOnce starts one process on a fresh port and waits until it answers.
// retry reports whether the failure looks like a lost port race, in which
// case trying again with another port is worthwhile.
func startOnce(bin string, o startOpts) (s *Server, retry bool, err error) {
	port, err := freePort(o.cluster)
	if err != nil {
		return nil, false, err
	}
	dir, err := os.MkdirTemp("", "redistest-")
	if err != nil {
		return nil, false, fmt.Errorf("redistest: create temp dir: %w", err)
	}
	s = &Server{
		Addr:    net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		port:    port,
		dir:     dir,
		logFile: filepath.Join(dir, "redis.log"),
		outFile: filepath.Join(dir, "output.log"),
		exited:  make(chan struct{}),
	}

	var args []string
	if o.sentinelConf != "" {
		conf := filepath.Join(dir, "sentinel.conf")
		if err := os.WriteFile(conf, []byte(o.sentinelConf), 0o600); err != nil {
			_ = os.RemoveAll(dir)
			return nil, false, fmt.Errorf("redistest: write sentinel config: %w", err)
		}
		args = append(args, conf, "--sentinel")
	}
	args = append(args,
		"--bind", "127.0.0.1",
		"--port", strconv.Itoa(port),
		"--dir", dir,
		"--logfile", s.logFile,
		"--daemonize", "no",
	)
	if o.sentinelConf == "" {
		// No persistence, and let replicas start syncing at once instead
		// of after the default 5 s diskless-sync delay.
		args = append(args, "--save", "", "--appendonly", "no", "--repl-diskless-sync-delay", "0")
	}
	if o.cluster {
		args = append(args,
			"--cluster-enabled", "yes",
			"--cluster-config-file", filepath.Join(dir, "nodes.conf"),
			"--cluster-node-timeout", "2000",
		)
	}
	args = append(args, o.extra...)

	out, err := os.Create(s.outFile)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, false, fmt.Errorf("redistest: create output file: %w", err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Stdout = out
	cmd.Stderr = out
	cmd.SysProcAttr = sysProcAttr()
	err = cmd.Start()
	_ = out.Close() // the child has its own copy of the descriptor
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, false, fmt.Errorf("redistest: start %s: %w", bin, err)
	}
	s.cmd, s.bin, s.args = cmd, bin, args
	go func() {
		s.waitErr = cmd.Wait()
		close(s.exited)
	}()

	if retry, err := s.waitReady(readyTimeout); err != nil {
		s.Stop()
		return nil, retry, err
	}
	return s, false, nil
}

// waitReady polls the server until it answers INFO with our own PID, which
// also guards against another process having grabbed the port first.
func (s *Server) waitReady(timeout time.Duration) (retry bool, err error) {
	deadline := time.Now().Add(timeout)
	backoff := 5 * time.Millisecond
	var lastErr error
	for {
		if s.hasExited() {
			tail := s.logTail(logTailLines)
			return strings.Contains(tail, "Address already in use"),
				fmt.Errorf("redistest: redis-server on %s exited during start-up (%v):\n%s", s.Addr, s.waitErr, tail)
		}
		info, err := doString(s.Addr, "INFO", "server")
		if err == nil {
			pid := infoFields(info)["process_id"]
			if pid == strconv.Itoa(s.Pid()) {
				return false, nil
			}
			return true, fmt.Errorf("redistest: port %d answered by another process (pid %s), not ours (pid %d)", s.port, pid, s.Pid())
		}
		lastErr = err
		if time.Now().After(deadline) {
			return false, fmt.Errorf("redistest: redis-server on %s (pid %d) not ready after %v: %v\n%s",
				s.Addr, s.Pid(), timeout, lastErr, s.logTail(logTailLines))
		}
		time.Sleep(backoff)
		if backoff < 100*time.Millisecond {
			backoff *= 2
		}
	}
}

// freePort returns a loopback TCP port that was free a moment ago. With
// clusterBus, port+10000 (the cluster bus port) was free as well.
func freePort(clusterBus bool) (int, error) {
	var lastErr error
	for i := 0; i < 50; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			lastErr = err
			continue
		}
		port := l.Addr().(*net.TCPAddr).Port
		if !clusterBus {
			_ = l.Close()
			return port, nil
		}
		if port+10000 > 65535 {
			_ = l.Close()
			continue
		}
		bus, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port+10000)))
		_ = l.Close()
		if err != nil {
			lastErr = err
			continue
		}
		_ = bus.Close()
		return port, nil
	}
	return 0, fmt.Errorf("redistest: no free loopback port found: %v", lastErr)
}

// startAll starts n servers concurrently. On error every server that did
// start is stopped again.
func startAll(n int, o startOpts) ([]*Server, error) {
	servers := make([]*Server, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			servers[i], errs[i] = start(o)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		stopAll(servers)
		return nil, err
	}
	return servers, nil
}

// stopAll stops the non-nil servers concurrently and waits for all of them.
func stopAll(servers []*Server) {
	var wg sync.WaitGroup
	for _, s := range servers {
		if s != nil {
			wg.Go(s.Stop)
		}
	}
	wg.Wait()
}

// exitedError returns an error for the first server that is no longer
// running, or nil if all are.
func exitedError(servers []*Server) error {
	for _, s := range servers {
		if s.hasExited() {
			return fmt.Errorf("redistest: redis-server on %s (pid %d) exited unexpectedly (%v):\n%s",
				s.Addr, s.Pid(), s.waitErr, s.logTail(logTailLines))
		}
	}
	return nil
}

// logTails returns the log tails of all servers, for test failure output.
func logTails(servers []*Server, n int) string {
	var b strings.Builder
	for _, s := range servers {
		fmt.Fprintf(&b, "=== %s (pid %d) ===\n%s\n", s.Addr, s.Pid(), s.logTail(n))
	}
	return b.String()
}
