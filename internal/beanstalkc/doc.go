// Package beanstalkc implements a small client of the beanstalkd protocol,
// enough for the hourglass command's client subcommands and its benchmark:
// put, use, watch, ignore, reserve (with and without a timeout), delete,
// release, bury, touch, kick, kick-job, the peeks, the stats commands,
// list-tubes, list-tube-used, list-tubes-watched and pause-tube. It works
// against any server that speaks the protocol: hourglass's server package
// beanstalk, or beanstalkd itself.
//
// # Model
//
// A Conn is one connection. Commands on it run one at a time, in the order
// they are called, each waiting for its reply: a Conn is safe for concurrent
// use, but concurrent callers take turns. A connection has server-side
// state (the tube it uses, the tubes it watches, the jobs it has reserved),
// which a program sets up with Use and Watch. When the connection closes,
// the server returns the jobs it had reserved to the ready state.
//
// # Time
//
// Every method takes a context. Its deadline becomes the connection's I/O
// deadline for the command, and cancelling it interrupts the command. A
// command interrupted in the middle leaves the connection out of step with
// the server, so every later call returns an error wrapping ErrBroken; close
// the Conn and dial again.
//
// The protocol counts delays, TTRs, pauses and reserve timeouts in whole
// seconds: durations are rounded up to the next second (a delay of 1.2 s is
// sent as 2), so that a job is never due earlier than asked.
//
// # Errors
//
// The server's error replies are sentinels tested with errors.Is:
// ErrNotFound, ErrTimedOut, ErrDeadlineSoon, ErrDraining, ErrJobTooBig,
// ErrBuried, ErrOutOfMemory, ErrInternalError, ErrBadFormat,
// ErrUnknownCommand, ErrExpectedCRLF and ErrNotIgnored. After one of them
// the connection is still usable. A reply the client does not understand
// wraps ErrUnexpectedReply; it, an I/O error and an interrupted command all
// leave the connection broken (ErrBroken).
//
// # Stats
//
// The stats commands answer with flat YAML documents. Stats keeps their
// lines in the server's order as key and value strings, with YAML's double
// quotes removed ("1.12" becomes 1.12); Get and Int look a key up.
package beanstalkc
