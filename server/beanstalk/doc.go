// Package beanstalk serves the beanstalkd protocol over a queue.Queue, so
// that existing beanstalkd clients work unchanged against hourglass.
//
// The protocol is reproduced as beanstalkd 1.12 speaks it, byte for byte:
// the same commands and replies, the same limits (224-byte command lines,
// 200-byte tube names, the queue's MaxJobSize for bodies), the same stats
// documents with their field order, and the quirks clients may depend on:
// commands matched by prefix, the body of a badly formatted put read as
// commands, reserve-with-timeout and kick parsed as C's strtol and strtoul
// parse them, DEADLINE_SOON a second before a reservation ends unless a job
// is ready.
//
// # Model
//
// Each connection is an owner of the queue (Queue.WithOwner), named after
// the server and the connection's number, with its own used tube (at first
// "default") and watch list (at first [default]). When the connection
// closes, or quits, the jobs it has reserved go back to ready at once.
// Jobs, their IDs and their counts come from the queue's store and are
// shared by every server on that store; connection counts (current-using,
// current-watching, current-waiting, current-connections) and command
// counts belong to one Server.
//
// A tube lives, as in beanstalkd, while it holds a job or a connection uses
// or watches it, and "default" always lives; its counters (total-jobs,
// cmd-delete, cmd-pause-tube) and its pause live and go with it. Each
// connection holds the tubes it uses and watches in the store
// (queue.Store.Hold), so a tube lives while a connection of any server
// sharing the store refers to it, and each Server holds "default" while it
// serves. On a shared store the references belong to the server's session:
// when a server dies, they go once its session lease lapses and another
// server reaps it. stats-tube and pause-tube answer NOT_FOUND for a tube
// that does not live.
//
// A client that goes away while its reserve waits is noticed at once,
// without reading what it sent after the reserve (on Linux, as beanstalkd
// does, by the socket's hang-up events): a reset ends the connection there,
// its jobs back to ready and none of the commands it had pipelined behind
// the reserve run; a FIN is answered TIMED_OUT, as beanstalkd answers a
// half-close, and the commands sent before it are answered one at a time
// only while the client still reads: a client that closed its socket
// answers the TIMED_OUT with a reset, and the connection ends there. A job
// that reaches a reserve as its client leaves goes back to ready unseen
// (a release, should the half-closed client still read).
// A client that goes away while the server waits for a put's body ends
// the connection as soon as the socket says so, with no job stored.
//
// A connection whose first line is an HTTP request line ("POST / HTTP/1.1")
// is closed without an answer and nothing it sent is run, so that a web
// page cannot post commands to the port from a browser.
//
// Durations on the wire are whole seconds; a TTR of 0 is taken as 1 second.
//
// # Lifecycle
//
// Server follows net/http's Server: Serve accepts connections until
// Shutdown, which lets commands in flight finish, closes the connections
// (ending waiting reserves without a reply) and returns their jobs. Drain
// refuses every later put with DRAINING. A Server is safe for concurrent
// use.
//
// Store failures are answered with INTERNAL_ERROR and logged; a store that
// is full (queue.ErrFull) is answered with OUT_OF_MEMORY.
//
// # Caps
//
// beanstalkd caps neither the tubes a connection watches nor the reserves
// blocked at once; Server does, when MaxWatch and MaxWaits are set
// (hourglass serve sets both: --max-watch and --max-waits). A reserve
// names every watched tube to the store, so a watch list of thousands makes
// each reserve (one script call on Redis) as long; and every blocked
// reserve holds a goroutine and a wait-list entry, plus on Redis a share
// of the wake-up subscription of each tube it watches. Going over either
// cap is answered OUT_OF_MEMORY: the protocol lets any command get it,
// every beanstalkd client already handles it as "the server cannot take
// this now, try again later", and nothing changes. BAD_FORMAT would tell
// the client its command is malformed, which it is not, and TIMED_OUT would
// make a client of reserve (without a timeout) think it asked for one.
//
// # Differences from beanstalkd 1.12
//
// Job IDs are the store's: they do not start at 1 on Redis (they follow
// Redis's clock, so that none is issued twice after Redis loses writes),
// and a put that fails (EXPECTED_CRLF, DRAINING) uses none up. They rise
// in put order across every tube on the embedded engine and on one Redis,
// so jobs of equal priority in several watched tubes are taken in put
// order; on a Redis Cluster, tubes on different slots order by the
// masters' clocks to the millisecond. A server that stalls past its
// session lease (SessionLease) loses its connections' hold on their tubes
// when another server reaps the session: a tube only they refer to may go,
// counters and all, while they still use it (their reservations return
// the same way). pause-tube checks that the tube lives and then pauses it,
// two steps on a store several servers share: a tube whose last reference
// goes through another server in between is paused while nothing holds it,
// and then lives until its pause ends, as a tube paused through the HTTP
// API does (queue.Store.PauseTube). The stats fields total-jobs
// and job-timeouts count since the store was created (or opened), the
// binlog fields are those of a beanstalkd without a binlog, and id is
// random per Server. Several connections waiting on one tube are served
// oldest first, where beanstalkd 1.12 takes turns. The end of a reservation
// is the store's: a connection caches each reservation's end as the time
// its reserve or touch was answered plus the time left the store gave, and
// times DEADLINE_SOON by it on this process's clock; closing returns what
// the store lists as the connection's (Queue.Abandon). A put
// whose body does not arrive within BodyTimeout (DefaultBodyTimeout, ten
// seconds, unless set) closes the connection, where beanstalkd waits for
// ever: a put line makes the server set aside a buffer of the size it
// announces, so clients that send put lines and no bodies would otherwise
// hold that memory, and their connections, without end. A connection idle
// between commands is kept for ever, as beanstalkd keeps it, unless
// IdleTimeout is set: producers that put now and then hold one open. But
// idle connections and bodies that never come cannot lock others out: at
// MaxConns, a new connection takes the place of the one that has waited
// longest (over MinStall, a second) for its next command or a body; only
// when every connection runs a command or waits in reserve is the new one
// refused. A line longer than beanstalkd's 224 bytes is thrown away a
// socket read of at most 64 KiB at a time, as is a too-big body, and only
// one connection of a Server reads such bytes at once, so however many
// clients send huge lines they take one core between them and delay the
// others little. On a
// shared store, a server whose session renewals fail answers every reserve
// with INTERNAL_ERROR from a third of a lease before its session could
// lapse until a renewal succeeds, so that no job is ever held by two
// clients.
package beanstalk
