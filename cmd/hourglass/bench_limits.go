package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hourglass-io/hourglass/server/httpapi"
)

// benchLimitsCommand is "hourglass bench limits": a subcommand of bench
// with its own flags, after the word limits, and its own usage.
var benchLimitsCommand = &command{
	name:    "bench limits",
	forms:   []string{""},
	args:    "[flags]",
	summary: "measure rate limit decisions per second over a server's HTTP API",
	help: `--clients clients share one keep-alive transport (an idle connection kept
for each) and each POSTs /v1/limits/allow, one decision at a time, on the
next of --keys keys (bench:0, bench:1, ...) under the limits of --limit or
the server's limit --name. A 200 (allowed) and a 429 (limited) are both decisions and
are counted apart; any other reply stops the run with an error. The run
ends after --decisions decisions or --duration, whichever comes first, and
prints decisions per second and the latency of a decision (p50, p99, max):
a table, or one JSON object with --json.

Examples:

  hourglass bench limits
  hourglass bench limits --http http://127.0.0.1:7480 --clients 16 --decisions 200000 --keys 1000 --name bench --json
  hourglass bench limits --limit 10/1s,burst=5 --duration 10s --decisions 0
`,
	flags: func(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
		var o benchLimitsOptions
		benchLimitsFlags(fs, &o)
		return func(ctx context.Context, c *cli, args []string) error {
			return c.benchLimitsRun(ctx, o, args)
		}
	},
}

type benchLimitsOptions struct {
	url, token string
	clients    int
	decisions  int
	duration   time.Duration
	keys       int
	spec, name string
	json       bool
}

// benchLimitsFlags defines the flags of bench limits on fs.
func benchLimitsFlags(fs *flag.FlagSet, o *benchLimitsOptions) {
	fs.StringVar(&o.url, "http", defaultHTTP, "`URL` of the server's HTTP API")
	fs.StringVar(&o.token, "auth-token", "", "bearer `token` of the server")
	fs.IntVar(&o.clients, "clients", 16, "concurrent `clients`, one request at a time each")
	fs.IntVar(&o.decisions, "decisions", 100000, "stop after this many `decisions` (0: only --duration ends the run)")
	fs.DurationVar(&o.duration, "duration", 5*time.Minute, "stop after this `duration` (0: only --decisions ends the run)")
	fs.IntVar(&o.keys, "keys", 1000, "`keys` the decisions are spread over")
	fs.StringVar(&o.spec, "limit", "", "the limits, a `SPEC` as serve --limit takes it (default 100/1s,burst=100 without --name)")
	fs.StringVar(&o.name, "name", "", "a limit `NAME` of the server's configuration instead of --limit")
	fs.BoolVar(&o.json, "json", false, "print the figures as one JSON object")
}

// benchLimitsRun runs "bench limits" with the arguments after its flags.
func (c *cli) benchLimitsRun(ctx context.Context, o benchLimitsOptions, args []string) error {
	switch {
	case len(args) > 0:
		return usagef("bench limits takes no arguments, got %q", args)
	case o.clients < 1 || o.clients > 10000:
		return usagef("--clients %d: want 1 to 10000", o.clients)
	case o.decisions < 0:
		return usagef("--decisions %d: want 0 or more", o.decisions)
	case o.duration < 0:
		return usagef("--duration %v: want 0 or more", o.duration)
	case o.decisions == 0 && o.duration == 0:
		return usagef("--decisions 0 and --duration 0: the run would not end")
	case o.keys < 1 || o.keys > 1000000:
		return usagef("--keys %d: want 1 to 1000000", o.keys)
	case o.spec != "" && o.name != "":
		return usagef("bench limits: give --limit SPEC or --name NAME, not both")
	}
	if o.spec == "" && o.name == "" {
		o.spec = "100/1s,burst=100"
	}
	if o.spec != "" {
		if _, err := httpapi.ParseLimits(o.spec); err != nil {
			return usagef("--limit %q: %v", o.spec, err)
		}
	}
	return c.benchLimits(ctx, o)
}

// limitsResult is the outcome of bench limits.
type limitsResult struct {
	allowed, denied int
	elapsed         time.Duration
	p50, p99, max   time.Duration
}

func (r limitsResult) decisions() int { return r.allowed + r.denied }

func (c *cli) benchLimits(ctx context.Context, o benchLimitsOptions) error {
	bodies, err := allowBodies(o)
	if err != nil {
		return err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns = o.clients
	tr.MaxIdleConnsPerHost = o.clients
	defer tr.CloseIdleConnections()
	hf := httpFlags{url: o.url, token: o.token}
	hc := hf.client()
	hc.hc = &http.Client{Transport: tr}

	// One call first, through the shared client and on a key of its own,
	// so that a wrong name, limit, token or address fails with the
	// server's own message.
	check, err := json.Marshal(httpapi.AllowRequest{Key: "bench:check", Name: o.name, Limits: limitsJSON(o)})
	if err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, commandTimeout)
	_, _, err = hc.call(cctx, "POST", "/v1/limits/allow", json.RawMessage(check))
	cancel()
	var ae *apiError
	if err != nil && !(errors.As(err, &ae) && ae.Code == httpapi.CodeRateLimited) {
		return err
	}

	total := int64(o.decisions)
	if total == 0 {
		total = math.MaxInt64
	}
	var claimed, done, allowed, denied atomic.Int64
	lat := make([][]time.Duration, o.clients)

	runCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	if o.duration > 0 {
		var cancelTime context.CancelFunc
		runCtx, cancelTime = context.WithTimeoutCause(runCtx, o.duration, errFinished)
		defer cancelTime()
	}
	p := &progress{w: c.stderr, on: isTerminal(c.stderr) && o.decisions > 0}
	p.start("limits", o.decisions, &done)
	start := time.Now()
	var wg sync.WaitGroup
	for w := range o.clients {
		wg.Go(func() {
			for {
				i := claimed.Add(1) - 1
				if i >= total || runCtx.Err() != nil {
					return
				}
				t0 := time.Now()
				status, err := allowOnce(runCtx, hc, bodies[i%int64(len(bodies))])
				if err != nil {
					if runCtx.Err() == nil {
						stop(err)
					}
					return
				}
				lat[w] = append(lat[w], time.Since(t0))
				if status == http.StatusOK {
					allowed.Add(1)
				} else {
					denied.Add(1)
				}
				done.Add(1)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	p.stop()
	if err := context.Cause(runCtx); err != nil && !errors.Is(err, errFinished) {
		return describe(err)
	}
	all := slices.Concat(lat...)
	if len(all) == 0 {
		return errors.New("no decision within --duration")
	}
	slices.Sort(all)
	r := limitsResult{
		allowed: int(allowed.Load()),
		denied:  int(denied.Load()),
		elapsed: elapsed,
		p50:     percentile(all, 0.50),
		p99:     percentile(all, 0.99),
		max:     all[len(all)-1],
	}
	if o.json {
		return writeJSON(c.stdout, benchLimitsJSON(o, r))
	}
	return benchLimitsTable(c.stdout, o, r)
}

// limitsJSON returns the limits of --limit in JSON (none with --name);
// benchLimitsRun has checked the SPEC.
func limitsJSON(o benchLimitsOptions) []httpapi.Limit {
	if o.spec == "" {
		return nil
	}
	ls, _ := httpapi.ParseLimits(o.spec)
	js := make([]httpapi.Limit, len(ls))
	for i, l := range ls {
		js[i] = httpapi.LimitOf(l)
	}
	return js
}

// allowBodies returns the JSON body of an allow for each key.
func allowBodies(o benchLimitsOptions) ([][]byte, error) {
	req := httpapi.AllowRequest{Name: o.name, Limits: limitsJSON(o)}
	bodies := make([][]byte, o.keys)
	for i := range bodies {
		req.Key = "bench:" + strconv.Itoa(i)
		b, err := json.Marshal(req)
		if err != nil {
			return nil, err
		}
		bodies[i] = b
	}
	return bodies, nil
}

// allowOnce sends one allow and returns its status: 200 or 429, the two
// decisions; any other status is an error.
func allowOnce(ctx context.Context, c *httpClient, body []byte) (int, error) {
	req, err := http.NewRequestWithContext(ctx, "POST", c.base+"/v1/limits/allow", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, fmt.Errorf("cannot reach %s: %w", c.base, errors.Unwrap(err))
	}
	defer resp.Body.Close()
	reply, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return 0, fmt.Errorf("reading the reply of %s: %w", c.base, err)
	}
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusTooManyRequests {
		return 0, fmt.Errorf("POST /v1/limits/allow: %s: %.200s", resp.Status, bytes.TrimSpace(reply))
	}
	return resp.StatusCode, nil
}

// limitsDescription says what limits the run used.
func limitsDescription(o benchLimitsOptions) string {
	if o.name != "" {
		return "limit " + o.name
	}
	return "limit " + o.spec
}

func benchLimitsJSON(o benchLimitsOptions, r limitsResult) object {
	secs := r.elapsed.Seconds()
	out := object{{"http", o.url}, {"clients", o.clients}, {"keys", o.keys}}
	if o.name != "" {
		out = append(out, field{"name", o.name})
	} else {
		out = append(out, field{"limit", o.spec})
	}
	return append(out,
		field{"decisions", r.decisions()},
		field{"allowed", r.allowed},
		field{"denied", r.denied},
		field{"seconds", math.Round(secs*1000) / 1000},
		field{"per_second", math.Round(float64(r.decisions()) / secs)},
		field{"p50_ms", ms3(r.p50)}, field{"p99_ms", ms3(r.p99)}, field{"max_ms", ms3(r.max)},
	)
}

// ms3 is d in milliseconds, rounded to a microsecond.
func ms3(d time.Duration) float64 { return math.Round(float64(d)/1e3) / 1000 }

func benchLimitsTable(w io.Writer, o benchLimitsOptions, r limitsResult) error {
	var b strings.Builder
	fmt.Fprintf(&b, "bench limits: %s, %d clients, %d keys, %s\n\n", o.url, o.clients, o.keys, limitsDescription(o))
	row := func(cells ...string) {
		line := fmt.Sprintf("%9s %8s %8s %8s %11s %8s %8s %8s", cells[0], cells[1], cells[2], cells[3], cells[4], cells[5], cells[6], cells[7])
		b.WriteString(strings.TrimRight(line, " ") + "\n")
	}
	row("decisions", "allowed", "denied", "seconds", "decisions/s", "p50", "p99", "max")
	f := func(d time.Duration) string { return strconv.FormatFloat(ms3(d), 'f', 2, 64) + "ms" }
	row(strconv.Itoa(r.decisions()), strconv.Itoa(r.allowed), strconv.Itoa(r.denied),
		fmt.Sprintf("%.2f", r.elapsed.Seconds()), fmt.Sprintf("%.0f", float64(r.decisions())/r.elapsed.Seconds()),
		f(r.p50), f(r.p99), f(r.max))
	_, err := io.WriteString(w, b.String())
	return err
}
