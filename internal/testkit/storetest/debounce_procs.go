package storetest

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/queue"
)

// The callers of a debounce burst as processes (BenchDebounceProcs): the
// test binary started again, whose TestMain calls RunDebounceChild first.

// putterPart is the part of a putter of a burst; its fields are "g
// callers tube per gap-ns start-unix-ns max-wait-ns".
var putterPart = childPart{env: "HOURGLASS_DEBOUNCE_PUTTER", name: "debounce putter"}

// DebouncePutter puts one job on tube, as a child process does it (over
// HTTP to a server, or with a Store of its own on Redis).
type DebouncePutter func(ctx context.Context, tube string, j queue.NewJob) (queue.PutResult, error)

// RunDebounceChild returns at once unless this process was started as a
// putter of a burst by BenchDebounceProcs. Then it makes its putter with
// open, runs its share of the burst's puts, writes one line per put to
// standard output (body, start and return in Unix ns, the job's ID,
// whether it was a duplicate) and exits: 0, or 1 after a failure,
// written to standard error. A TestMain calls it before anything else.
func RunDebounceChild(open func() (DebouncePutter, func(), error)) {
	var g, callers, per int
	var tube string
	var gap, start, maxWait int64
	runChild(putterPart, []any{&g, &callers, &tube, &per, &gap, &start, &maxWait}, open, func(ctx context.Context, put DebouncePutter, w io.Writer) error {
		recs, err := paced(ctx, g, callers, per, time.Duration(gap), time.Unix(0, start), func(ctx context.Context, body string) (queue.PutResult, error) {
			return put(ctx, tube, debouncePut(body, time.Duration(maxWait)))
		})
		for body, r := range recs {
			fmt.Fprintf(w, "%s %d %d %d %t\n", body, r.start.UnixNano(), r.end.UnixNano(), r.res.ID, r.res.Duplicate)
		}
		return err
	})
}

// childCaller is a burst caller that is a child process: the running
// test binary, with env added to its environment.
func childCaller(env []string) burstCaller {
	return func(ctx context.Context, g, callers int, tube string, per int, gap time.Duration, start time.Time, maxWait time.Duration) (map[string]putRecord, error) {
		out, err := putterPart.run(ctx, env, g, callers, tube, per, gap.Nanoseconds(), start.UnixNano(), maxWait.Nanoseconds())
		if err != nil {
			return nil, fmt.Errorf("putter process %d: %w", g, err)
		}
		recs := make(map[string]putRecord, per)
		for line := range strings.Lines(out) {
			f := strings.Fields(line)
			if len(f) != 5 {
				return nil, fmt.Errorf("putter process %d wrote %q", g, line)
			}
			t0, err1 := strconv.ParseInt(f[1], 10, 64)
			t1, err2 := strconv.ParseInt(f[2], 10, 64)
			id, err3 := strconv.ParseUint(f[3], 10, 64)
			dup, err4 := strconv.ParseBool(f[4])
			if err1 != nil || err2 != nil || err3 != nil || err4 != nil {
				return nil, fmt.Errorf("putter process %d wrote %q", g, line)
			}
			recs[f[0]] = putRecord{time.Unix(0, t0), time.Unix(0, t1), queue.PutResult{ID: queue.ID(id), Duplicate: dup}}
		}
		if len(recs) != per {
			return recs, fmt.Errorf("putter process %d reported %d puts, want %d", g, len(recs), per)
		}
		return recs, nil
	}
}

// BenchDebounceProcs is BenchDebounce with its callers as procs processes
// of their own: the running test binary started again with env added to
// its environment (the address its TestMain's RunDebounceChild needs to
// reach the store), started afresh for each burst, a second before the
// burst's first put. The reserver takes the jobs through rs in this
// process. Times are compared across processes by the wall clock of one
// machine.
func BenchDebounceProcs(b *testing.B, rs queue.Store, procs int, env []string, bursts int) {
	q, err := queue.New(rs, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer q.Close()
	callers := make([]burstCaller, procs)
	for i := range callers {
		callers[i] = childCaller(env)
	}
	benchDebounce(b, q, callers, time.Second, "processes", bursts)
}
