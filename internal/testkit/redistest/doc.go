// Package redistest starts throwaway redis-server processes for tests and
// stops them again when the test is done.
//
// Every server listens on 127.0.0.1 only, on a free port picked at start-up
// (never 6379), keeps its files in a private temporary directory and runs
// with persistence disabled (--save "" --appendonly no). Servers are stopped
// by the PID of the process this package started, from t.Cleanup for the
// testing.TB variants (so also when a test fails) or by an explicit Stop
// call for the Start* variants, which are meant for TestMain.
//
// Three topologies are available:
//
//   - Standalone / StartStandalone: one plain redis-server.
//   - NewCluster / StartCluster: a Redis Cluster of N masters with optional
//     replicas, assembled with redis-cli --cluster create and fully
//     converged (cluster_state:ok, all 16384 slots assigned) before return.
//   - NewSentinel / StartSentinel: one master, one replica and three
//     sentinels monitoring the master under the name "mymaster".
//
// SharedStandalone and SharedCluster hand out one lazily started instance of
// each per test binary; call StopShared from TestMain after m.Run (Main is
// such a TestMain). Tests
// sharing a server should namespace their keys with Prefix.
//
// The redis-server and redis-cli binaries must be on PATH; when they are not,
// start-up fails with an error explaining how to install them. Tests are
// never skipped because Redis is missing.
package redistest
