package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hourglass-io/hourglass/internal/beanstalkc"
)

var benchCommand = &command{
	name:    "bench",
	forms:   []string{""},
	subs:    []*command{benchLimitsCommand},
	args:    "[flags] | bench limits [flags]",
	summary: "measure a beanstalkd-protocol server (puts/s, reserves+deletes/s, lateness), or rate limit decisions/s over HTTP",
	help: `Runs three phases against the server, each on fresh connections and each
bounded by --phase-timeout:

  put             --jobs puts of --size-byte bodies over --conns connections,
                  one command at a time per connection
  reserve+delete  reserve and delete those jobs over --conns connections
  lateness        --conns connections wait in reserve while --conns others
                  put --lateness-jobs jobs with delays of 1, 2 and 3 s (the
                  protocol counts whole seconds); each job's lateness is the
                  time it is delivered minus (the time its put was sent +
                  its delay); prints p50, p99 and max

The tube must be empty at the start; the phases leave it empty. With several
addresses (--addr a,b) connection i goes to address i mod n: the servers
must share one store (hourglass serve on one Redis), since jobs put through
one are reserved through the others.

A progress line is shown on standard error when it is a terminal. The
results go to standard output: a table, or one JSON object with --json.

'hourglass bench limits' measures rate limit decisions instead: --clients
(default 16) keep-alive clients POST /v1/limits/allow to the HTTP API of
--http (or HOURGLASS_HTTP, with --auth-token or HOURGLASS_AUTH_TOKEN) on
--keys keys under --limit SPEC or the server's --name NAME, until
--decisions or --duration; it prints decisions/s, allowed and denied, and
the latency p50, p99 and max. Its flags follow the word limits; run
'hourglass bench limits -h' for them.

Examples:

  hourglass bench
  hourglass bench --addr 127.0.0.1:11300,127.0.0.1:11301 --json
  hourglass bench --jobs 5000 --lateness-jobs 200 --conns 4
  hourglass bench limits --http http://127.0.0.1:7480 --clients 16 --decisions 200000 --keys 1000 --json
`,
	flags: func(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
		var o benchOptions
		fs.StringVar(&o.addr, "addr", defaultAddr, "`host:port` of the server; several separated by commas")
		fs.IntVar(&o.conns, "conns", 8, "`connections` of each phase (the lateness phase: as many again to put)")
		fs.IntVar(&o.jobs, "jobs", 50000, "`jobs` of the put and reserve+delete phases (0: skip them)")
		fs.IntVar(&o.size, "size", 100, "body size in `bytes`")
		fs.StringVar(&o.tube, "tube", "bench", "`tube` to use; it must be empty")
		fs.IntVar(&o.latenessJobs, "lateness-jobs", 2000, "`jobs` of the lateness phase (0: skip it)")
		fs.DurationVar(&o.phaseTimeout, "phase-timeout", 5*time.Minute, "longest a phase may take before the benchmark fails (a `duration`)")
		fs.BoolVar(&o.json, "json", false, "print the figures as one JSON object")
		return func(ctx context.Context, c *cli, args []string) error {
			if len(args) > 0 && args[0] == "limits" {
				return usagef("bench limits: the flags go after limits")
			}
			if len(args) > 0 {
				return usagef("bench takes no arguments or limits, got %q", args)
			}
			for a := range strings.SplitSeq(o.addr, ",") {
				if a = strings.TrimSpace(a); a != "" {
					o.addrs = append(o.addrs, a)
				}
			}
			switch {
			case len(o.addrs) == 0:
				return usagef("--addr is empty")
			case o.conns < 1 || o.conns > 10000:
				return usagef("--conns %d: want 1 to 10000", o.conns)
			case o.jobs < 0:
				return usagef("--jobs %d: want 0 or more", o.jobs)
			case o.size < 0 || o.size > beanstalkc.MaxBody:
				return usagef("--size %d: want 0 to %d", o.size, beanstalkc.MaxBody)
			case o.latenessJobs < 0:
				return usagef("--lateness-jobs %d: want 0 or more", o.latenessJobs)
			case o.phaseTimeout <= 0:
				return usagef("--phase-timeout %v: want more than 0", o.phaseTimeout)
			}
			if err := checkTube(o.tube); err != nil {
				return err
			}
			return c.bench(ctx, o)
		}
	},
}

type benchOptions struct {
	addr         string
	addrs        []string
	conns        int
	jobs, size   int
	tube         string
	latenessJobs int
	phaseTimeout time.Duration
	json         bool
}

// rate is the outcome of a phase that counts jobs per second.
type rate struct {
	jobs    int
	elapsed time.Duration
}

func (r rate) perSecond() float64 { return float64(r.jobs) / r.elapsed.Seconds() }

// lateness is the outcome of the lateness phase.
type lateness struct {
	jobs          int
	elapsed       time.Duration
	p50, p99, max time.Duration
}

func (c *cli) bench(ctx context.Context, o benchOptions) error {
	if err := checkEmpty(ctx, o); err != nil {
		return err
	}
	p := &progress{w: c.stderr, on: isTerminal(c.stderr)}
	var put, rd *rate
	var late *lateness
	if o.jobs > 0 {
		pr, err := benchPut(ctx, o, p)
		if err != nil {
			return fmt.Errorf("put phase: %w", err)
		}
		put = &pr
		rr, err := benchReserve(ctx, o, p)
		if err != nil {
			return fmt.Errorf("reserve+delete phase: %w", err)
		}
		rd = &rr
	}
	if o.latenessJobs > 0 {
		l, err := benchLateness(ctx, o, p)
		if err != nil {
			return fmt.Errorf("lateness phase: %w", err)
		}
		late = &l
	}
	if o.json {
		return writeJSON(c.stdout, benchJSON(o, put, rd, late))
	}
	return benchTable(c.stdout, o, put, rd, late)
}

// checkEmpty fails when the tube holds jobs on one of the servers.
func checkEmpty(ctx context.Context, o benchOptions) error {
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	for _, addr := range o.addrs {
		conn, err := dial(ctx, addr)
		if err != nil {
			return err
		}
		st, err := conn.StatsTube(ctx, o.tube)
		conn.Close()
		if errors.Is(err, beanstalkc.ErrNotFound) {
			continue
		}
		if err != nil {
			return describe(err)
		}
		var n int64
		for _, k := range []string{"current-jobs-ready", "current-jobs-delayed", "current-jobs-reserved", "current-jobs-buried"} {
			v, _ := st.Int(k)
			n += v
		}
		if n > 0 {
			return fmt.Errorf("tube %s on %s holds %d jobs; bench needs an empty tube (pick another with --tube)", o.tube, addr, n)
		}
	}
	return nil
}

// openConns dials n connections, connection i to address i mod len(addrs),
// and runs setup on each.
func openConns(ctx context.Context, addrs []string, n int, setup func(context.Context, *beanstalkc.Conn) error) ([]*beanstalkc.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	conns := make([]*beanstalkc.Conn, 0, n)
	for i := range n {
		conn, err := dial(ctx, addrs[i%len(addrs)])
		if err == nil {
			conns = append(conns, conn)
			err = setup(ctx, conn)
		}
		if err != nil {
			closeAll(conns)
			return nil, describe(err)
		}
	}
	return conns, nil
}

func closeAll(conns []*beanstalkc.Conn) {
	for _, c := range conns {
		c.Close()
	}
}

func useTube(tube string) func(context.Context, *beanstalkc.Conn) error {
	return func(ctx context.Context, c *beanstalkc.Conn) error { return c.Use(ctx, tube) }
}

func watchTube(tube string) func(context.Context, *beanstalkc.Conn) error {
	return func(ctx context.Context, c *beanstalkc.Conn) error {
		if _, err := c.Watch(ctx, tube); err != nil {
			return err
		}
		if tube == "default" {
			return nil
		}
		_, err := c.Ignore(ctx, "default")
		return err
	}
}

// errFinished ends the workers of a phase once its work is done.
var errFinished = errors.New("phase finished")

// runWorkers runs work(ctx, i) for every connection in its own goroutine
// until all return or the phase ends: by its deadline, by the first error,
// or by a call of finish. It returns the first error other than the
// phase's own end.
func runWorkers(ctx context.Context, timeout time.Duration, conns []*beanstalkc.Conn,
	work func(ctx context.Context, conn *beanstalkc.Conn, finish func()) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	ctx, cancelTimeout := context.WithTimeoutCause(ctx, timeout, fmt.Errorf("did not finish within --phase-timeout %v", timeout))
	defer cancelTimeout()
	finish := func() { cancel(errFinished) }
	var wg sync.WaitGroup
	for _, conn := range conns {
		wg.Go(func() {
			if err := work(ctx, conn, finish); err != nil {
				cancel(err)
			}
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, errFinished) {
		return describe(err)
	}
	return nil
}

// benchPut puts o.jobs jobs over o.conns connections.
func benchPut(ctx context.Context, o benchOptions, p *progress) (rate, error) {
	conns, err := openConns(ctx, o.addrs, o.conns, useTube(o.tube))
	if err != nil {
		return rate{}, err
	}
	defer closeAll(conns)
	body := bytes.Repeat([]byte{'x'}, o.size)
	var claimed, done atomic.Int64
	p.start("put", o.jobs, &done)
	start := time.Now()
	err = runWorkers(ctx, o.phaseTimeout, conns, func(ctx context.Context, conn *beanstalkc.Conn, _ func()) error {
		for claimed.Add(1) <= int64(o.jobs) {
			if _, err := conn.Put(ctx, body, 1024, 0, time.Minute); err != nil {
				return err
			}
			done.Add(1)
		}
		return nil
	})
	elapsed := time.Since(start)
	p.stop()
	return rate{o.jobs, elapsed}, err
}

// benchReserve reserves and deletes o.jobs jobs over o.conns connections.
func benchReserve(ctx context.Context, o benchOptions, p *progress) (rate, error) {
	conns, err := openConns(ctx, o.addrs, o.conns, watchTube(o.tube))
	if err != nil {
		return rate{}, err
	}
	defer closeAll(conns)
	var done atomic.Int64
	var end atomic.Int64 // Unix ns of the last delete
	p.start("reserve+delete", o.jobs, &done)
	start := time.Now()
	err = runWorkers(ctx, o.phaseTimeout, conns, func(ctx context.Context, conn *beanstalkc.Conn, finish func()) error {
		for {
			j, err := conn.Reserve(ctx)
			if err != nil {
				return err
			}
			if err := conn.Delete(ctx, j.ID); err != nil {
				return err
			}
			if done.Add(1) == int64(o.jobs) {
				end.Store(time.Now().UnixNano())
				finish()
				return nil
			}
		}
	})
	p.stop()
	if err != nil {
		return rate{}, err
	}
	return rate{o.jobs, time.Unix(0, end.Load()).Sub(start)}, nil
}

// benchLateness puts o.latenessJobs delayed jobs while consumers wait for
// them, and measures how late each is delivered.
func benchLateness(ctx context.Context, o benchOptions, p *progress) (lateness, error) {
	consumers, err := openConns(ctx, o.addrs, o.conns, watchTube(o.tube))
	if err != nil {
		return lateness{}, err
	}
	defer closeAll(consumers)
	producers, err := openConns(ctx, o.addrs, o.conns, useTube(o.tube))
	if err != nil {
		return lateness{}, err
	}
	defer closeAll(producers)

	n := int64(o.latenessJobs)
	var mu sync.Mutex
	late := make([]time.Duration, 0, n)
	var received, end atomic.Int64
	consume := func(ctx context.Context, conn *beanstalkc.Conn, finish func()) error {
		for {
			j, err := conn.Reserve(ctx)
			if err != nil {
				return err
			}
			got := time.Now()
			due, ok := parseDue(j.Body)
			if !ok {
				return fmt.Errorf("job %d in tube %s is not one of the benchmark's (body %.40q)", j.ID, o.tube, j.Body)
			}
			if err := conn.Delete(ctx, j.ID); err != nil {
				return err
			}
			mu.Lock()
			late = append(late, got.Sub(due))
			mu.Unlock()
			if received.Add(1) == n {
				end.Store(time.Now().UnixNano())
				finish()
				return nil
			}
		}
	}
	var claimed atomic.Int64
	produce := func(ctx context.Context, conn *beanstalkc.Conn, _ func()) error {
		for i := claimed.Add(1); i <= n; i = claimed.Add(1) {
			delay := time.Duration(1+i%3) * time.Second
			due := time.Now().Add(delay)
			if _, err := conn.Put(ctx, latenessBody(due, o.size), 1024, delay, time.Minute); err != nil {
				return err
			}
		}
		return nil
	}

	p.start("lateness", int(n), &received)
	start := time.Now()
	cctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	consumed := make(chan error, 1)
	go func() { consumed <- runWorkers(cctx, o.phaseTimeout, consumers, consume) }()
	putErr := runWorkers(ctx, o.phaseTimeout, producers, produce)
	if putErr != nil {
		cancel(putErr)
	}
	err = <-consumed
	p.stop()
	if putErr != nil {
		return lateness{}, putErr
	}
	if err != nil {
		return lateness{}, err
	}
	slices.Sort(late)
	return lateness{
		jobs:    int(n),
		elapsed: time.Unix(0, end.Load()).Sub(start),
		p50:     percentile(late, 0.50),
		p99:     percentile(late, 0.99),
		max:     late[len(late)-1],
	}, nil
}

// latenessBody is a job body that says when the job is due: its Unix time
// in nanoseconds, then padding up to size bytes.
func latenessBody(due time.Time, size int) []byte {
	b := strconv.AppendInt(make([]byte, 0, max(size, 20)), due.UnixNano(), 10)
	for len(b) < size {
		b = append(b, '.')
	}
	return b
}

func parseDue(body []byte) (time.Time, bool) {
	i := bytes.IndexFunc(body, func(r rune) bool { return r < '0' || r > '9' })
	if i < 0 {
		i = len(body)
	}
	ns, err := strconv.ParseInt(string(body[:i]), 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.Unix(0, ns), true
}

// percentile returns the q-quantile of sorted values (nearest rank).
func percentile(sorted []time.Duration, q float64) time.Duration {
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(i, 0)]
}

func ms(d time.Duration) float64 { return math.Round(float64(d)/1e4) / 100 }

func benchJSON(o benchOptions, put, rd *rate, late *lateness) object {
	out := object{{"addrs", o.addrs}, {"conns", o.conns}, {"size", o.size}, {"tube", o.tube}}
	for _, ph := range []struct {
		key string
		r   *rate
	}{{"put", put}, {"reserve_delete", rd}} {
		if ph.r != nil {
			out = append(out, field{ph.key, object{
				{"jobs", ph.r.jobs},
				{"seconds", math.Round(ph.r.elapsed.Seconds()*1000) / 1000},
				{"per_second", math.Round(ph.r.perSecond())},
			}})
		}
	}
	if late != nil {
		out = append(out, field{"lateness", object{
			{"jobs", late.jobs},
			{"seconds", math.Round(late.elapsed.Seconds()*1000) / 1000},
			{"p50_ms", ms(late.p50)}, {"p99_ms", ms(late.p99)}, {"max_ms", ms(late.max)},
		}})
	}
	return out
}

func benchTable(w io.Writer, o benchOptions, put, rd *rate, late *lateness) error {
	var b strings.Builder
	fmt.Fprintf(&b, "bench: %s, tube %s, %d connections, %d-byte bodies\n\n", strings.Join(o.addrs, ","), o.tube, o.conns, o.size)
	row := func(cells ...string) {
		line := fmt.Sprintf("%-15s %7s %8s %8s %8s %8s %8s", cells[0], cells[1], cells[2], cells[3], cells[4], cells[5], cells[6])
		b.WriteString(strings.TrimRight(line, " ") + "\n")
	}
	row("phase", "jobs", "seconds", "jobs/s", "p50", "p99", "max")
	for _, ph := range []struct {
		name string
		r    *rate
	}{{"put", put}, {"reserve+delete", rd}} {
		if ph.r != nil {
			row(ph.name, strconv.Itoa(ph.r.jobs), fmt.Sprintf("%.2f", ph.r.elapsed.Seconds()), fmt.Sprintf("%.0f", ph.r.perSecond()), "", "", "")
		}
	}
	if late != nil {
		row("lateness", strconv.Itoa(late.jobs), fmt.Sprintf("%.2f", late.elapsed.Seconds()), "", fmtMS(late.p50), fmtMS(late.p99), fmtMS(late.max))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func fmtMS(d time.Duration) string { return strconv.FormatFloat(ms(d), 'f', 1, 64) + "ms" }

// progress shows what a phase has done on one line of a terminal.
type progress struct {
	w  io.Writer
	on bool // the writer is a terminal

	stopc chan struct{}
	done  chan struct{}
}

// start shows name and count out of total every 200 ms until stop.
func (p *progress) start(name string, total int, count *atomic.Int64) {
	if !p.on {
		return
	}
	p.stopc, p.done = make(chan struct{}), make(chan struct{})
	began := time.Now()
	go func() {
		defer close(p.done)
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-p.stopc:
				fmt.Fprint(p.w, "\r\033[K")
				return
			case <-t.C:
				n := count.Load()
				fmt.Fprintf(p.w, "\r\033[K%s %d/%d (%.0f%%) %.0f/s", name, n, total,
					100*float64(n)/float64(total), float64(n)/time.Since(began).Seconds())
			}
		}
	}()
}

func (p *progress) stop() {
	if p.stopc != nil {
		close(p.stopc)
		<-p.done
		p.stopc = nil
	}
}
