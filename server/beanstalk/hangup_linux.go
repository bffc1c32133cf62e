//go:build linux

package beanstalk

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// awaitHangUp waits until the client shuts down its side of the
// connection, as beanstalkd does with EPOLLRDHUP: without reading, so that
// however much the client sends meanwhile stays for later. It reports
// whether the client hung up (false: the watch was stopped).
func (c *conn) awaitHangUp() bool {
	sc, ok := c.nc.(syscall.Conn)
	if !ok {
		return c.peekHangUp()
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return c.peekHangUp()
	}
	hup := false
	err = rc.Read(func(fd uintptr) bool {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLRDHUP}}
		n, err := unix.Poll(fds, 0)
		if err != nil {
			return err != unix.EINTR
		}
		hup = n > 0 && fds[0].Revents&(unix.POLLRDHUP|unix.POLLHUP|unix.POLLERR) != 0
		return hup // not yet: wait until the socket has news
	})
	return hup || (err != nil && !isTimeout(err))
}
