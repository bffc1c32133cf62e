package beanstalk

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hourglass-io/hourglass/queue"
)

// ErrServerClosed is returned by Serve after Shutdown.
var ErrServerClosed = errors.New("beanstalk: server closed")

// DefaultVersion is the version the stats command reports when
// Server.Version is empty: that of the beanstalkd whose behaviour the server
// reproduces, so that clients which look at it treat the server as such.
const DefaultVersion = "1.12"

// DefaultBodyTimeout is how long a put's body may take to arrive when
// neither Server.BodyTimeout nor Server.IdleTimeout is set. beanstalkd
// waits for ever; ten seconds is far beyond what a live client takes to
// send the largest body (64 KiB by default: five seconds at 100 kbit/s),
// and short enough that a client that sends put lines and never their
// bodies cannot pile up connections and their buffers.
const DefaultBodyTimeout = 10 * time.Second

// Server serves the beanstalkd protocol over a queue. Its zero value, with
// Queue set, is ready to use. A Server is safe for concurrent use; its
// fields must not change once Serve has been called.
type Server struct {
	// Queue holds the jobs. Required.
	Queue *queue.Queue
	// Logger receives connection limits, store failures and internal
	// errors. Default slog.Default().
	Logger *slog.Logger
	// MaxConns caps the open connections. A connection beyond it takes the
	// place of the one that has waited longest for its next command or a
	// put's body, if that is more than MinStall, so that idle clients or
	// bodies that never come cannot lock others out; when every connection
	// is busy or blocked in reserve, it is closed as soon as it is
	// accepted. 0 means no limit.
	MaxConns int
	// MinStall is how long a connection must have waited for a command or
	// a body before a connection beyond MaxConns may take its place.
	// Default DefaultMinStall.
	MinStall time.Duration
	// IdleTimeout closes a connection that sends no command for this long.
	// A connection blocked in reserve is never idle. 0 means no timeout.
	IdleTimeout time.Duration
	// BodyTimeout closes a connection that takes longer than this to send
	// the body of a put once its command line is in: a put whose body
	// never comes would otherwise hold the connection, and the buffer
	// sized for the body, for ever. Default: IdleTimeout when set, else
	// DefaultBodyTimeout; negative means no timeout.
	BodyTimeout time.Duration
	// MaxWatch caps the tubes one connection watches: a watch beyond it is
	// answered OUT_OF_MEMORY and changes nothing. 0 means no limit.
	MaxWatch int
	// MaxWaits caps the reserves blocked at once (reserve, and
	// reserve-with-timeout above 0): one beyond it is answered
	// OUT_OF_MEMORY at once. 0 means no limit.
	MaxWaits int
	// Version is the version the stats command reports (quoted).
	// Default DefaultVersion.
	Version string
	// Hostname is the hostname the stats command reports. Default
	// os.Hostname().
	Hostname string
	// BaseContext returns the context of the store calls made for the
	// connections of l; Shutdown does not cancel it. Default
	// context.Background().
	BaseContext func(l net.Listener) context.Context
	// SessionLease is, on a store several servers share (Redis), how long
	// this server's reservations outlive it if it dies: it renews a session
	// three times per lease, and any server returns the jobs of a session
	// that lapsed. Default DefaultSessionLease (5 s).
	SessionLease time.Duration
	// Observe, when set, is called after each command with its name
	// ("put", "reserve-with-timeout", …), how long it ran (a put's includes
	// reading its body) and the error its reply reports (nil for a success;
	// queue.ErrNotFound and the like for outcomes, anything else a failure).
	// It is called from the connections' goroutines and must be safe for
	// concurrent use. Metrics use it.
	Observe func(cmd string, d time.Duration, err error)
	// ConnState, when set, is called with +1 when a connection is accepted
	// and -1 when it closes, from the goroutine concerned; metrics use it.
	ConnState func(delta int)

	initOnce sync.Once
	id       string    // random, 16 hex digits: the stats "id" and the owner prefix
	started  time.Time // for the stats "uptime"
	// clockReads, when set (by tests), counts the reads of clock.
	clockReads *atomic.Int64
	host       hostInfo

	draining  atomic.Bool
	ops       [numOps]atomic.Uint64 // commands run by the connections closed, by opcode (opCounts)
	connSeq   atomic.Uint64         // numbers connections, for owner names
	totalConn atomic.Uint64
	current   atomic.Int64 // open connections
	producers atomic.Int64
	workers   atomic.Int64
	waiting   atomic.Int64
	waits     atomic.Int64 // blocked reserves admitted, against MaxWaits

	tubes registry

	// skipTurn is held (a token in a channel of one) while a connection
	// reads a share of a line too long or a body too big to keep: see
	// fairShare.
	skipTurn chan struct{}

	mu        sync.Mutex
	listeners map[net.Listener]struct{}
	conns     map[*conn]struct{}
	shutdown  bool
	connWG    sync.WaitGroup // one per connection goroutine; Add under mu while !shutdown

	holdsDefault bool          // startSession has run: "default" is held
	sessionStop  chan struct{} // closed to stop the session keeper; nil when none runs
	sessionDone  chan struct{} // closed when the session keeper has ended
	// sessionUntil is when (Unix ns, local clock) this server stops handing
	// out jobs unless its session is renewed; 0: the store has no sessions.
	sessionUntil atomic.Int64
}

func (s *Server) init() {
	s.initOnce.Do(func() {
		var b [8]byte
		if _, err := rand.Read(b[:]); err != nil {
			panic(err) // crypto/rand does not fail on supported platforms
		}
		s.id = hex.EncodeToString(b[:])
		s.started = time.Now()
		s.host = readHostInfo()
		if s.Hostname != "" {
			s.host.hostname = s.Hostname
		}
		s.tubes.init()
		s.skipTurn = make(chan struct{}, 1)
		s.listeners = map[net.Listener]struct{}{}
		s.conns = map[*conn]struct{}{}
	})
}

func (s *Server) logger() *slog.Logger {
	if s.Logger == nil {
		return slog.Default()
	}
	return s.Logger
}

func (s *Server) version() string {
	if s.Version == "" {
		return DefaultVersion
	}
	return s.Version
}

// Serve accepts connections on l and serves each in its own goroutine. It
// always returns a non-nil error and closes l: ErrServerClosed after
// Shutdown, otherwise the error Accept returned.
func (s *Server) Serve(l net.Listener) error {
	if s.Queue == nil {
		return errors.New("beanstalk: Server.Queue is nil")
	}
	s.init()
	defer l.Close()
	if !s.track(l, true) {
		return ErrServerClosed
	}
	defer s.track(l, false)
	if err := s.startSession(); err != nil {
		return err
	}

	base := context.Background()
	if s.BaseContext != nil {
		base = s.BaseContext(l)
		if base == nil {
			return errors.New("beanstalk: BaseContext returned a nil context")
		}
	}
	var backoff time.Duration
	for {
		nc, err := l.Accept()
		if err != nil {
			if s.closing() {
				return ErrServerClosed
			}
			if temporary(err) {
				// Out of file descriptors and the like: wait and retry, as net/http does.
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				s.logger().Warn("beanstalk: accept failed; retrying", "err", err, "in", backoff)
				time.Sleep(backoff)
				continue
			}
			return err
		}
		backoff = 0
		s.accept(base, nc)
	}
}

// temporary reports whether an Accept error may go away by itself
// (EMFILE, ECONNABORTED, a timeout).
func temporary(err error) bool {
	var te interface{ Temporary() bool }
	return errors.As(err, &te) && te.Temporary()
}

// track adds or removes a listener; adding fails once Shutdown has begun.
func (s *Server) track(l net.Listener, add bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !add {
		delete(s.listeners, l)
		return true
	}
	if s.shutdown {
		return false
	}
	s.listeners[l] = struct{}{}
	return true
}

func (s *Server) closing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.shutdown
}

// accept starts serving nc, or closes it when the server is full or closing.
func (s *Server) accept(base context.Context, nc net.Conn) {
	s.mu.Lock()
	if s.shutdown {
		s.mu.Unlock()
		nc.Close()
		return
	}
	if s.MaxConns > 0 && len(s.conns) >= s.MaxConns {
		victim := s.stalest()
		if victim == nil {
			s.mu.Unlock()
			s.logger().Warn("beanstalk: connection limit reached; closing new connection",
				"remote", nc.RemoteAddr().String(), "max_conns", s.MaxConns)
			nc.Close()
			return
		}
		victim.evict()
		s.logger().Warn("beanstalk: connection limit reached; closing the connection that waited longest for a command or a body",
			"remote", victim.nc.RemoteAddr().String(), "max_conns", s.MaxConns)
	}
	n := s.connSeq.Add(1)
	c := newConn(s, base, nc, s.id+"/"+strconv.FormatUint(n, 10))
	s.conns[c] = struct{}{}
	s.connWG.Add(1)
	s.mu.Unlock()
	s.totalConn.Add(1)
	if s.ConnState != nil {
		s.ConnState(1)
	}
	go func() {
		defer s.connWG.Done()
		c.serve()
	}()
}

// DefaultMinStall is how long a connection must have waited for its next
// command or for a put's body before a new connection may take its place
// when the server has MaxConns connections, when Server.MinStall is 0.
const DefaultMinStall = time.Second

// stalest returns the connection that has waited longest, at least
// MinStall, for its next command or a put's body, or nil; s.mu is held.
// Connections blocked in reserve or running a command are never chosen.
func (s *Server) stalest() *conn {
	var (
		victim *conn
		oldest time.Time
	)
	cut := time.Now().Add(-cmp.Or(s.MinStall, DefaultMinStall))
	for c := range s.conns {
		if since, ok := c.stalled(); ok && since.Before(cut) && (victim == nil || since.Before(oldest)) {
			victim, oldest = c, since
		}
	}
	return victim
}

// bodyTimeout is the BodyTimeout in effect.
func (s *Server) bodyTimeout() time.Duration {
	switch {
	case s.BodyTimeout != 0:
		return s.BodyTimeout
	case s.IdleTimeout > 0:
		return s.IdleTimeout
	}
	return DefaultBodyTimeout
}

// forget drops a connection that is closing; it no longer counts against
// MaxConns.
func (s *Server) forget(c *conn) {
	s.mu.Lock()
	for i := range c.ops {
		s.ops[i].Add(c.ops[i].Load())
	}
	delete(s.conns, c)
	s.mu.Unlock()
	if s.ConnState != nil {
		s.ConnState(-1)
	}
}

// Shutdown stops the server: it closes the listeners, lets the commands
// in flight finish, closes every connection (a reserve that is waiting
// ends without a reply) and returns the jobs the connections had reserved
// to ready. It returns once every connection is closed, or ctx.Err() when
// ctx ends first, after closing the connections that were still open.
func (s *Server) Shutdown(ctx context.Context) error {
	s.init()
	s.mu.Lock()
	s.shutdown = true
	for l := range s.listeners {
		l.Close()
	}
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()

	for _, c := range conns {
		c.stop()
	}
	done := make(chan struct{})
	go func() {
		s.connWG.Wait()
		close(done)
	}()
	select {
	case <-done:
		s.endSession()
		return nil
	case <-ctx.Done():
		s.mu.Lock()
		for c := range s.conns {
			c.nc.Close()
		}
		s.mu.Unlock()
		s.endSession()
		return ctx.Err()
	}
}

// Drain puts the server in drain mode for the rest of its life: every
// later put is refused with DRAINING, and stats reports "draining: true".
// Everything else keeps working.
func (s *Server) Drain() { s.draining.Store(true) }

// count records one run of a command, in the connection's own counters:
// counters all connections shared would move between the cores' caches at
// every command. Stats adds them up (opCounts).
func (c *conn) count(o op) { c.ops[o].Add(1) }

// opCounts returns the commands run so far, by opcode: those of the
// connections closed and of those open.
func (s *Server) opCounts() (n [numOps]uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range n {
		n[i] = s.ops[i].Load()
	}
	for c := range s.conns {
		for i := range n {
			n[i] += c.ops[i].Load()
		}
	}
	return n
}

// clock reads the local clock for the connections' own bookkeeping (the
// state's since, reservations' ends, Observe's durations): the monotonic
// clock alone, one read where time.Now takes two, as a Time after
// s.started.
func (s *Server) clock() time.Time {
	if s.clockReads != nil {
		s.clockReads.Add(1)
	}
	return s.started.Add(time.Since(s.started))
}

// hostname returns the name stats reports.
func hostname() string {
	h, err := os.Hostname()
	if err != nil {
		return "unknown"
	}
	return h
}
