// Package redisstore implements the stores of every hourglass primitive on
// Redis 7.0 or later — standalone, Sentinel or Cluster — through a go-redis
// v9 UniversalClient: queue.Store (Store itself), and ratelimit.Store,
// ttlhash.Store, lock.Store and schedule.Store (Store.Limits, Hashes, Locks
// and Schedules). This page describes the queue's; docs/redis-data-model.md
// has every primitive's keys and scripts.
//
// # Atomicity
//
// Every operation of the store is one function of one Redis Functions
// library: the operations are Lua files (scripts/*.lua, embedded, each in
// the family families.go registers for its prefix), assembled at start
// into the library, which is loaded on every master with FUNCTION LOAD
// (again on a node that has lost it) and called with FCALL. Each operation
// declares every key it touches, and all of them share one hash tag, so
// each runs on one cluster slot. Redis refuses a cross-slot access, and a
// write while out of memory (reported as queue.ErrFull), instead of doing
// it: no function carries the flags that would allow either. Operations
// validate before their first write and do bounded work:
// at most 1000 due jobs are promoted per call.
//
// # Time
//
// Deadlines come from Redis's TIME inside the scripts, so instances with
// skewed clocks agree; each tag keeps a high-water mark so a clock that steps
// back cannot reorder deadlines. Options.Clock replaces TIME for tests.
// Due transitions (a delay ending, a TTR running out, a pause ending) are
// applied by whichever script next touches the tube; waiting reservers wake at
// the next due time the store reported, so no scan runs on a timer.
//
// # Layout
//
// Keys start with Options.Prefix (default "hg:"). A tube partition lives
// under one of 256 hash tags, chosen by a hash of the tube name; the tags are
// spread evenly over the 16384 slots. A job ID is sequence·256 + tag, so a
// command that names only an ID reaches the right slot without a scan; IDs
// stay below 2^53. A tube can be split into Options.Partitions partitions on
// different tags, so one busy tube can use several cluster nodes; priority
// order then holds within a partition, and a reserve over several tags is
// best effort across them. See docs/redis-data-model.md for every key.
//
// # Waiting
//
// Each write that may make a job ready publishes on the tube partition's
// sharded pub/sub channel (SPUBLISH, in the tube's slot). A process shares
// one subscription per tag among all its waiters (Store implements
// queue.Notifier), so an idle reserver costs no commands.
//
// # Expiring hash fields
//
// Store.Hashes (or HashesWith) returns the ttlhash.Store on the same client,
// prefix and clock: hashes whose fields carry their own TTL, their due index
// (a sharded timing wheel) and their expiry events (Redis Streams with
// consumer groups), under "<prefix>h:{T}:". Run a ttlhash.Sweeper in one or
// more processes to expire due fields. See docs/ttlhash.md.
//
// # Retries
//
// go-redis re-sends a command after a network error unless MaxRetries is -1;
// a re-sent put or reserve would run twice. Use MaxRetries: -1 (hourglass.Open
// does). A network error then leaves the outcome unknown: a put may or may
// not have happened (UniqueKey makes a retry safe), a reserve may have
// reserved a job that comes back after its TTR.
//
// # Rate limits
//
// Store.Limits returns the ratelimit.Store on the same client, prefix and
// clock: one script per decision (scripts/rl_gcra.lua, rl_log.lua,
// rl_window.lua), keys <prefix>rl:{<key>}:…, state that expires when the key
// is idle again. Decisions that wait together go out as one call (on a
// cluster, those of one slot), in a lane of their own with two batches in
// flight, so that queue calls never hold them up. A re-sent decision
// (retries on) would charge twice. See docs/ratelimit.md for the keys and
// bytes per key.
//
// # What a failover can lose
//
// Redis replication is asynchronous: a write acknowledged by a master that
// fails before its replica has it is lost when the replica is promoted.
// Nothing acknowledged is lost on one Redis node with appendonly yes and
// appendfsync always; with appendfsync everysec, up to a second of writes.
package redisstore
