package beanstalk

import (
	"context"
	"time"

	"github.com/hourglass-io/hourglass/queue"
)

// DefaultSessionLease is how long the reservations of a server that died
// outlive it on a shared store, when Server.SessionLease is zero.
const DefaultSessionLease = 5 * time.Second

// keepSession runs while the server serves, on a store that several
// servers share (queue.Sessions): it renews this server's session three
// times per lease, so that its connections' reservations are returned if it
// dies, and returns the reservations of servers whose lease has lapsed. It
// ends when stop is closed, and then ends the session (the connections have
// returned their jobs by then).
func (s *Server) keepSession(ss queue.Sessions, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	lease := s.sessionLease()
	log := s.logger()
	renew := time.NewTicker(lease / 3)
	defer renew.Stop()
	reap := time.NewTicker(lease)
	defer reap.Stop()
	for {
		select {
		case <-stop:
			ctx, cancel := context.WithTimeout(context.Background(), lease)
			if err := ss.EndSession(ctx, s.id); err != nil {
				log.Warn("beanstalk: ending the session", "session", s.id, "err", err)
			}
			cancel()
			return
		case <-renew.C:
			start := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), lease/3)
			err := ss.KeepAlive(ctx, s.id, lease)
			cancel()
			if err != nil {
				log.Error("beanstalk: renewing the session failed; reserves are refused (INTERNAL_ERROR) from a third of a lease before it could lapse until a renewal succeeds, so that no job is held twice",
					"session", s.id, "err", err)
				continue
			}
			if !s.sessionSure() {
				log.Info("beanstalk: the session is renewed again; reserves resume", "session", s.id)
			}
			s.renewed(start, lease)
		case <-reap.C:
			ctx, cancel := context.WithTimeout(context.Background(), lease)
			n, err := ss.Reap(ctx)
			cancel()
			if err != nil {
				log.Warn("beanstalk: returning the jobs of lapsed sessions", "err", err)
			} else if n > 0 {
				log.Info("beanstalk: returned the jobs of servers that stopped renewing their session", "jobs", n)
			}
		}
	}
}

// renewed records a renewal begun at start: the store's lease, counted from
// when the store ran it (after start), lasts at least until start+lease.
// Reserves are answered until a third of a lease before that, which leaves
// a reserve in flight that margin to reach the store.
func (s *Server) renewed(start time.Time, lease time.Duration) {
	s.sessionUntil.Store(start.Add(lease - lease/3).UnixNano())
}

// sessionSure reports whether this server may hand out jobs: its store has
// no sessions, or its session is renewed for long enough.
func (s *Server) sessionSure() bool {
	until := s.sessionUntil.Load()
	return until == 0 || time.Now().UnixNano() < until
}

func (s *Server) sessionLease() time.Duration {
	if s.SessionLease <= 0 {
		return DefaultSessionLease
	}
	return s.SessionLease
}

// startSession, once, before the first connection is accepted: starts the
// session keeper when the store is shared, then holds "default" for the
// server's life, as beanstalkd does (its counters never start again while
// a server runs).
func (s *Server) startSession() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.holdsDefault {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.sessionLease())
	defer cancel()
	ss, shared := s.Queue.Store().(queue.Sessions)
	if shared {
		start := time.Now()
		if err := ss.KeepAlive(ctx, s.id, s.sessionLease()); err != nil {
			return err
		}
		s.renewed(start, s.sessionLease())
	}
	if err := s.serverQueue().Hold(ctx, defaultTube, 1); err != nil {
		return err
	}
	s.holdsDefault = true
	if shared {
		s.sessionStop = make(chan struct{})
		s.sessionDone = make(chan struct{})
		go s.keepSession(ss, s.sessionStop, s.sessionDone)
	}
	return nil
}

// serverQueue is the queue as the server itself, an owner of its session.
func (s *Server) serverQueue() *queue.Queue { return s.Queue.WithOwner(s.id + "/server") }

// endSession lets go of "default" and stops the session keeper, which ends
// the session.
func (s *Server) endSession() {
	s.mu.Lock()
	started := s.holdsDefault
	s.holdsDefault = false
	stop, done := s.sessionStop, s.sessionDone
	s.sessionStop = nil
	s.mu.Unlock()
	if started {
		ctx, cancel := context.WithTimeout(context.Background(), s.sessionLease())
		if err := s.serverQueue().Hold(ctx, defaultTube, -1); err != nil {
			s.logger().Warn("beanstalk: letting go of the default tube", "err", err)
		}
		cancel()
	}
	if stop != nil {
		close(stop)
		<-done
	}
}
