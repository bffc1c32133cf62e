package beanstalk

import (
	"context"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/hourglass-io/hourglass/queue"
)

// commands are matched against a command line by prefix, in this order,
// as beanstalkd's which_cmd does. Prefixes without a trailing space match
// longer words too: "reservex" is "reserve" with trailing garbage
// (BAD_FORMAT), "pause-tubefoo 5" pauses "foo", and anything that starts
// with "quit" quits.
var commands = [...]struct {
	prefix, name string // name: the prefix without its space, for Server.Observe
	run          func(c *conn, args string) error
}{
	{"put ", "put", (*conn).cmdPut},
	{"peek ", "peek", (*conn).cmdPeek},
	{"peek-ready", "peek-ready", (*conn).cmdPeekReady},
	{"peek-delayed", "peek-delayed", (*conn).cmdPeekDelayed},
	{"peek-buried", "peek-buried", (*conn).cmdPeekBuried},
	{"reserve-with-timeout ", "reserve-with-timeout", (*conn).cmdReserveWithTimeout},
	{"reserve-job ", "reserve-job", (*conn).cmdReserveJob},
	{"reserve", "reserve", (*conn).cmdReserve},
	{"delete ", "delete", (*conn).cmdDelete},
	{"release ", "release", (*conn).cmdRelease},
	{"bury ", "bury", (*conn).cmdBury},
	{"kick ", "kick", (*conn).cmdKick},
	{"kick-job ", "kick-job", (*conn).cmdKickJob},
	{"touch ", "touch", (*conn).cmdTouch},
	{"stats-job ", "stats-job", (*conn).cmdStatsJob},
	{"stats-tube ", "stats-tube", (*conn).cmdStatsTube},
	{"stats", "stats", (*conn).cmdStats},
	{"use ", "use", (*conn).cmdUse},
	{"watch ", "watch", (*conn).cmdWatch},
	{"ignore ", "ignore", (*conn).cmdIgnore},
	{"list-tubes-watched", "list-tubes-watched", (*conn).cmdListTubesWatched},
	{"list-tube-used", "list-tube-used", (*conn).cmdListTubeUsed},
	{"list-tubes", "list-tubes", (*conn).cmdListTubes},
	{"quit", "quit", (*conn).cmdQuit},
	{"pause-tube", "pause-tube", (*conn).cmdPauseTube},
}

// do runs one command line and returns the name of the command it ran (""
// for none). The error is nil when the command has written its reply,
// errQuit or an error wrapping errHangUp when the connection must close,
// and otherwise the error that replyErr answers.
func (c *conn) do(line string) (string, error) {
	if strings.IndexByte(line, 0) >= 0 {
		return "", errBadFormat
	}
	for _, cmd := range commands {
		if strings.HasPrefix(line, cmd.prefix) {
			return cmd.name, cmd.run(c, line[len(cmd.prefix):])
		}
	}
	return "", errUnknownCommand
}

// commandName is the first word of a command line, for logs.
func commandName(line string) string {
	if i := strings.IndexByte(line, ' '); i >= 0 {
		return line[:i]
	}
	return line
}

// secs converts a protocol duration (whole seconds) to a Duration.
func secs(n uint32) time.Duration { return time.Duration(n) * time.Second }

func (c *conn) cmdPut(rest string) error {
	a := args{s: rest, ok: true}
	pri, delay, ttr, size := a.u32(), a.u32(), a.u32(), a.u32()
	if !a.ok {
		return errBadFormat // the body is not read: it is taken for commands
	}
	c.count(opPut)
	if int64(size) > int64(c.q.MaxJobSize()) {
		c.refreshDeadline()
		if err := c.discard(int64(size) + 2); err != nil {
			return hangUp(err)
		}
		return errJobTooBig
	}
	if a.s != "" {
		return errBadFormat
	}
	c.setProducer()
	ttr = max(ttr, 1)
	var body []byte
	if n := int(size) + 2; c.br.Buffered() >= n {
		// The body came with its line: no wait, no timeout to arm, and
		// no copy: the store is handed the reader's buffer, which nothing
		// reads into until Put returns, and keeps none of it
		// (queue.Store.Put).
		body, _ = c.br.Peek(n) // buffered: cannot fail
		defer c.br.Discard(n)
	} else {
		body = make([]byte, n)
		c.refreshDeadline()
		if _, err := io.ReadFull(c.br, body); err != nil {
			return hangUp(err)
		}
		c.busy()
	}
	if body[size] != '\r' || body[size+1] != '\n' {
		return errExpectedCRLF
	}
	if c.srv.draining.Load() {
		return errDraining
	}
	// The job goes in the connection's own slice of one: a put's job
	// needs no change of the Queue's (whole seconds, a TTR, a body), so
	// the store is handed this slice, and nothing is allocated for it.
	c.put[0] = queue.NewJob{
		Body:     body[:size],
		Priority: pri,
		Delay:    secs(delay),
		TTR:      secs(ttr),
	}
	res, err := c.q.PutMany(c.ctx, c.used, c.put[:])
	c.put[0] = queue.NewJob{}
	if err != nil {
		return err
	}
	c.replyNum("INSERTED", uint64(res[0].ID))
	return nil
}

// jobCommand runs a command whose one argument is a job's id: once the
// line parses, it counts o and runs run with the id.
func (c *conn) jobCommand(rest string, o op, run func(id queue.ID) error) error {
	a := args{s: rest, ok: true}
	id := a.u64()
	if !a.end() {
		return errBadFormat
	}
	c.count(o)
	return run(queue.ID(id))
}

func (c *conn) cmdPeek(rest string) error {
	return c.jobCommand(rest, opPeek, func(id queue.ID) error {
		j, err := c.q.Peek(c.ctx, id)
		if err != nil {
			return err
		}
		c.replyJob("FOUND", j)
		return nil
	})
}

func (c *conn) cmdPeekReady(rest string) error {
	return c.peekState(rest, opPeekReady, c.q.PeekReady)
}

func (c *conn) cmdPeekDelayed(rest string) error {
	return c.peekState(rest, opPeekDelayed, c.q.PeekDelayed)
}

func (c *conn) cmdPeekBuried(rest string) error {
	return c.peekState(rest, opPeekBuried, c.q.PeekBuried)
}

func (c *conn) peekState(rest string, o op, peek func(ctx context.Context, tube string) (queue.Job, error)) error {
	return c.bareCommand(rest, o, func() error {
		j, err := peek(c.ctx, c.used)
		if err != nil {
			return err
		}
		c.replyJob("FOUND", j)
		return nil
	})
}

func (c *conn) cmdReserveWithTimeout(rest string) error {
	n, ok := strtol(rest)
	if !ok {
		return errBadFormat
	}
	c.count(opReserveWithTimeout)
	// beanstalkd 1.12 keeps the value in an int: it wraps, and a negative
	// timeout waits for ever.
	t := int32(n)
	if t < 0 {
		return c.reserve(-1)
	}
	return c.reserve(secs(uint32(t)))
}

func (c *conn) cmdReserve(rest string) error {
	return c.bareCommand(rest, opReserve, func() error { return c.reserve(-1) })
}

func (c *conn) cmdReserveJob(rest string) error {
	return c.jobCommand(rest, opReserveJob, func(id queue.ID) error {
		if !c.srv.sessionSure() {
			return errSessionUnsure
		}
		j, err := c.q.ReserveJob(c.ctx, id)
		if err != nil {
			return err
		}
		c.setWorker()
		return c.reserved(j)
	})
}

func (c *conn) cmdDelete(rest string) error {
	return c.jobCommand(rest, opDelete, func(id queue.ID) error {
		return c.settled(id, c.q.Delete(c.ctx, id), "DELETED\r\n")
	})
}

// settled answers a command that ends the connection's reservation of job
// id (delete, release, bury) and returned err: reply when it is nil.
func (c *conn) settled(id queue.ID, err error, reply string) error {
	c.settle(id, err)
	if err != nil {
		return err
	}
	c.reply(reply)
	return nil
}

// settle forgets a reservation once the store has answered for it.
func (c *conn) settle(id queue.ID, err error) {
	if err == nil {
		delete(c.held, id)
		return
	}
	if _, known := replyFor(err); known {
		delete(c.held, id)
	}
}

func (c *conn) cmdRelease(rest string) error {
	a := args{s: rest, ok: true}
	id, pri, delay := a.u64(), a.u32(), a.u32()
	if !a.end() {
		return errBadFormat
	}
	c.count(opRelease)
	return c.settled(queue.ID(id), c.q.Release(c.ctx, queue.ID(id), pri, secs(delay)), "RELEASED\r\n")
}

func (c *conn) cmdBury(rest string) error {
	a := args{s: rest, ok: true}
	id, pri := a.u64(), a.u32()
	if !a.end() {
		return errBadFormat
	}
	c.count(opBury)
	return c.settled(queue.ID(id), c.q.Bury(c.ctx, queue.ID(id), pri), "BURIED\r\n")
}

func (c *conn) cmdKick(rest string) error {
	n, ok := strtoul(rest)
	if !ok {
		return errBadFormat
	}
	c.count(opKick)
	// beanstalkd 1.12 keeps the bound in an unsigned int: it wraps.
	kicked, err := c.q.Kick(c.ctx, c.used, int(uint32(n)))
	if err != nil {
		return err
	}
	c.replyNum("KICKED", uint64(kicked))
	return nil
}

func (c *conn) cmdKickJob(rest string) error {
	return c.jobCommand(rest, opKickJob, func(id queue.ID) error {
		if err := c.q.KickJob(c.ctx, id); err != nil {
			return err
		}
		c.reply("KICKED\r\n")
		return nil
	})
}

func (c *conn) cmdTouch(rest string) error {
	return c.jobCommand(rest, opTouch, func(id queue.ID) error {
		left, err := c.q.Touch(c.ctx, id)
		if err != nil {
			c.settle(id, err)
			return err
		}
		c.held[id] = c.now.Add(left)
		c.reply("TOUCHED\r\n")
		return nil
	})
}

func (c *conn) cmdStatsJob(rest string) error {
	return c.jobCommand(rest, opStatsJob, func(id queue.ID) error {
		st, err := c.q.StatsJob(c.ctx, id)
		if err != nil {
			return err
		}
		c.replyOK(jobYAML(st))
		return nil
	})
}

// bareCommand runs a command that takes no argument: once the line
// parses, it counts o and runs run.
func (c *conn) bareCommand(rest string, o op, run func() error) error {
	if rest != "" {
		return errBadFormat
	}
	c.count(o)
	return run()
}

// tubeCommand runs a command whose one argument is a tube's name: once
// the line parses, it counts o and runs run with the name.
func (c *conn) tubeCommand(rest string, o op, run func(tube string) error) error {
	if !queue.ValidTube(rest) {
		return errBadFormat
	}
	tube := strings.Clone(rest) // kept: the line is reused
	c.count(o)
	return run(tube)
}

func (c *conn) cmdStatsTube(rest string) error {
	return c.tubeCommand(rest, opStatsTube, func(tube string) error {
		y, err := c.srv.tubeYAML(c.ctx, tube)
		if err != nil {
			return err
		}
		c.replyOK(y)
		return nil
	})
}

func (c *conn) cmdStats(rest string) error {
	return c.bareCommand(rest, opStats, func() error {
		y, err := c.srv.statsYAML(c.ctx)
		if err != nil {
			return err
		}
		c.replyOK(y)
		return nil
	})
}

func (c *conn) cmdUse(rest string) error {
	return c.tubeCommand(rest, opUse, func(tube string) error {
		if tube != c.used {
			if err := c.hold(tube, 1); err != nil {
				return err
			}
			c.unhold(c.ctx, c.used, 1)
			c.srv.tubes.use(tube, 1)
			c.srv.tubes.use(c.used, -1)
			c.used = tube
		}
		c.reply("USING " + c.used + "\r\n")
		return nil
	})
}

func (c *conn) cmdWatch(rest string) error {
	return c.tubeCommand(rest, opWatch, func(tube string) error {
		if c.watching(tube) < 0 {
			if c.srv.MaxWatch > 0 && len(c.watched) >= c.srv.MaxWatch {
				return errTooManyWatched
			}
			if err := c.hold(tube, 1); err != nil {
				return err
			}
			c.watched = append(c.watched, tube)
			c.srv.tubes.watch(tube, 1)
		}
		c.replyNum("WATCHING", uint64(len(c.watched)))
		return nil
	})
}

func (c *conn) cmdIgnore(rest string) error {
	return c.tubeCommand(rest, opIgnore, func(tube string) error {
		if i := c.watching(tube); i >= 0 {
			if len(c.watched) < 2 {
				return errNotIgnored
			}
			last := len(c.watched) - 1
			c.watched[i] = c.watched[last]
			c.watched = c.watched[:last]
			c.unhold(c.ctx, tube, 1)
			c.srv.tubes.watch(tube, -1)
		}
		c.replyNum("WATCHING", uint64(len(c.watched)))
		return nil
	})
}

// hold adds n references of the connection to tube in the store, which
// keeps the tube and its counters alive for every server sharing the store
// while the connection uses or watches it. "default" is the server's to
// hold, for its whole life.
func (c *conn) hold(tube string, n int) error {
	if tube == defaultTube {
		return nil
	}
	return c.q.Hold(c.ctx, tube, n)
}

// unhold takes back n references of the connection to tube. A failure is
// logged: the reference then lasts until the server's session ends.
func (c *conn) unhold(ctx context.Context, tube string, n int) {
	if tube == defaultTube {
		return
	}
	if err := c.q.Hold(ctx, tube, -n); err != nil {
		c.log.Warn("beanstalk: letting go of a tube", "tube", tube, "err", err)
	}
}

// watching returns the index of tube in the watch list, or -1.
func (c *conn) watching(tube string) int {
	for i, t := range c.watched {
		if t == tube {
			return i
		}
	}
	return -1
}

func (c *conn) cmdListTubesWatched(rest string) error {
	return c.bareCommand(rest, opListTubesWatched, func() error {
		c.replyOK(listYAML(c.watched))
		return nil
	})
}

func (c *conn) cmdListTubeUsed(rest string) error {
	return c.bareCommand(rest, opListTubeUsed, func() error {
		c.reply("USING " + c.used + "\r\n")
		return nil
	})
}

func (c *conn) cmdListTubes(rest string) error {
	return c.bareCommand(rest, opListTubes, func() error {
		tubes, err := c.srv.liveTubes(c.ctx)
		if err != nil {
			return err
		}
		c.replyOK(listYAML(tubes))
		return nil
	})
}

func (c *conn) cmdQuit(string) error { return errQuit }

func (c *conn) cmdPauseTube(rest string) error {
	// The name starts after any spaces and runs as far as name characters
	// go; the delay must follow. beanstalkd counts the command before it
	// checks the name.
	rest = strings.TrimLeft(rest, " ")
	n := 0
	for n < len(rest) && nameChar(rest[n]) {
		n++
	}
	if n == 0 {
		return errBadFormat
	}
	tube := strings.Clone(rest[:n]) // kept: the line is reused
	a := args{s: rest[n:], ok: true}
	delay := a.u32()
	if !a.end() {
		return errBadFormat
	}
	c.count(opPauseTube)
	if !queue.ValidTube(tube) {
		return errBadFormat
	}
	if err := c.srv.tubeExists(c.ctx, tube); err != nil {
		return err
	}
	if err := c.q.PauseTube(c.ctx, tube, secs(delay)); err != nil {
		return err
	}
	c.reply("PAUSED\r\n")
	return nil
}

// nameChar reports whether b may appear in a tube name.
func nameChar(b byte) bool {
	switch {
	case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z', '0' <= b && b <= '9':
		return true
	}
	return strings.IndexByte("-+/;.$_()", b) >= 0
}

// args reads numeric arguments as beanstalkd's read_u32 and read_u64 do:
// spaces, then at least one digit, then as many digits as follow; a value
// beyond the type's range fails. After the first failure every read fails.
type args struct {
	s  string
	ok bool
}

func (a *args) uint(limit uint64) uint64 {
	if !a.ok {
		return 0
	}
	s := strings.TrimLeft(a.s, " ")
	i := 0
	for i < len(s) && '0' <= s[i] && s[i] <= '9' {
		i++
	}
	v, err := strconv.ParseUint(s[:i], 10, 64)
	if i == 0 || err != nil || v > limit {
		a.ok = false
		return 0
	}
	a.s = s[i:]
	return v
}

func (a *args) u32() uint32 { return uint32(a.uint(math.MaxUint32)) }
func (a *args) u64() uint64 { return a.uint(math.MaxUint64) }

// end reports whether every read succeeded and nothing follows.
func (a *args) end() bool { return a.ok && a.s == "" }

// cSpace reports whether C's isspace is true of b.
func cSpace(b byte) bool {
	return b == ' ' || ('\t' <= b && b <= '\r')
}

// cNumber splits s as C's strtol and strtoul read it in base 10: white
// space, an optional sign, digits. digits is empty when there is none.
func cNumber(s string) (neg bool, digits string) {
	i := 0
	for i < len(s) && cSpace(s[i]) {
		i++
	}
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	j := i
	for j < len(s) && '0' <= s[j] && s[j] <= '9' {
		j++
	}
	return neg, s[i:j]
}

// strtol parses s as beanstalkd 1.12 parses a reserve timeout: C's strtol,
// where no number at all reads as 0 and only an out-of-range value (ERANGE)
// is an error.
func strtol(s string) (int64, bool) {
	neg, digits := cNumber(s)
	if digits == "" {
		return 0, true
	}
	v, err := strconv.ParseUint(digits, 10, 64)
	switch {
	case err != nil:
		return 0, false
	case neg && v <= 1<<63:
		return int64(-v), true // two's complement, as in C
	case !neg && v <= math.MaxInt64:
		return int64(v), true
	}
	return 0, false
}

// strtoul parses s as beanstalkd parses a kick bound: C's strtoul, which
// fails when there is no number or it is out of range (ERANGE), and
// negates a value after '-'.
func strtoul(s string) (uint64, bool) {
	neg, digits := cNumber(s)
	if digits == "" {
		return 0, false
	}
	v, err := strconv.ParseUint(digits, 10, 64)
	if err != nil {
		return 0, false
	}
	if neg {
		v = -v
	}
	return v, true
}
