package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The beanstalk workload drives a beanstalkd-protocol server over 8
// connections: `hourglass serve --store redis://…` and `hourglass serve
// --store mem://` (built from the parent module) and Debian's in-memory
// beanstalkd. Beside jobs/s it reports the server process's own CPU per
// job (user + system, from /proc), which moves less with the machine's
// load than a rate does.

// bsServer is a protocol server this program started; stop ends it by PID.
type bsServer struct {
	addr string
	cmd  *exec.Cmd
	done chan struct{}
}

func (s *bsServer) stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
}

// startProc starts bin with args and waits until addr accepts connections.
func startProc(ctx context.Context, addr, bin string, args ...string) (*bsServer, error) {
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &bsServer{addr: addr, cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(s.done) }()
	deadline := time.Now().Add(15 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			_ = c.Close()
			return s, nil
		}
		select {
		case <-s.done:
			return nil, fmt.Errorf("%s exited: %s", bin, tail(stderr.String(), 500))
		case <-ctx.Done():
			s.stop()
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, fmt.Errorf("%s does not listen on %s after 15 s", bin, addr)
		}
	}
}

// loopbackAddr returns 127.0.0.1 with a port free right now.
func loopbackAddr() (string, error) {
	p, err := freePort(false)
	if err != nil {
		return "", err
	}
	return "127.0.0.1:" + strconv.Itoa(p), nil
}

var (
	buildOnce sync.Once
	buildBin  string
	buildErr  error
)

// hourglassBinary builds ../cmd/hourglass once into a temporary directory.
func hourglassBinary(cfg *config) (string, error) {
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "queuebench-hourglass-")
		if err != nil {
			buildErr = err
			return
		}
		bin := filepath.Join(dir, "hourglass")
		cmd := exec.Command("go", "build", "-o", bin, "./cmd/hourglass")
		cmd.Dir = cfg.hourglassSrc
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/hourglass in %s: %v: %s", cfg.hourglassSrc, err, tail(string(out), 1000))
			return
		}
		buildBin = bin
	})
	return buildBin, buildErr
}

func startHourglassServe(ctx context.Context, e *env) (*bsServer, error) {
	return startHourglass(ctx, e, "redis://"+e.addr)
}

func startHourglassMem(ctx context.Context, e *env) (*bsServer, error) {
	return startHourglass(ctx, e, "mem://")
}

func startHourglass(ctx context.Context, e *env, store string) (*bsServer, error) {
	bin, err := hourglassBinary(e.cfg)
	if err != nil {
		return nil, err
	}
	addr, err := loopbackAddr()
	if err != nil {
		return nil, err
	}
	return startProc(ctx, addr, bin, "serve", "--store", store, "--beanstalk-addr", addr, "--http-addr", "", "--log-level", "warn")
}

// procCPU returns the CPU time, user + system, that process pid has used.
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The fields after the command name, which is in parentheses.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, errors.New("malformed /proc stat")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, errors.New("short /proc stat")
	}
	// utime and stime are fields 14 and 15 of stat, in clock ticks
	// (USER_HZ, 100 on Linux).
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	s, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return time.Duration(u+s) * 10 * time.Millisecond, nil
}

func startBeanstalkd(ctx context.Context, e *env) (*bsServer, error) {
	addr, err := loopbackAddr()
	if err != nil {
		return nil, err
	}
	_, port, _ := net.SplitHostPort(addr)
	return startProc(ctx, addr, e.cfg.beanstalkd, "-l", "127.0.0.1", "-p", port)
}

// bsRun starts a server with start, then measures put/s (cfg.ops jobs,
// cfg.producers connections) and reserve+delete/s (cfg.concurrency
// connections) until the tube is empty, and the server's CPU per job of
// each. Its metrics are named prefix+"put", prefix+"reserve_delete" and
// those with "_proc_cpu" after them.
func bsRun(start func(context.Context, *env) (*bsServer, error), onRedis bool, prefix string) func(context.Context, *env) (string, []measurement, error) {
	return func(ctx context.Context, e *env) (string, []measurement, error) {
		srv, err := start(ctx, e)
		if err != nil {
			return "", nil, err
		}
		defer srv.stop()
		conns := make([]*bsConn, max(e.cfg.producers, e.cfg.concurrency))
		for i := range conns {
			c, err := dialBeanstalk(srv.addr, hgTube)
			if err != nil {
				return "", nil, err
			}
			defer c.close()
			conns[i] = c
		}
		b := body(e.cfg.body)
		if _, err := conns[0].put(b); err != nil { // warm-up
			return "", nil, err
		}
		n := e.cfg.ops
		cpu := ctx
		if !onRedis {
			cpu = context.WithValue(ctx, cpuMeterKey{}, (*cpuMeter)(nil))
		}
		pid := srv.cmd.Process.Pid
		perJob := func(t0 time.Duration, jobs int) float64 {
			t1, err := procCPU(pid)
			if err != nil {
				return -1
			}
			return float64((t1 - t0).Microseconds()) / float64(jobs)
		}
		cpuBegin(cpu)
		p0, err := procCPU(pid)
		if err != nil {
			return "", nil, err
		}
		start := time.Now()
		if err := perWorker(ctx, e.cfg.producers, n, func(_ context.Context, w int) error {
			_, err := conns[w].put(b)
			return err
		}); err != nil {
			return "", nil, fmt.Errorf("put: %w", err)
		}
		put := float64(n) / time.Since(start).Seconds()
		putProc := perJob(p0, n)
		cpuEnd(cpu, "bs_put", n)
		cpuBegin(cpu)
		if p0, err = procCPU(pid); err != nil {
			return "", nil, err
		}
		start = time.Now()
		if err := perWorker(ctx, e.cfg.concurrency, n+1, func(_ context.Context, w int) error {
			id, err := conns[w].reserve()
			if err != nil {
				return err
			}
			return conns[w].delete(id)
		}); err != nil {
			return "", nil, fmt.Errorf("reserve+delete: %w", err)
		}
		rd := float64(n+1) / time.Since(start).Seconds()
		rdProc := perJob(p0, n+1)
		cpuEnd(cpu, "bs_reserve_delete", n+1)
		return fmt.Sprintf("put %.0f/s (%.1f µs CPU), reserve+delete %.0f/s (%.1f µs CPU)", put, putProc, rd, rdProc),
			[]measurement{{prefix + "put", put}, {prefix + "reserve_delete", rd}, {prefix + "put_proc_cpu", putProc}, {prefix + "reserve_delete_proc_cpu", rdProc}}, nil
	}
}

// bsConn is a minimal beanstalkd protocol client: put, reserve-with-timeout
// and delete on one tube, enough for the workload.
type bsConn struct {
	c net.Conn
	r *bufio.Reader
	w *bufio.Writer
}

func dialBeanstalk(addr, tube string) (*bsConn, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	bc := &bsConn{c: c, r: bufio.NewReader(c), w: bufio.NewWriter(c)}
	if _, err := bc.cmd("use "+tube+"\r\n", "USING"); err != nil {
		c.Close()
		return nil, err
	}
	if _, err := bc.cmd("watch "+tube+"\r\n", "WATCHING"); err != nil {
		c.Close()
		return nil, err
	}
	return bc, nil
}

func (b *bsConn) close() { _ = b.c.Close() }

// cmd sends line and returns the reply's words after want, or an error
// naming any other reply.
func (b *bsConn) cmd(line, want string) ([]string, error) {
	_ = b.c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := b.w.WriteString(line); err != nil {
		return nil, err
	}
	if err := b.w.Flush(); err != nil {
		return nil, err
	}
	reply, err := b.r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	f := strings.Fields(reply)
	if len(f) == 0 || f[0] != want {
		return nil, fmt.Errorf("%s: reply %q", strings.TrimSpace(line), strings.TrimSpace(reply))
	}
	return f[1:], nil
}

func (b *bsConn) put(body []byte) (uint64, error) {
	f, err := b.cmd("put 0 0 60 "+strconv.Itoa(len(body))+"\r\n"+string(body)+"\r\n", "INSERTED")
	if err != nil {
		return 0, err
	}
	if len(f) != 1 {
		return 0, errors.New("put: malformed INSERTED")
	}
	return strconv.ParseUint(f[0], 10, 64)
}

func (b *bsConn) reserve() (uint64, error) {
	f, err := b.cmd("reserve-with-timeout 5\r\n", "RESERVED")
	if err != nil {
		return 0, err
	}
	if len(f) != 2 {
		return 0, errors.New("reserve: malformed RESERVED")
	}
	id, err := strconv.ParseUint(f[0], 10, 64)
	if err != nil {
		return 0, err
	}
	size, err := strconv.Atoi(f[1])
	if err != nil || size < 0 {
		return 0, fmt.Errorf("reserve: bad size %q", f[1])
	}
	buf := make([]byte, size+2)
	if _, err := io.ReadFull(b.r, buf); err != nil {
		return 0, err
	}
	return id, nil
}

func (b *bsConn) delete(id uint64) error {
	_, err := b.cmd("delete "+strconv.FormatUint(id, 10)+"\r\n", "DELETED")
	return err
}
