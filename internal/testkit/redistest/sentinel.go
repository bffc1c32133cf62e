package redistest

import (
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"
)

const (
	// sentinelMasterName is the name the sentinels monitor the master as.
	sentinelMasterName = "mymaster"
	// sentinelTimeout bounds waiting for the sentinels to discover the
	// replica and each other.
	sentinelTimeout = 30 * time.Second
	// sentinelCount is the number of sentinel processes started.
	sentinelCount = 3
)

// Sentinel is a Redis Sentinel setup started by this package: one master,
// one replica of it, and three sentinels monitoring the master as
// MasterName with quorum 2, down-after-milliseconds 1000 and
// failover-timeout 5000. Master and Replica reflect the roles at start-up;
// they are not updated after a failover.
type Sentinel struct {
	// Master is the monitored master.
	Master *Server
	// Replica replicates from Master.
	Replica *Server
	// Sentinels are the three sentinel processes.
	Sentinels []*Server
	// MasterName is the name the sentinels know the master by ("mymaster").
	MasterName string

	stopOnce sync.Once
}

// SentinelAddrs returns the addresses of the sentinel processes.
func (s *Sentinel) SentinelAddrs() []string { return addrsOf(s.Sentinels) }

// Stop stops the sentinels first (so stopping the data nodes does not start
// a failover), then the master and the replica, and waits for all of them.
// It is idempotent.
func (s *Sentinel) Stop() {
	s.stopOnce.Do(func() {
		stopAll(s.Sentinels)
		stopAll([]*Server{s.Master, s.Replica})
	})
}

func (s *Sentinel) all() []*Server {
	return append([]*Server{s.Master, s.Replica}, s.Sentinels...)
}

// NewSentinel starts a sentinel setup like StartSentinel and registers a
// t.Cleanup that stops it. Start-up failures fail the test.
func NewSentinel(t testing.TB) *Sentinel {
	t.Helper()
	s, err := StartSentinel()
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("redistest: sentinel setup logs:\n%s", logTails(s.all(), 10))
		}
		s.Stop()
	})
	return s
}

// StartSentinel starts a master, a replica of it and three sentinels, and
// waits until every sentinel sees the master as healthy, knows at least one
// replica and knows the two other sentinels. The caller must call Stop on the
// returned Sentinel.
func StartSentinel() (*Sentinel, error) {
	deadline := time.Now().Add(sentinelTimeout)
	s := &Sentinel{MasterName: sentinelMasterName}
	fail := func(err error) (*Sentinel, error) {
		s.Stop()
		return nil, err
	}

	var err error
	if s.Master, err = start(startOpts{}); err != nil {
		return fail(err)
	}
	masterPort := strconv.Itoa(s.Master.port)
	if s.Replica, err = start(startOpts{extra: []string{"--replicaof", "127.0.0.1", masterPort}}); err != nil {
		return fail(err)
	}
	// Let the replica attach before the sentinels start, so their first
	// INFO of the master already lists it.
	if err := waitFor(deadline, []*Server{s.Master, s.Replica}, func() error {
		role, err := doArray(s.Replica.Addr, "ROLE")
		if err != nil {
			return err
		}
		if len(role) < 4 || role[0] != "slave" || role[3] != "connected" {
			return fmt.Errorf("replica %s not connected to master %s: %v", s.Replica.Addr, s.Master.Addr, role)
		}
		return nil
	}); err != nil {
		return fail(err)
	}

	conf := fmt.Sprintf("sentinel monitor %[1]s 127.0.0.1 %[2]s 2\n"+
		"sentinel down-after-milliseconds %[1]s 1000\n"+
		"sentinel failover-timeout %[1]s 5000\n",
		s.MasterName, masterPort)
	if s.Sentinels, err = startAll(sentinelCount, startOpts{sentinelConf: conf}); err != nil {
		return fail(err)
	}

	if err := waitFor(deadline, s.all(), func() error {
		for _, sn := range s.Sentinels {
			reply, err := doArray(sn.Addr, "SENTINEL", "MASTER", s.MasterName)
			if err != nil {
				return fmt.Errorf("sentinel %s: SENTINEL MASTER %s: %w", sn.Addr, s.MasterName, err)
			}
			m := pairs(reply)
			if m["flags"] != "master" {
				return fmt.Errorf("sentinel %s: master flags %q", sn.Addr, m["flags"])
			}
			if n, _ := strconv.Atoi(m["num-slaves"]); n < 1 {
				return fmt.Errorf("sentinel %s: num-slaves %q, want >= 1", sn.Addr, m["num-slaves"])
			}
			if n, _ := strconv.Atoi(m["num-other-sentinels"]); n != sentinelCount-1 {
				return fmt.Errorf("sentinel %s: num-other-sentinels %q, want %d", sn.Addr, m["num-other-sentinels"], sentinelCount-1)
			}
		}
		return nil
	}); err != nil {
		return fail(err)
	}
	return s, nil
}

// waitFor polls cond until it returns nil, one of servers exits, or the
// deadline passes.
func waitFor(deadline time.Time, servers []*Server, cond func() error) error {
	for {
		if err := exitedError(servers); err != nil {
			return err
		}
		err := cond()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redistest: sentinel setup not ready within %v: %w", sentinelTimeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
