//go:build !linux

package beanstalk

import "net"

// awaitHangUp waits until the client shuts down its side of the
// connection, reading ahead into the buffer. It reports how the client
// left, or stillThere when the watch was stopped.
func (c *conn) awaitHangUp() hangUpKind { return c.peekHangUp() }

// peerGone reports whether the connection is known to be gone; without a
// way to ask the socket, a failed write tells.
func peerGone(net.Conn) bool { return false }
