//go:build !linux

package beanstalk

// awaitHangUp waits until the client shuts down its side of the
// connection, reading ahead into the buffer. It reports whether the client
// hung up (false: the watch was stopped).
func (c *conn) awaitHangUp() bool { return c.peekHangUp() }
