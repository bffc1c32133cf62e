package redistest

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

var errSharedStopped = errors.New("redistest: shared servers already stopped by StopShared")

var (
	sharedStandaloneOnce sync.Once
	sharedStandalone     *Server
	sharedStandaloneErr  error

	sharedClusterOnce sync.Once
	sharedCluster     *Cluster
	sharedClusterErr  error

	sharedStopped atomic.Bool
)

// SharedStandalone returns a standalone server shared by all tests of the
// test binary. It is started on first use; a start-up error is returned to
// every caller. Tests using it should namespace their keys with Prefix and
// must not run commands that affect the whole server (FLUSHALL, CONFIG SET,
// ...). Call StopShared from TestMain after m.Run to stop it.
func SharedStandalone() (*Server, error) {
	sharedStandaloneOnce.Do(func() {
		sharedStandalone, sharedStandaloneErr = StartStandalone()
	})
	if sharedStopped.Load() {
		return nil, errSharedStopped
	}
	return sharedStandalone, sharedStandaloneErr
}

// SharedCluster returns a 3-master cluster without replicas shared by all
// tests of the test binary. It is started on first use; a start-up error is
// returned to every caller. Tests using it should namespace their keys with
// Prefix and must not change the cluster's topology. Call StopShared from
// TestMain after m.Run to stop it.
func SharedCluster() (*Cluster, error) {
	sharedClusterOnce.Do(func() {
		sharedCluster, sharedClusterErr = StartCluster(3, 0)
	})
	if sharedStopped.Load() {
		return nil, errSharedStopped
	}
	return sharedCluster, sharedClusterErr
}

// StopShared stops the shared servers that were started, waiting for any
// start still in progress. Afterwards SharedStandalone and SharedCluster
// return an error. Call it from TestMain after m.Run:
//
//	func TestMain(m *testing.M) {
//		code := m.Run()
//		redistest.StopShared()
//		os.Exit(code)
//	}
func StopShared() {
	sharedStopped.Store(true)
	// Wait for in-flight starts and prevent later ones.
	sharedStandaloneOnce.Do(func() { sharedStandaloneErr = errSharedStopped })
	sharedClusterOnce.Do(func() { sharedClusterErr = errSharedStopped })
	if sharedStandalone != nil {
		sharedStandalone.Stop()
	}
	if sharedCluster != nil {
		sharedCluster.Stop()
	}
}

// Main is the TestMain of a package whose tests share the servers: it runs
// the tests, stops the shared servers and exits with the tests' code.
func Main(m *testing.M) {
	code := m.Run()
	StopShared()
	os.Exit(code)
}

var prefixSeq atomic.Uint64

// Prefix returns a key prefix unique to this call within the test binary,
// built from t.Name() (sanitised to letters, digits, '_', '-' and '.') and a
// counter, e.g. "TestGet_missing.7:". Use it to keep tests that share a
// server from colliding. The prefix contains no '{' or '}', so callers may
// append their own hash tags for cluster keys.
func Prefix(t testing.TB) string {
	name := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-', r == '.':
			return r
		default:
			return '_'
		}
	}, t.Name())
	if len(name) > 64 {
		name = name[:64]
	}
	return fmt.Sprintf("%s.%d:", name, prefixSeq.Add(1))
}
