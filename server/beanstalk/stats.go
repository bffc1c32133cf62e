package beanstalk

import (
	"context"
	"errors"
	"os"
	"strconv"
	"time"

	"github.com/hourglass-io/hourglass/queue"
)

// op numbers the commands the server counts. The first ones are printed
// by stats as cmd-<name>, in this order; reserve-job and kick-job are
// counted but not printed, as in beanstalkd.
type op int

const (
	opPut op = iota
	opPeek
	opPeekReady
	opPeekDelayed
	opPeekBuried
	opReserve
	opReserveWithTimeout
	opDelete
	opRelease
	opUse
	opWatch
	opIgnore
	opBury
	opKick
	opTouch
	opStats
	opStatsJob
	opStatsTube
	opListTubes
	opListTubeUsed
	opListTubesWatched
	opPauseTube
	numPrinted   // ops from here on are not printed
	opReserveJob = numPrinted
	opKickJob    = numPrinted + 1
	numOps       = numPrinted + 2
)

var opNames = [numPrinted]string{
	"put", "peek", "peek-ready", "peek-delayed", "peek-buried", "reserve",
	"reserve-with-timeout", "delete", "release", "use", "watch", "ignore",
	"bury", "kick", "touch", "stats", "stats-job", "stats-tube", "list-tubes",
	"list-tube-used", "list-tubes-watched", "pause-tube",
}

// binlogMaxSize is what beanstalkd reports as binlog-max-size by default;
// the server has no binlog of its own (the store keeps the jobs).
const binlogMaxSize = 10 << 20

// yaml builds the YAML documents of the stats commands, which are flat
// "key: value" lists printed without quoting, as beanstalkd prints them.
type yaml []byte

func newYAML() yaml { return append(make(yaml, 0, 1024), "---\n"...) }

func (y *yaml) str(k, v string) {
	*y = append(*y, k...)
	*y = append(*y, ": "...)
	*y = append(*y, v...)
	*y = append(*y, '\n')
}

func (y *yaml) int(k string, v int64) {
	*y = append(*y, k...)
	*y = append(*y, ": "...)
	*y = strconv.AppendInt(*y, v, 10)
	*y = append(*y, '\n')
}

func (y *yaml) uint(k string, v uint64) {
	*y = append(*y, k...)
	*y = append(*y, ": "...)
	*y = strconv.AppendUint(*y, v, 10)
	*y = append(*y, '\n')
}

// seconds truncates d to whole seconds, as beanstalkd prints durations.
func seconds(d time.Duration) int64 { return int64(d / time.Second) }

// jobYAML is the reply to stats-job.
func jobYAML(st queue.JobStats) []byte {
	y := newYAML()
	y.uint("id", uint64(st.ID))
	y.str("tube", st.Tube)
	y.str("state", st.State.String())
	y.uint("pri", uint64(st.Priority))
	y.int("age", seconds(st.Age))
	y.int("delay", seconds(st.Delay))
	y.int("ttr", seconds(st.TTR))
	y.int("time-left", seconds(st.TimeLeft))
	y.int("file", 0)
	y.uint("reserves", uint64(st.Reserves))
	y.uint("timeouts", uint64(st.Timeouts))
	y.uint("releases", uint64(st.Releases))
	y.uint("buries", uint64(st.Buries))
	y.uint("kicks", uint64(st.Kicks))
	return y
}

// listYAML is the reply to list-tubes and list-tubes-watched.
func listYAML(names []string) []byte {
	y := newYAML()
	for _, n := range names {
		y = append(y, "- "...)
		y = append(y, n...)
		y = append(y, '\n')
	}
	return y
}

// liveTubes returns the tubes beanstalkd would have: those the store
// knows, those this server's connections refer to, and "default".
func (s *Server) liveTubes(ctx context.Context) ([]string, error) {
	store, err := s.Queue.Tubes(ctx)
	if err != nil {
		return nil, err
	}
	return s.tubes.list(store), nil
}

// tubeExists returns nil when tube is live, queue.ErrNotFound when not.
func (s *Server) tubeExists(ctx context.Context, tube string) error {
	if _, live := s.tubes.counts(tube); live {
		return nil
	}
	_, err := s.Queue.StatsTube(ctx, tube)
	return err
}

// tubeYAML is the reply to stats-tube. The store knows the tubes this
// server's connections refer to; in the moment a closing connection has let
// go of a tube the registry still counts, it is shown with no jobs and
// zero counters.
func (s *Server) tubeYAML(ctx context.Context, tube string) ([]byte, error) {
	st, err := s.Queue.StatsTube(ctx, tube)
	r, live := s.tubes.counts(tube)
	if errors.Is(err, queue.ErrNotFound) && live {
		st, err = queue.TubeStats{Name: tube}, nil
	}
	if err != nil {
		return nil, err
	}
	y := newYAML()
	y.str("name", tube)
	y.int("current-jobs-urgent", st.Urgent)
	y.int("current-jobs-ready", st.Ready)
	y.int("current-jobs-reserved", st.Reserved)
	y.int("current-jobs-delayed", st.Delayed)
	y.int("current-jobs-buried", st.Buried)
	y.int("total-jobs", st.TotalJobs)
	y.int("current-using", r.using)
	y.int("current-watching", r.watching)
	y.int("current-waiting", r.waiting)
	y.int("cmd-delete", st.Deletes)
	y.int("cmd-pause-tube", st.Pauses)
	y.int("pause", seconds(st.Pause))
	y.int("pause-time-left", seconds(st.PauseTimeLeft))
	return y, nil
}

// statsYAML is the reply to stats: job counts from the store, connection
// and command counts of this server.
func (s *Server) statsYAML(ctx context.Context) ([]byte, error) {
	st, err := s.Queue.Stats(ctx)
	if err != nil {
		return nil, err
	}
	tubes, err := s.liveTubes(ctx)
	if err != nil {
		return nil, err
	}
	ru := readRusage()
	y := newYAML()
	y.int("current-jobs-urgent", st.Urgent)
	y.int("current-jobs-ready", st.Ready)
	y.int("current-jobs-reserved", st.Reserved)
	y.int("current-jobs-delayed", st.Delayed)
	y.int("current-jobs-buried", st.Buried)
	ops := s.opCounts()
	for i, name := range opNames {
		y.uint("cmd-"+name, ops[i])
	}
	y.int("job-timeouts", st.Timeouts)
	y.int("total-jobs", st.TotalJobs)
	y.int("max-job-size", int64(s.Queue.MaxJobSize()))
	y.int("current-tubes", int64(len(tubes)))
	y.int("current-connections", s.current.Load())
	y.int("current-producers", s.producers.Load())
	y.int("current-workers", s.workers.Load())
	y.int("current-waiting", s.waiting.Load())
	y.uint("total-connections", s.totalConn.Load())
	y.int("pid", int64(os.Getpid()))
	y.str("version", `"`+s.version()+`"`)
	y.str("rusage-utime", ru.user)
	y.str("rusage-stime", ru.system)
	y.int("uptime", seconds(time.Since(s.started)))
	y.int("binlog-oldest-index", 0)
	y.int("binlog-current-index", 0)
	y.int("binlog-records-migrated", 0)
	y.int("binlog-records-written", 0)
	y.int("binlog-max-size", binlogMaxSize)
	y.str("draining", strconv.FormatBool(s.draining.Load()))
	y.str("id", s.id)
	y.str("hostname", s.host.hostname)
	y.str("os", s.host.os)
	y.str("platform", s.host.platform)
	return y, nil
}
