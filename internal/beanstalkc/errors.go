package beanstalkc

import (
	"errors"
	"fmt"
	"strings"
)

// Errors the server answers with. Test them with errors.Is.
var (
	// ErrNotFound: NOT_FOUND. No such job, the job is not in a state the
	// command applies to (reserved by another connection, not buried or
	// delayed for kick-job), no job in the state a peek asks for, or no
	// such tube.
	ErrNotFound = errors.New("beanstalkc: not found")
	// ErrTimedOut: TIMED_OUT. A reserve with a timeout found no job in time.
	ErrTimedOut = errors.New("beanstalkc: timed out")
	// ErrDeadlineSoon: DEADLINE_SOON. A job this connection reserved is
	// within a second of the end of its TTR.
	ErrDeadlineSoon = errors.New("beanstalkc: deadline soon")
	// ErrDraining: DRAINING. The server is in drain mode and takes no new jobs.
	ErrDraining = errors.New("beanstalkc: server is draining")
	// ErrJobTooBig: JOB_TOO_BIG. The body is longer than the server's max-job-size.
	ErrJobTooBig = errors.New("beanstalkc: job too big")
	// ErrBuried: BURIED. The server buried the job it was given (put) or
	// asked to release (release) because it ran out of memory. Put returns
	// the job's ID with it.
	ErrBuried = errors.New("beanstalkc: job buried")
	// ErrOutOfMemory: OUT_OF_MEMORY. The server cannot store the job.
	ErrOutOfMemory = errors.New("beanstalkc: server out of memory")
	// ErrInternalError: INTERNAL_ERROR. The server failed (on hourglass,
	// usually its store).
	ErrInternalError = errors.New("beanstalkc: server internal error")
	// ErrBadFormat: BAD_FORMAT. The server did not understand the command.
	ErrBadFormat = errors.New("beanstalkc: bad format")
	// ErrUnknownCommand: UNKNOWN_COMMAND.
	ErrUnknownCommand = errors.New("beanstalkc: unknown command")
	// ErrExpectedCRLF: EXPECTED_CRLF. The body did not end with CRLF.
	ErrExpectedCRLF = errors.New("beanstalkc: expected CRLF after job body")
	// ErrNotIgnored: NOT_IGNORED. Ignore of the only tube watched.
	ErrNotIgnored = errors.New("beanstalkc: cannot ignore the only watched tube")
)

// Errors of the client itself.
var (
	// ErrUnexpectedReply: the server answered with something the command
	// does not expect. The connection is broken afterwards.
	ErrUnexpectedReply = errors.New("beanstalkc: unexpected reply")
	// ErrBroken: an earlier command failed in a way that leaves the
	// connection out of step with the server (an I/O error, an interrupted
	// command, an unexpected reply). Close the Conn.
	ErrBroken = errors.New("beanstalkc: connection broken by an earlier error")
	// ErrClosed: the Conn has been closed.
	ErrClosed = errors.New("beanstalkc: connection closed")
	// ErrInvalid: an argument cannot be sent (a tube name with a space or
	// a line break, a duration out of the protocol's range).
	ErrInvalid = errors.New("beanstalkc: invalid argument")
)

// replyErrors maps the error replies that any command may get to their
// sentinels.
var replyErrors = map[string]error{
	"NOT_FOUND":       ErrNotFound,
	"TIMED_OUT":       ErrTimedOut,
	"DEADLINE_SOON":   ErrDeadlineSoon,
	"DRAINING":        ErrDraining,
	"JOB_TOO_BIG":     ErrJobTooBig,
	"OUT_OF_MEMORY":   ErrOutOfMemory,
	"INTERNAL_ERROR":  ErrInternalError,
	"BAD_FORMAT":      ErrBadFormat,
	"UNKNOWN_COMMAND": ErrUnknownCommand,
	"EXPECTED_CRLF":   ErrExpectedCRLF,
	"NOT_IGNORED":     ErrNotIgnored,
}

// replyError returns the sentinel of an error reply line, or nil when line
// is not one.
func replyError(line string) error {
	return replyErrors[strings.TrimRight(line, " ")]
}

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
}
