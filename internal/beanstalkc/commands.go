package beanstalkc

import (
	"context"
	"math"
	"strconv"
	"time"
)

// Job is a job as reserve and the peeks return it.
type Job struct {
	ID   uint64
	Body []byte
}

// Put puts a job into the tube the connection uses and returns its ID. pri
// is the priority (0 is the most urgent), delay how long the job waits
// before it is ready, ttr how long a reservation lasts; both are rounded up
// to whole seconds. When the server buries the job for want of memory, Put
// returns its ID and ErrBuried.
func (c *Conn) Put(ctx context.Context, body []byte, pri uint32, delay, ttr time.Duration) (uint64, error) {
	d, err := seconds("delay", delay)
	if err != nil {
		return 0, err
	}
	t, err := seconds("TTR", ttr)
	if err != nil {
		return 0, err
	}
	if body == nil {
		body = []byte{}
	}
	line := "put " + strconv.FormatUint(uint64(pri), 10) + " " + strconv.FormatUint(uint64(d), 10) +
		" " + strconv.FormatUint(uint64(t), 10) + " " + strconv.Itoa(len(body))
	var id uint64
	err = c.do(ctx, line, body, func(reply string) error {
		if f, ok := fields(reply, "INSERTED", 1); ok {
			return parseID(reply, f[0], &id)
		}
		if f, ok := fields(reply, "BURIED", 1); ok {
			if err := parseID(reply, f[0], &id); err != nil {
				return err
			}
			return replyErr{ErrBuried}
		}
		return fail(reply)
	})
	return id, err
}

// Use makes later puts go to tube.
func (c *Conn) Use(ctx context.Context, tube string) error {
	if err := checkTube(tube); err != nil {
		return err
	}
	return c.do(ctx, "use "+tube, nil, func(reply string) error {
		if reply != "USING "+tube {
			return fail(reply)
		}
		return nil
	})
}

// Watch adds tube to the tubes reserves take jobs from and returns how
// many the connection watches.
func (c *Conn) Watch(ctx context.Context, tube string) (int, error) {
	if err := checkTube(tube); err != nil {
		return 0, err
	}
	return c.count(ctx, "watch "+tube, "WATCHING")
}

// Ignore removes tube from the watched tubes and returns how many remain.
// Ignoring the only tube watched fails with ErrNotIgnored.
func (c *Conn) Ignore(ctx context.Context, tube string) (int, error) {
	if err := checkTube(tube); err != nil {
		return 0, err
	}
	return c.count(ctx, "ignore "+tube, "WATCHING")
}

// Reserve waits, as long as ctx allows, for a job of a watched tube and
// reserves it. It returns ErrDeadlineSoon when a job the connection holds
// is about to reach the end of its TTR.
func (c *Conn) Reserve(ctx context.Context) (Job, error) {
	return c.reserve(ctx, "reserve")
}

// ReserveWithTimeout is Reserve waiting at most timeout (rounded up to
// whole seconds; 0 does not wait). It returns ErrTimedOut when no job came.
func (c *Conn) ReserveWithTimeout(ctx context.Context, timeout time.Duration) (Job, error) {
	s, err := seconds("timeout", timeout)
	if err != nil {
		return Job{}, err
	}
	if s > 1<<31-1 {
		return Job{}, invalidf("timeout %v is more than 2^31-1 seconds", timeout)
	}
	return c.reserve(ctx, "reserve-with-timeout "+strconv.FormatUint(uint64(s), 10))
}

// ReserveJob reserves the job with the given ID, whatever its tube, if it is
// ready, delayed or buried (beanstalkd 1.12 and later).
func (c *Conn) ReserveJob(ctx context.Context, id uint64) (Job, error) {
	return c.reserve(ctx, "reserve-job "+formatUint(id))
}

func (c *Conn) reserve(ctx context.Context, line string) (Job, error) {
	return c.job(ctx, line, "RESERVED")
}

// Delete deletes a job: one the connection reserved, or one that is
// ready, delayed or buried. ErrNotFound when there is no such job or
// another connection has reserved it.
func (c *Conn) Delete(ctx context.Context, id uint64) error {
	return c.simple(ctx, "delete "+formatUint(id), "DELETED")
}

// Release returns a job the connection reserved to ready with priority pri,
// or to delayed when delay > 0 (rounded up to whole seconds). ErrNotFound
// when the connection does not hold it; ErrBuried when the server buried it
// for want of memory.
func (c *Conn) Release(ctx context.Context, id uint64, pri uint32, delay time.Duration) error {
	d, err := seconds("delay", delay)
	if err != nil {
		return err
	}
	line := "release " + formatUint(id) + " " + strconv.FormatUint(uint64(pri), 10) + " " + strconv.FormatUint(uint64(d), 10)
	return c.do(ctx, line, nil, func(reply string) error {
		switch reply {
		case "RELEASED":
			return nil
		case "BURIED":
			return replyErr{ErrBuried}
		}
		return fail(reply)
	})
}

// Bury buries a job the connection reserved, with priority pri.
// ErrNotFound when the connection does not hold it.
func (c *Conn) Bury(ctx context.Context, id uint64, pri uint32) error {
	return c.simple(ctx, "bury "+formatUint(id)+" "+strconv.FormatUint(uint64(pri), 10), "BURIED")
}

// Touch restarts the TTR of a job the connection reserved. ErrNotFound
// when the connection does not hold it.
func (c *Conn) Touch(ctx context.Context, id uint64) error {
	return c.simple(ctx, "touch "+formatUint(id), "TOUCHED")
}

// Kick moves up to n jobs of the used tube to ready — buried jobs if it
// has any, else delayed jobs — and returns how many it moved.
func (c *Conn) Kick(ctx context.Context, n int) (int, error) {
	if n < 0 || uint64(n) > math.MaxUint32 {
		return 0, invalidf("kick bound %d is out of 0 to 2^32-1", n)
	}
	return c.count(ctx, "kick "+strconv.Itoa(n), "KICKED")
}

// KickJob moves one buried or delayed job to ready. ErrNotFound when there
// is no such job or it is neither buried nor delayed.
func (c *Conn) KickJob(ctx context.Context, id uint64) error {
	return c.simple(ctx, "kick-job "+formatUint(id), "KICKED")
}

// Peek returns the job with the given ID, in whatever state.
func (c *Conn) Peek(ctx context.Context, id uint64) (Job, error) {
	return c.job(ctx, "peek "+formatUint(id), "FOUND")
}

// PeekReady returns the next ready job of the used tube, or ErrNotFound.
func (c *Conn) PeekReady(ctx context.Context) (Job, error) {
	return c.job(ctx, "peek-ready", "FOUND")
}

// PeekDelayed returns the delayed job of the used tube that is due first,
// or ErrNotFound.
func (c *Conn) PeekDelayed(ctx context.Context) (Job, error) {
	return c.job(ctx, "peek-delayed", "FOUND")
}

// PeekBuried returns the buried job of the used tube that was buried
// first, or ErrNotFound.
func (c *Conn) PeekBuried(ctx context.Context) (Job, error) {
	return c.job(ctx, "peek-buried", "FOUND")
}

// Stats returns the server's statistics.
func (c *Conn) Stats(ctx context.Context) (Stats, error) {
	return c.stats(ctx, "stats")
}

// StatsTube returns the statistics of a tube, or ErrNotFound.
func (c *Conn) StatsTube(ctx context.Context, tube string) (Stats, error) {
	if err := checkTube(tube); err != nil {
		return nil, err
	}
	return c.stats(ctx, "stats-tube "+tube)
}

// StatsJob returns the statistics of a job, or ErrNotFound.
func (c *Conn) StatsJob(ctx context.Context, id uint64) (Stats, error) {
	return c.stats(ctx, "stats-job "+formatUint(id))
}

// ListTubes returns the names of the server's tubes.
func (c *Conn) ListTubes(ctx context.Context) ([]string, error) {
	return c.list(ctx, "list-tubes")
}

// ListTubesWatched returns the names of the tubes the connection watches.
func (c *Conn) ListTubesWatched(ctx context.Context) ([]string, error) {
	return c.list(ctx, "list-tubes-watched")
}

// ListTubeUsed returns the name of the tube the connection uses.
func (c *Conn) ListTubeUsed(ctx context.Context) (string, error) {
	var tube string
	err := c.do(ctx, "list-tube-used", nil, func(reply string) error {
		f, ok := fields(reply, "USING", 1)
		if !ok {
			return fail(reply)
		}
		tube = f[0]
		return nil
	})
	return tube, err
}

// PauseTube stops reserves from taking jobs of tube for d (rounded up to
// whole seconds; 0 ends a pause). ErrNotFound when there is no such tube.
func (c *Conn) PauseTube(ctx context.Context, tube string, d time.Duration) error {
	if err := checkTube(tube); err != nil {
		return err
	}
	s, err := seconds("pause", d)
	if err != nil {
		return err
	}
	return c.simple(ctx, "pause-tube "+tube+" "+strconv.FormatUint(uint64(s), 10), "PAUSED")
}

// simple runs a command whose only success is the reply want.
func (c *Conn) simple(ctx context.Context, line, want string) error {
	return c.do(ctx, line, nil, func(reply string) error {
		if reply != want {
			return fail(reply)
		}
		return nil
	})
}

// count runs a command that answers "<word> <n>".
func (c *Conn) count(ctx context.Context, line, word string) (int, error) {
	var n int
	err := c.do(ctx, line, nil, func(reply string) error {
		f, ok := fields(reply, word, 1)
		if !ok {
			return fail(reply)
		}
		v, err := strconv.ParseUint(f[0], 10, 32)
		if err != nil {
			return fail(reply)
		}
		n = int(v)
		return nil
	})
	return n, err
}

// job runs a command that answers "<word> <id> <bytes>" and a body.
func (c *Conn) job(ctx context.Context, line, word string) (Job, error) {
	var j Job
	err := c.do(ctx, line, nil, func(reply string) error {
		f, ok := fields(reply, word, 2)
		if !ok {
			return fail(reply)
		}
		if err := parseID(reply, f[0], &j.ID); err != nil {
			return err
		}
		n, err := strconv.ParseUint(f[1], 10, 64)
		if err != nil {
			return fail(reply)
		}
		j.Body, err = c.readData(n)
		return err
	})
	return j, err
}

// data runs a command that answers "OK <bytes>" and a YAML document.
func (c *Conn) data(ctx context.Context, line string) ([]byte, error) {
	var b []byte
	err := c.do(ctx, line, nil, func(reply string) error {
		f, ok := fields(reply, "OK", 1)
		if !ok {
			return fail(reply)
		}
		n, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			return fail(reply)
		}
		b, err = c.readData(n)
		return err
	})
	return b, err
}

func (c *Conn) stats(ctx context.Context, line string) (Stats, error) {
	b, err := c.data(ctx, line)
	if err != nil {
		return nil, err
	}
	return ParseStats(b)
}

func (c *Conn) list(ctx context.Context, line string) ([]string, error) {
	b, err := c.data(ctx, line)
	if err != nil {
		return nil, err
	}
	return parseList(b)
}

func parseID(reply, s string, id *uint64) error {
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return fail(reply)
	}
	*id = v
	return nil
}
