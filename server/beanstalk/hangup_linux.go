//go:build linux

package beanstalk

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// awaitHangUp waits until the client shuts down its side of the
// connection, as beanstalkd does with EPOLLRDHUP: without reading, so that
// however much the client sends meanwhile stays for later. It reports how
// the client left, or stillThere when the watch was stopped.
func (c *conn) awaitHangUp() hangUpKind {
	sc, ok := c.nc.(syscall.Conn)
	if !ok {
		return c.peekHangUp()
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return c.peekHangUp()
	}
	kind := stillThere
	err = rc.Read(func(fd uintptr) bool {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLRDHUP}}
		n, err := unix.Poll(fds, 0)
		switch {
		case err != nil:
			return err != unix.EINTR
		case n == 0:
		case fds[0].Revents&(unix.POLLHUP|unix.POLLERR) != 0:
			kind = reset
		case fds[0].Revents&unix.POLLRDHUP != 0:
			kind = halfClosed
		}
		return kind != stillThere // not yet: wait until the socket has news
	})
	if kind == stillThere && err != nil && !isTimeout(err) {
		kind = reset
	}
	return kind
}

// peerGone reports whether the connection has been reset or closed both
// ways: a client that closed its socket answers what is written to it
// with a reset, which on the loopback is in before the write returns.
func peerGone(nc net.Conn) bool {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	gone := false
	rc.Control(func(fd uintptr) {
		fds := []unix.PollFd{{Fd: int32(fd)}}
		n, err := unix.Poll(fds, 0)
		gone = err == nil && n > 0 && fds[0].Revents&(unix.POLLHUP|unix.POLLERR) != 0
	})
	return gone
}
