package beanstalkc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// MaxBody is the largest job body or stats document a Conn reads: the
// largest max-job-size beanstalkd accepts (1 GiB).
const MaxBody = 1 << 30

// aLongTimeAgo is a deadline in the past, to interrupt blocked I/O.
var aLongTimeAgo = time.Unix(1, 0)

// Conn is a connection to a beanstalkd-protocol server. It is safe for
// concurrent use; commands run one at a time.
type Conn struct {
	nc net.Conn

	// mu serializes commands and guards the fields below.
	mu     sync.Mutex
	br     *bufio.Reader
	bw     *bufio.Writer
	err    error // sticky: why the connection can no longer be used
	closed bool
}

// Dial connects to the server at addr (host:port) over TCP. ctx bounds the
// connection attempt only.
func Dial(ctx context.Context, addr string) (*Conn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	return NewConn(nc), nil
}

// NewConn returns a Conn that speaks over nc, which it takes ownership of.
func NewConn(nc net.Conn) *Conn {
	return &Conn{nc: nc, br: bufio.NewReaderSize(nc, 4096), bw: bufio.NewWriterSize(nc, 4096)}
}

// RemoteAddr returns the server's address.
func (c *Conn) RemoteAddr() net.Addr { return c.nc.RemoteAddr() }

// Close closes the connection; the server returns the jobs it reserved to
// ready. A command running in another goroutine fails. Close may be called
// more than once.
func (c *Conn) Close() error {
	// Not under mu: Close interrupts a command that holds it.
	err := c.nc.Close()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	return err
}

// do runs one command: it sends line (and body, when not nil, followed by
// CRLF), reads the reply line, and passes it to read, which may read the
// data that follows. ctx bounds the whole exchange.
func (c *Conn) do(ctx context.Context, line string, body []byte, read func(reply string) error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.closed:
		return ErrClosed
	case c.err != nil:
		return fmt.Errorf("%w: %w", ErrBroken, c.err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	deadline, _ := ctx.Deadline()
	c.nc.SetDeadline(deadline)
	interrupted := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		c.nc.SetDeadline(aLongTimeAgo)
		close(interrupted)
	})
	err := c.exchange(line, body, read)
	if !stop() {
		// ctx ended while the command ran: wait until the deadline is set,
		// so that it cannot land on the next command.
		<-interrupted
		if err != nil {
			err = ctx.Err()
		}
	}
	if err != nil && isTimeout(err) && !deadline.IsZero() {
		err = context.DeadlineExceeded
	}
	if err != nil && !isReplyError(err) {
		err = fmt.Errorf("beanstalkc: %s: %w", commandName(line), err)
		c.err = err
	}
	return err
}

// exchange writes a command and reads its reply.
func (c *Conn) exchange(line string, body []byte, read func(reply string) error) error {
	c.bw.WriteString(line)
	c.bw.WriteString("\r\n")
	if body != nil {
		c.bw.Write(body)
		c.bw.WriteString("\r\n")
	}
	if err := c.bw.Flush(); err != nil {
		return err
	}
	reply, err := c.readLine()
	if err != nil {
		return err
	}
	if err := read(reply); err != nil {
		return err
	}
	return nil
}

// replyErr wraps the sentinel of an error reply so that do can tell it from
// a failure of the connection.
type replyErr struct{ err error }

func (e replyErr) Error() string { return e.err.Error() }
func (e replyErr) Unwrap() error { return e.err }

func isReplyError(err error) bool {
	var r replyErr
	return errors.As(err, &r)
}

// fail returns the error for a reply that a command does not expect: an
// error reply's sentinel, or ErrUnexpectedReply.
func fail(reply string) error {
	if err := replyError(reply); err != nil {
		return replyErr{err}
	}
	return fmt.Errorf("%w %q", ErrUnexpectedReply, reply)
}

func isTimeout(err error) bool {
	return errors.Is(err, os.ErrDeadlineExceeded)
}

// readLine reads a reply line and returns it without its CRLF.
func (c *Conn) readLine() (string, error) {
	b, err := c.br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		return "", fmt.Errorf("%w: reply line longer than %d bytes", ErrUnexpectedReply, c.br.Size())
	}
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return "", err
	}
	if len(b) < 2 || b[len(b)-2] != '\r' {
		return "", fmt.Errorf("%w: reply line %q does not end with CRLF", ErrUnexpectedReply, b)
	}
	return string(b[:len(b)-2]), nil
}

// readData reads n bytes of data and the CRLF after them.
func (c *Conn) readData(n uint64) ([]byte, error) {
	if n > MaxBody {
		return nil, fmt.Errorf("%w: %d bytes of data (at most %d)", ErrUnexpectedReply, n, MaxBody)
	}
	b := make([]byte, n+2)
	if _, err := io.ReadFull(c.br, b); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	if b[n] != '\r' || b[n+1] != '\n' {
		return nil, fmt.Errorf("%w: data not followed by CRLF", ErrUnexpectedReply)
	}
	return b[:n:n], nil
}

// commandName is the first word of a command line, for errors.
func commandName(line string) string {
	name, _, _ := strings.Cut(line, " ")
	return name
}

// fields splits a reply line into its words, checking the first one and
// the number of the others.
func fields(reply, word string, n int) ([]string, bool) {
	f := strings.Split(reply, " ")
	if len(f) != n+1 || f[0] != word {
		return nil, false
	}
	return f[1:], true
}

// seconds converts a duration to the protocol's whole seconds, rounding up.
func seconds(what string, d time.Duration) (uint32, error) {
	if d < 0 {
		return 0, fmt.Errorf("%w: %s %v is negative", ErrInvalid, what, d)
	}
	s := (d + time.Second - 1) / time.Second
	if s > math.MaxUint32 {
		return 0, fmt.Errorf("%w: %s %v is more than 2^32-1 seconds", ErrInvalid, what, d)
	}
	return uint32(s), nil
}

// checkTube refuses a tube name that would change the command's meaning.
// The server checks the rest.
func checkTube(name string) error {
	if name == "" || strings.ContainsAny(name, " \t\r\n") {
		return fmt.Errorf("%w: tube name %q is empty or has a space or line break", ErrInvalid, name)
	}
	return nil
}

func formatUint(n uint64) string { return strconv.FormatUint(n, 10) }
