package main

import (
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hourglass-io/hourglass/server/httpapi"
)

// slowCommand is how long a beanstalkd-protocol command other than a
// reserve may take before serve logs it at debug level as slow.
const slowCommand = 100 * time.Millisecond

// logListener logs, at debug level, each connection it accepts and, when
// the connection closes, how long it lasted and the bytes it carried.
type logListener struct {
	net.Listener
	log *slog.Logger
}

func (l logListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.log.Debug("connection accepted", "remote", c.RemoteAddr().String())
	lc := &logConn{Conn: c, log: l.log, start: time.Now()}
	if sc, ok := c.(syscall.Conn); ok {
		// The server watches a raw socket for hang-ups.
		return &logSyscallConn{lc, sc}, nil
	}
	return lc, nil
}

type logConn struct {
	net.Conn
	log       *slog.Logger
	start     time.Time
	in, out   atomic.Int64
	closeOnce sync.Once
}

func (c *logConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.in.Add(int64(n))
	return n, err
}

func (c *logConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.out.Add(int64(n))
	return n, err
}

func (c *logConn) Close() error {
	err := c.Conn.Close()
	c.closeOnce.Do(func() {
		c.log.Debug("connection closed", "remote", c.RemoteAddr().String(),
			"duration_ms", httpapi.DurationMS(time.Since(c.start)), "bytes_in", c.in.Load(), "bytes_out", c.out.Load())
	})
	return err
}

type logSyscallConn struct {
	*logConn
	sc syscall.Conn
}

func (c *logSyscallConn) SyscallConn() (syscall.RawConn, error) { return c.sc.SyscallConn() }

// observeSlow wraps a beanstalk.Server.Observe function to also log, at
// debug level, commands slower than slowCommand; reserves, which wait by
// design, are left out.
func observeSlow(log *slog.Logger, next func(string, time.Duration, error)) func(string, time.Duration, error) {
	return func(cmd string, d time.Duration, err error) {
		if d >= slowCommand && cmd != "reserve" && cmd != "reserve-with-timeout" {
			log.Debug("slow command", "command", cmd, "duration_ms", httpapi.DurationMS(d), "err", err)
		}
		next(cmd, d, err)
	}
}
