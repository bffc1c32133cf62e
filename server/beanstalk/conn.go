package beanstalk

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/hourglass-io/hourglass/queue"
)

const (
	// maxLine is beanstalkd's command buffer (LINE_BUF_SIZE): the longest
	// command line, CRLF included.
	maxLine = 224
	// safetyMargin is how long before the end of a reservation reserve
	// answers DEADLINE_SOON.
	safetyMargin = time.Second
	// abandonTimeout bounds the store call that returns a closed
	// connection's jobs.
	abandonTimeout = 10 * time.Second
	defaultTube    = "default"
)

var (
	errLineTooLong = errors.New("beanstalk: command line too long")
	errHalfClosed  = errors.New("beanstalk: client closed its side while waiting")
	errReset       = errors.New("beanstalk: client gone while waiting")
	aLongTimeAgo   = time.Unix(1, 0)
)

// connState says what a connection's goroutine is doing, for Shutdown.
type connState int

const (
	stateIdle    connState = iota // reading the next command
	stateBusy                     // running a command
	stateWaiting                  // blocked in reserve
	stateBody                     // reading a put's body
)

// conn is one client connection. Its protocol state belongs to its own
// goroutine; mu guards what Shutdown touches.
type conn struct {
	srv *Server
	nc  net.Conn
	br  *bufio.Reader
	bw  *bufio.Writer
	q   *queue.Queue // the connection's owner view
	ctx context.Context
	log *slog.Logger
	// now is the local time as the connection last read it (Server.clock):
	// when the command running began, or when its wait in reserve ended.
	now     time.Time
	scratch [64]byte // reply lines are built here
	// line holds the command line being run; readLine returns it as a
	// string without a copy, valid until the next readLine: a command
	// keeps none of it (those that keep a tube name clone it).
	line [maxLine]byte
	// put is the job of the put running, handed to Queue.PutMany (which
	// keeps no hold of it).
	put [1]queue.NewJob

	used    string
	watched []string // in beanstalkd's order: appended, and the last one fills a hole
	// held caches the ends of the connection's reservations, for
	// DEADLINE_SOON: the local time at which the store's answer to a
	// reserve or a touch arrived plus the time left that the store gave
	// (queue.Job.Left, Queue.Touch), so that the store's clock decides. The
	// store is the ledger: closing returns what it lists (Queue.Abandon).
	held map[queue.ID]time.Time
	// ops counts the commands the connection ran, by opcode; written by
	// its goroutine, read by stats (Server.opCounts).
	ops      [numOps]atomic.Uint64
	producer bool // has put
	worker   bool // has reserved
	// finished is set once the client has closed its sending side (a FIN
	// seen while a reserve waited): whatever it sent before is answered
	// only while it can still read, which is checked before each command.
	finished bool
	// unanswered is a job reserved for a wait that the client's FIN ended
	// first (ID 0: none): it goes back.
	unanswered queue.Job

	mu         sync.Mutex
	state      connState
	since      time.Time // when the state began (idle and body)
	closing    bool
	evicted    bool                    // closed to make room for another
	cancelWait context.CancelCauseFunc // ends a blocked reserve
	deadline   time.Time               // the socket's read deadline, as last set
}

// setDeadlineLocked sets the socket's read deadline, unless it is set so
// already (most commands leave it unset: no call at all); c.mu is held.
func (c *conn) setDeadlineLocked(d time.Time) {
	if d.Equal(c.deadline) {
		return
	}
	c.deadline = d
	c.nc.SetReadDeadline(d)
}

// setDeadline is setDeadlineLocked for a caller that does not hold c.mu.
func (c *conn) setDeadline(d time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.setDeadlineLocked(d)
}

func newConn(s *Server, base context.Context, nc net.Conn, owner string) *conn {
	c := &conn{
		srv:     s,
		nc:      nc,
		br:      bufio.NewReaderSize(nc, 4096),
		bw:      bufio.NewWriterSize(nc, 4096),
		q:       s.Queue.WithOwner(owner),
		ctx:     base,
		log:     s.logger().With("conn", owner, "remote", nc.RemoteAddr().String()),
		used:    defaultTube,
		watched: []string{defaultTube},
		held:    map[queue.ID]time.Time{},
		state:   stateBusy, // until serve reads: not yet stalled
	}
	s.tubes.use(defaultTube, 1)
	s.tubes.watch(defaultTube, 1)
	s.current.Add(1)
	return c
}

// maxUnflushed is how many commands a connection runs from one pipelined
// burst before it sends their replies: a client that closed its end is
// noticed when a write fails, so at most about twice this many of its
// commands run after it left.
const maxUnflushed = 32

// serve runs the connection's commands until it closes.
func (c *conn) serve() {
	defer c.close()
	unflushed := 0
	// ended is when the last command ended, kept while nothing that
	// takes time (a flush, a wait for input) has come since: a command
	// whose line was already in the read buffer then starts at that
	// same instant, and one clock reading serves as both.
	var ended time.Time
	for first := true; c.idle(); first = false {
		queued := !ended.IsZero() && c.lineQueued()
		line, err := c.readLine()
		switch {
		case errors.Is(err, errLineTooLong):
			c.replyErr("", errBadFormat)
			ended = c.commandDone()
		case err != nil:
			return
		case first && httpRequestLine(line):
			// A browser (or any HTTP client) talking to this port: a
			// page can POST beanstalkd commands here cross-site, so
			// nothing it sends is run or answered.
			c.log.Debug("closing a connection that speaks HTTP")
			return
		default:
			c.busy()
			start := ended
			if !queued {
				start = c.srv.clock()
			}
			c.now = start
			name, err := c.do(line)
			end := c.commandDone()
			ended = end
			if name != "" && c.srv.Observe != nil {
				c.srv.Observe(name, end.Sub(start), err)
			}
			if err != nil {
				if errors.Is(err, errQuit) || errors.Is(err, errHangUp) {
					return
				}
				c.replyErr(strings.Clone(commandName(line)), err)
			}
		}
		if c.finished {
			// The client sent all it will send. It may still read (a
			// half-close, answered as beanstalkd answers it) or be gone
			// altogether: then the reply just written brought back a reset,
			// and nothing more runs for no one.
			ended = time.Time{}
			if c.bw.Flush() != nil || peerGone(c.nc) {
				return // closing returns what it holds, unanswered included
			}
			if j := c.unanswered; j.ID != 0 {
				c.unanswered = queue.Job{}
				if err := c.q.Release(c.ctx, j.ID, j.Priority, 0); err != nil {
					c.log.Warn("beanstalk: returning a job that came as its client closed its side", "job", j.ID, "err", err)
				}
			}
			continue
		}
		if unflushed++; c.br.Buffered() == 0 || unflushed >= maxUnflushed {
			unflushed, ended = 0, time.Time{}
			if err := c.bw.Flush(); err != nil {
				return
			}
		}
	}
}

var crlf = []byte("\r\n")

// lineQueued reports whether a whole command line is in the read buffer:
// reading it will not wait.
func (c *conn) lineQueued() bool {
	p, _ := c.br.Peek(c.br.Buffered())
	return bytes.Index(p, crlf) >= 0
}

// httpRequestLine reports whether line looks like the request line of
// HTTP/1 ("POST / HTTP/1.1") or HTTP/2's preface ("PRI * HTTP/2.0"): an
// upper-case method, a target and an HTTP version. No beanstalkd command
// is upper-case.
func httpRequestLine(line string) bool {
	method, rest, ok := strings.Cut(line, " ")
	if !ok || method == "" {
		return false
	}
	for _, r := range method {
		if r < 'A' || r > 'Z' {
			return false
		}
	}
	i := strings.LastIndexByte(rest, ' ')
	return i > 0 && strings.HasPrefix(rest[i+1:], "HTTP/")
}

// idle marks the connection reading its next command and arms the idle
// timeout. It reports false once Shutdown has begun.
func (c *conn) idle() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closing {
		return false
	}
	var d time.Time
	if c.state != stateIdle { // commandDone marks it idle, since its reply
		c.now = c.srv.clock()
		c.state, c.since = stateIdle, c.now
	}
	if c.srv.IdleTimeout > 0 {
		d = c.since.Add(c.srv.IdleTimeout)
	}
	c.setDeadlineLocked(d)
	return true
}

// commandDone marks the connection waiting for its next command from the
// moment its command is answered, before the reply is flushed, so that
// MaxConns sees it so without waiting for the goroutine to come round to
// idle. It returns the time it read, which it keeps in c.now.
func (c *conn) commandDone() time.Time {
	c.now = c.srv.clock()
	c.mu.Lock()
	if c.state == stateBusy || c.state == stateBody {
		c.state, c.since = stateIdle, c.now
	}
	c.mu.Unlock()
	return c.now
}

// stalled reports since when the connection has waited for its next
// command or a put's body, if it is doing either.
func (c *conn) stalled() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.since, !c.closing && (c.state == stateIdle || c.state == stateBody)
}

// evict closes the connection to make room for another (Server.MaxConns):
// its read ends at once and it closes as Shutdown would close it, its
// reservations returned.
func (c *conn) evict() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closing, c.evicted = true, true
	c.setDeadlineLocked(aLongTimeAgo)
}

// busy marks the connection running a command.
func (c *conn) busy() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closing {
		// stop interrupted the read after the line came in: let the
		// command read its body and finish.
		c.setDeadlineLocked(time.Time{})
	}
	c.state = stateBusy
}

// stop makes the connection close after the command it is running: an
// idle connection at once, a blocked reserve without a reply.
func (c *conn) stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closing = true
	switch c.state {
	case stateIdle:
		c.setDeadlineLocked(aLongTimeAgo)
	case stateWaiting:
		c.cancelWait(ErrServerClosed)
	}
}

// close returns the connection's jobs and lets go of its tubes, then closes
// the socket: a client that sees the connection end sees its jobs ready.
func (c *conn) close() {
	c.bw.Flush()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.ctx), abandonTimeout)
	if c.worker { // a connection that never reserved holds nothing
		if _, err := c.q.Abandon(ctx); err != nil {
			c.log.Error("beanstalk: returning the jobs of a closed connection", "err", err)
		}
	}
	refs := map[string]int{c.used: 1}
	for _, t := range c.watched {
		refs[t]++
	}
	for t, n := range refs {
		c.unhold(ctx, t, n)
	}
	cancel()
	c.srv.tubes.use(c.used, -1)
	for _, t := range c.watched {
		c.srv.tubes.watch(t, -1)
	}
	if c.producer {
		c.srv.producers.Add(-1)
	}
	if c.worker {
		c.srv.workers.Add(-1)
	}
	c.srv.current.Add(-1)
	c.srv.forget(c)
	c.nc.Close()
}

// readLine reads the next command line and returns it without its CRLF.
// It frames lines exactly as beanstalkd does: a line ends at the first
// '\r' of a 224-byte window when a '\n' follows it; a window without such
// an end is thrown away, and so is every following window up to and
// including the next one that has an end, which gives errLineTooLong
// (skipLine reads those).
func (c *conn) readLine() (string, error) {
	buf := &c.line
	// Most lines are in the buffer whole once it has anything: framed
	// there at once, as below they would be byte by byte.
	if c.br.Buffered() == 0 {
		if _, err := c.br.Peek(1); err != nil {
			return "", err
		}
	}
	if p, _ := c.br.Peek(min(c.br.Buffered(), maxLine)); len(p) > 1 {
		if i := bytes.IndexByte(p, '\r'); i >= 0 && i+1 < len(p) && p[i+1] == '\n' {
			n := copy(buf[:], p[:i])
			c.br.Discard(i + 2)
			if n == 0 {
				return "", nil
			}
			return unsafe.String(&buf[0], n), nil
		}
	}
	n := 0        // bytes in the current window
	cr := false   // the last byte was the window's first '\r'
	dead := false // the window's first '\r' was not followed by '\n'
	for {
		b, err := c.br.ReadByte()
		if err != nil {
			return "", err
		}
		buf[n] = b
		n++
		switch {
		case cr:
			cr = false
			if b == '\n' {
				if n == 2 {
					return "", nil
				}
				return unsafe.String(&buf[0], n-2), nil
			}
			dead = true
		case b == '\r' && !dead:
			cr = true
		}
		if n == maxLine {
			return "", c.skipLine()
		}
	}
}

// fairShare is how many bytes a connection reads of a line too long or a
// body it throws away before it lets the other connections' goroutines
// run: such a client always has more to read, and without the yield one
// client's flood of huge lines keeps the others waiting for the Go
// scheduler's 10 ms time slices, one after another. Each share is read
// holding the server's one skipping turn (Server.skipTurn), so however many
// connections throw bytes away, they take one core between them and leave
// the others to connections that send commands: with 50 connections
// sending 8 MB lines on 2 cores, a fresh command's reply came at p50 10 ms
// and p99 20-30 ms without the turn, and 1.2-1.5 ms and 8-10 ms with it
// (bench/cmd/fairbench).
const fairShare = 64 << 10

// skipLine throws away the windows of a line that did not fit in the first
// one, as readLine frames them, and returns errLineTooLong once a window
// ends the line. It finds the windows' '\r' with bytes.IndexByte rather than
// byte by byte and, once the buffer is empty, reads the socket fairShare
// bytes at a time into a pooled buffer (what follows the line is put back
// in front of the connection's reader), yielding after each.
func (c *conn) skipLine() error {
	n := 0        // bytes in the current window
	cr := false   // the last byte was the window's first '\r'
	dead := false // the window's first '\r' was not followed by '\n'
	// scan frames p and returns how much of it belongs to the line, and
	// whether the line ended there.
	scan := func(p []byte) (int, bool) {
		i := 0
		for i < len(p) {
			switch {
			case cr:
				b := p[i]
				i++
				n++
				if b == '\n' {
					return i, true
				}
				cr, dead = false, true
			case dead:
				k := min(len(p)-i, maxLine-n)
				i += k
				n += k
			default:
				k := min(len(p)-i, maxLine-n)
				if j := bytes.IndexByte(p[i:i+k], '\r'); j >= 0 {
					k, cr = j+1, true
				}
				i += k
				n += k
			}
			if n == maxLine {
				n, cr, dead = 0, false, false
			}
		}
		return i, false
	}
	if k := c.br.Buffered(); k > 0 {
		p, _ := c.br.Peek(k)
		i, end := scan(p)
		c.br.Discard(i)
		if end {
			return errLineTooLong
		}
	}
	bp := skipBufs.Get().(*[]byte)
	defer skipBufs.Put(bp)
	for {
		c.srv.skipTurn <- struct{}{}
		k, err := c.nc.Read(*bp)
		<-c.srv.skipTurn
		if i, end := scan((*bp)[:k]); end {
			if i < k {
				c.br.Reset(io.MultiReader(bytes.NewReader(bytes.Clone((*bp)[i:k])), c.nc))
			}
			return errLineTooLong
		}
		if err != nil {
			return err
		}
		runtime.Gosched()
	}
}

// skipBufs are skipLine's buffers, fairShare bytes each.
var skipBufs = sync.Pool{New: func() any { b := make([]byte, fairShare); return &b }}

// discard throws away n bytes of the connection (a body too big to keep),
// yielding every fairShare bytes as skipLine does.
func (c *conn) discard(n int64) error {
	for n > 0 {
		c.srv.skipTurn <- struct{}{}
		k, err := c.br.Discard(int(min(n, fairShare)))
		<-c.srv.skipTurn
		n -= int64(k)
		if err != nil {
			return err
		}
		runtime.Gosched()
	}
	return nil
}

// refreshDeadline arms the body timeout, for a body that follows its
// command line.
func (c *conn) refreshDeadline() {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	if c.evicted {
		return // evict interrupted the read: keep it so
	}
	if d := c.srv.bodyTimeout(); d > 0 {
		c.setDeadlineLocked(now.Add(d))
	}
	c.state, c.since = stateBody, now
}

// hangUp wraps an I/O error that ends the connection.
func hangUp(err error) error { return fmt.Errorf("%w: %w", errHangUp, err) }

func (c *conn) setProducer() {
	if !c.producer {
		c.producer = true
		c.srv.producers.Add(1)
	}
}

func (c *conn) setWorker() {
	if !c.worker {
		c.worker = true
		c.srv.workers.Add(1)
	}
}

// reserved records a job the connection reserved and answers with it,
// unless the server's session is no longer sure: then the job goes back
// (if the session has lapsed, another server may have returned it already)
// and the reserve is refused, so that no job is ever held by two clients.
func (c *conn) reserved(j queue.Job) error {
	if !c.srv.sessionSure() {
		c.q.Release(c.ctx, j.ID, j.Priority, 0)
		return errSessionUnsure
	}
	// c.now was read before the store's answer came: the reservation's
	// end is taken a little early, never late.
	c.held[j.ID] = c.now.Add(j.Left)
	c.replyJob("RESERVED", j)
	return nil
}

// deadlineSoon reports whether a job the connection holds is within the
// safety margin of the end of its reservation, and when the next one will
// be (zero if none). Reservations that have ended are forgotten.
func (c *conn) deadlineSoon(now time.Time) (soon bool, next time.Time) {
	if len(c.held) == 0 {
		return false, time.Time{}
	}
	for id, deadline := range c.held {
		if !now.Before(deadline) {
			delete(c.held, id) // the TTR ran out: the job is no longer ours
			continue
		}
		at := deadline.Add(-safetyMargin)
		if !now.Before(at) {
			soon = true
		}
		if next.IsZero() || at.Before(next) {
			next = at
		}
	}
	return soon, next
}

// reserve answers reserve and reserve-with-timeout. A negative timeout
// waits for ever.
func (c *conn) reserve(timeout time.Duration) error {
	c.setWorker()
	if !c.srv.sessionSure() {
		return errSessionUnsure
	}
	now := c.now
	soon, soonAt := c.deadlineSoon(now)
	if soon || timeout == 0 {
		j, err := c.q.Reserve(c.ctx, queue.ReserveOptions{Tubes: c.watched, Timeout: -1})
		if err != nil {
			if soon && errors.Is(err, queue.ErrTimeout) {
				return errDeadlineSoon
			}
			return err
		}
		return c.reserved(j)
	}

	// Wait for a job, for the timeout, or until a reservation enters the
	// safety margin, whichever comes first.
	wait := timeout
	if !soonAt.IsZero() {
		if d := soonAt.Sub(now); wait < 0 || d < wait {
			wait = d
		}
	}
	if wait < 0 {
		wait = 0 // the queue's "until ctx ends"
	}
	// At the bound on waits a reserve is refused before it asks the store
	// anything. Below it, a job that is ready now needs no wait: no watch
	// of the connection for a hang-up (a goroutine and two deadline
	// changes), no wake-up, and no place among the waits, whose count
	// every connection's reserve would otherwise write. Only when none is
	// ready does the reserve take a place (refused if the bound was
	// reached meanwhile), wait, and ask again.
	maxWaits := int64(c.srv.MaxWaits)
	if maxWaits > 0 && c.srv.waits.Load() >= maxWaits {
		return errTooManyWaits
	}
	j, err := c.q.Reserve(c.ctx, queue.ReserveOptions{Tubes: c.watched, Timeout: -1})
	if err == nil {
		return c.reserved(j)
	}
	if !errors.Is(err, queue.ErrTimeout) {
		return err
	}
	if maxWaits > 0 {
		if c.srv.waits.Add(1) > maxWaits {
			c.srv.waits.Add(-1)
			return errTooManyWaits
		}
		defer c.srv.waits.Add(-1)
	}
	if err := c.bw.Flush(); err != nil {
		return hangUp(err)
	}
	ctx, cancel := context.WithCancelCause(c.ctx)
	defer cancel(nil)
	if !c.enterWait(cancel) {
		return hangUp(ErrServerClosed)
	}
	c.srv.waiting.Add(1)
	c.srv.tubes.wait(c.watched, 1)
	watching := c.watchHangUp(cancel)
	j, err = c.q.Reserve(ctx, queue.ReserveOptions{Tubes: c.watched, Timeout: wait})
	c.now = c.srv.clock()
	watching()
	c.srv.tubes.wait(c.watched, -1)
	c.srv.waiting.Add(-1)
	c.busy()

	var left error // why the client left, if it did
	if ctx.Err() != nil {
		left = context.Cause(ctx)
	}
	switch {
	case err == nil && errors.Is(left, errReset):
		// The job came as the client left: closing returns it, unseen.
		return hangUp(errReset)
	case err == nil && errors.Is(left, errHalfClosed):
		// The job came as the client closed its side: it is answered as
		// if the hang-up had come first, and the job goes back when the
		// client turns out to be gone (closing returns it) or, should it
		// still read, at once (serve).
		c.finished = true
		c.unanswered = j
		return queue.ErrTimeout
	case err == nil:
		return c.reserved(j)
	case errors.Is(err, queue.ErrTimeout):
		if !soonAt.IsZero() && !c.now.Before(soonAt) {
			return errDeadlineSoon
		}
		return err
	case ctx.Err() != nil && errors.Is(context.Cause(ctx), errHalfClosed):
		// beanstalkd answers a half-close TIMED_OUT, and then what the
		// client had sent before it, while the client can read.
		c.finished = true
		return queue.ErrTimeout
	case ctx.Err() != nil && errors.Is(context.Cause(ctx), errReset):
		return hangUp(errReset)
	case ctx.Err() != nil && errors.Is(context.Cause(ctx), ErrServerClosed):
		return hangUp(ErrServerClosed)
	}
	return err
}

// enterWait marks the connection blocked in reserve, cancellable by stop.
func (c *conn) enterWait(cancel context.CancelCauseFunc) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closing {
		return false
	}
	c.state = stateWaiting
	c.cancelWait = cancel
	return true
}

// hangUpKind is how a client left while its reserve waited.
type hangUpKind int

const (
	stillThere hangUpKind = iota // the watch was stopped
	halfClosed                   // a FIN: the client sends no more, and may still read
	reset                        // a reset or an error: the connection is gone
)

// watchHangUp watches the connection while it waits in reserve, so that a
// client that closes its side ends the wait with errHalfClosed, and one
// that resets the connection with errReset. Commands that arrive meanwhile
// are left for later. The returned function stops the watch and must be
// called before the connection reads again.
func (c *conn) watchHangUp(cancel context.CancelCauseFunc) (stop func()) {
	c.setDeadline(time.Time{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		switch c.awaitHangUp() {
		case halfClosed:
			cancel(errHalfClosed)
		case reset:
			cancel(errReset)
		}
	}()
	return func() {
		c.setDeadline(aLongTimeAgo)
		<-done
		c.setDeadline(time.Time{})
	}
}

// peekHangUp waits for the end of the client's stream by reading ahead
// into the buffer, where the commands that arrive meanwhile stay. Once the
// buffer is full it can watch no further. It reports how the stream ended.
func (c *conn) peekHangUp() hangUpKind {
	for {
		n := c.br.Buffered()
		if n >= c.br.Size() {
			return stillThere
		}
		_, err := c.br.Peek(n + 1)
		switch {
		case err == nil:
		case isTimeout(err):
			return stillThere
		case errors.Is(err, io.EOF):
			return halfClosed
		default:
			return reset
		}
	}
}

// isTimeout reports whether err is a deadline passing.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
