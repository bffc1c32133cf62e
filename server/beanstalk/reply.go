package beanstalk

import (
	"errors"
	"strconv"
	"strings"

	"github.com/hourglass-io/hourglass/queue"
)

// Outcomes of a command that are answered with a fixed reply. Handlers
// return them (or the queue's errors); replyErr turns them into replies.
var (
	errBadFormat      = errors.New("beanstalk: bad format")
	errUnknownCommand = errors.New("beanstalk: unknown command")
	errExpectedCRLF   = errors.New("beanstalk: expected CRLF after job body")
	errJobTooBig      = errors.New("beanstalk: job too big")
	errDraining       = errors.New("beanstalk: draining")
	errDeadlineSoon   = errors.New("beanstalk: deadline soon")
	errNotIgnored     = errors.New("beanstalk: cannot ignore the only watched tube")
	errTooManyWatched = errors.New("beanstalk: watching as many tubes as Server.MaxWatch allows")
	errTooManyWaits   = errors.New("beanstalk: as many reserves wait as Server.MaxWaits allows")
	errSessionUnsure  = errors.New("beanstalk: the server's session is not renewed: it hands out no job")
)

// Outcomes that end the connection without a reply.
var (
	errQuit   = errors.New("beanstalk: quit")
	errHangUp = errors.New("beanstalk: connection lost")
)

// errorReplies maps every error a command can end with to its reply, first
// match wins. An error not listed is a failure of the store (or a bug): the
// client gets INTERNAL_ERROR and the error is logged.
var errorReplies = []struct {
	err   error
	reply string
}{
	{errBadFormat, "BAD_FORMAT\r\n"},
	{errUnknownCommand, "UNKNOWN_COMMAND\r\n"},
	{errExpectedCRLF, "EXPECTED_CRLF\r\n"},
	{errJobTooBig, "JOB_TOO_BIG\r\n"},
	{errDraining, "DRAINING\r\n"},
	{errDeadlineSoon, "DEADLINE_SOON\r\n"},
	{errNotIgnored, "NOT_IGNORED\r\n"},
	{queue.ErrTimeout, "TIMED_OUT\r\n"},
	{queue.ErrNotFound, "NOT_FOUND\r\n"},
	{queue.ErrNotReserved, "NOT_FOUND\r\n"},
	{queue.ErrReserved, "NOT_FOUND\r\n"},
	{queue.ErrNotKickable, "NOT_FOUND\r\n"},
	{queue.ErrJobTooBig, "JOB_TOO_BIG\r\n"},
	{queue.ErrInvalidTube, "BAD_FORMAT\r\n"},
	{queue.ErrFull, "OUT_OF_MEMORY\r\n"},
	{errTooManyWatched, "OUT_OF_MEMORY\r\n"},
	{errTooManyWaits, "OUT_OF_MEMORY\r\n"},
	{errSessionUnsure, internalError},
}

const internalError = "INTERNAL_ERROR\r\n"

// replyFor returns the reply to err, and false when err is not an outcome
// the protocol has a reply for.
func replyFor(err error) (string, bool) {
	for _, e := range errorReplies {
		if errors.Is(err, e.err) {
			return e.reply, true
		}
	}
	return internalError, false
}

// reply writes a whole reply line (with its CRLF).
func (c *conn) reply(s string) {
	c.bw.WriteString(s)
}

// replyNum writes "<word> <n>\r\n": an id (INSERTED) or a count (KICKED,
// WATCHING).
func (c *conn) replyNum(word string, n uint64) {
	b := c.scratch[:0]
	b = append(b, word...)
	b = append(b, ' ')
	b = strconv.AppendUint(b, n, 10)
	b = append(b, "\r\n"...)
	c.bw.Write(b)
}

// replyJob writes "<word> <id> <bytes>\r\n<body>\r\n".
func (c *conn) replyJob(word string, j queue.Job) {
	b := c.scratch[:0]
	b = append(b, word...)
	b = append(b, ' ')
	b = strconv.AppendUint(b, uint64(j.ID), 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(len(j.Body)), 10)
	b = append(b, "\r\n"...)
	c.bw.Write(b)
	c.bw.Write(j.Body)
	c.bw.WriteString("\r\n")
}

// replyOK writes "OK <bytes>\r\n<data>\r\n".
func (c *conn) replyOK(data []byte) {
	b := c.scratch[:0]
	b = append(b, "OK "...)
	b = strconv.AppendInt(b, int64(len(data)), 10)
	b = append(b, "\r\n"...)
	c.bw.Write(b)
	c.bw.Write(data)
	c.bw.WriteString("\r\n")
}

// replyErr answers a command that ended with err, logging failures.
func (c *conn) replyErr(cmd string, err error) {
	r, ok := replyFor(err)
	if !ok {
		c.log.Error("beanstalk: command failed", "cmd", cmd, "err", err)
	}
	c.reply(r)
}

// Reply returns the word a command that ended with err replies
// ("NOT_FOUND", "TIMED_OUT", …; "INTERNAL_ERROR" for a failure of the
// store), and "" when err is nil or the connection closes instead of
// replying (quit, a lost connection). Server.Observe's callers use it to
// tell outcomes from failures.
func Reply(err error) string {
	if err == nil || errors.Is(err, errQuit) || errors.Is(err, errHangUp) {
		return ""
	}
	r, _ := replyFor(err)
	return strings.TrimSuffix(r, "\r\n")
}
