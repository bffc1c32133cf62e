package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/url"
	"os"
	"time"
	"unicode/utf8"

	"github.com/hourglass-io/hourglass/internal/beanstalkc"
	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/server/httpapi"
)

var putCommand = &command{
	name:    "put",
	forms:   []string{"BODY"},
	args:    "[flags] [BODY | -]",
	summary: "put a job into a tube",
	help: `The body is BODY, or standard input when BODY is - or missing. It is sent
as it is, without a trailing newline added or removed. --delay and --ttr
take milliseconds too (--delay 500ms, --delay 1.5s): a put whose --delay
or --ttr is not whole seconds, which the beanstalkd protocol cannot carry,
goes over the HTTP API (--http, or HOURGLASS_HTTP). --group puts the job into that
group of the tube, the tube TUBE;GROUP, whose jobs a reserve of TUBE serves
in turn with its other groups' (docs/tube-limits.md).

--unique-key makes the put idempotent: while a job of the tube holds the
key, the put stores nothing and prints that job's ID with duplicate: true.
--unique-for DUR makes every put with the key a duplicate of this job for
DUR from now, whether it is live, finished or gone (a throttle);
--unique-kept makes the put a duplicate also of a finished job the tube
keeps (docs/keys.md).

--debounce DUR (with --unique-key) is a delay of DUR restarted by every put
with the key while the job is still delayed, each giving the job its body
and priority (debounced: true), never past --max-wait after the burst's
first put: the job runs once, DUR after the last put of a burst, with its
body. --debounce-mode extend keeps the first body and only restarts the
delay; --debounce-mode replace keeps the due time and only replaces the
body and priority. Once the job is ready or reserved, a put starts a new
job, which takes the key over, or with --duplicate-live is a duplicate.
These go over the HTTP API: the beanstalkd protocol has no key.

When the environment has TRACEPARENT (and TRACESTATE), as OpenTelemetry's
SDKs and otel-cli set them, the put goes over the HTTP API too, carrying
that W3C trace context to the job: the worker that runs the job joins the
trace (docs/tracing.md). The beanstalkd protocol has no place for it.

Prints the new job's ID and tube.

Examples:

  hourglass put 'hello'
  hourglass put --tube emails --priority 10 --delay 30s --ttr 2m '{"to":"ada@example.com"}'
  hourglass put --tube retries --delay 250ms 'again'
  hourglass put --tube emails --group customer-42 'hello'
  gzip -c report.csv | hourglass put --tube reports -
  id=$(hourglass put --json hello | jq .id)
  hourglass put --tube orders --unique-key order-42 --unique-for 1h '{"order":42}'
  hourglass put --tube index --unique-key doc-7 --debounce 200ms --max-wait 2s 'doc 7 changed'
  TRACEPARENT=00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01 hourglass put --http http://127.0.0.1:7480 hello
`,
	flags: func(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
		var cf clientFlags
		cf.define(fs)
		tube := fs.String("tube", "default", "`tube` to put the job into")
		group := fs.String("group", "", "the `group` of the tube to put the job into (the tube TUBE;GROUP)")
		pri := fs.Uint64("priority", queue.DefaultPriority, "`priority`, 0 (most urgent) to 4294967295; below 1024 counts as urgent")
		alias(fs, "pri", "priority")
		delay := secondsVar(fs, "delay", 0, "how long the job waits before it is ready (a `duration` such as 30s or 5m; a bare number is seconds)")
		ttr := secondsVar(fs, "ttr", time.Minute, "time to run: how long a reservation lasts (a `duration`; a bare number is seconds)")
		ukey := fs.String("unique-key", "", "a unique `key`: while a job of the tube holds it, the put is a duplicate (over the HTTP API)")
		ufor := fs.Duration("unique-for", 0, "with --unique-key: every put with the key is a duplicate of this job for this `duration` from now")
		ukept := fs.Bool("unique-kept", false, "with --unique-key: a duplicate also of a finished job with the key that the tube keeps")
		debounce := fs.Duration("debounce", 0, "with --unique-key: the job's delay (a `duration`), restarted by each put of a burst while the job is delayed")
		mode := fs.String("debounce-mode", "both", "what --debounce does to the delayed job: `mode` both (replace the body and restart the delay), extend (restart the delay) or replace (replace the body)")
		maxWait := fs.Duration("max-wait", 0, "with --debounce: the job is due no later than its first put plus this `duration` (0: no bound)")
		dupLive := fs.Bool("duplicate-live", false, "with --debounce: a duplicate of a ready or reserved job with the key, rather than a new job")
		var lf leaseFlags
		lf.define(fs, false)
		return func(ctx context.Context, c *cli, args []string) error {
			base := *tube
			if err := checkTube(*tube); err != nil {
				return err
			}
			req := httpapi.PutRequest{UniqueKey: *ukey, UniqueKept: *ukept, UniqueForMS: ufor.Milliseconds(), MaxWaitMS: maxWait.Milliseconds(), DuplicateLive: *dupLive}
			keyed, err := putKeyFlags(fs, &req, *debounce, *mode)
			if err != nil {
				return err
			}
			if *debounce > 0 {
				*delay = *debounce
			}
			if *group != "" {
				name := queue.GroupTube(*tube, *group)
				if queue.IsGroupTube(*tube) || !queue.ValidTube(name) {
					return usagef("--group %q: the tube %q is not a group's tube name (tube-name characters, at most %d bytes in all, no ';' in --tube)", *group, name, queue.MaxTubeName)
				}
				*tube = name
			}
			if *pri > math.MaxUint32 {
				return usagef("--priority %d: want 0 to %d", *pri, uint64(math.MaxUint32))
			}
			if *delay%time.Second != 0 || *ttr%time.Second != 0 || os.Getenv("TRACEPARENT") != "" || keyed {
				// Milliseconds, a trace context or a unique key: over HTTP.
				switch {
				case *delay < 0:
					return usagef("--delay %v: want 0 or more", *delay)
				case *ttr < time.Millisecond:
					return usagef("--ttr %v: want at least 1ms", *ttr)
				}
				body, err := c.body(args)
				if err != nil {
					return err
				}
				lf.json = cf.json
				return c.putHTTP(ctx, lf, base, *group, uint32(*pri), *delay, *ttr, body, req)
			}
			if err := wholeSeconds("delay", *delay, 0); err != nil {
				return err
			}
			if err := wholeSeconds("ttr", *ttr, time.Second); err != nil {
				return err
			}
			body, err := c.body(args)
			if err != nil {
				return err
			}
			return c.put(ctx, cf, *tube, uint32(*pri), *delay, *ttr, body)
		}
	},
}

// body returns the job body from the arguments or standard input.
func (c *cli) body(args []string) ([]byte, error) {
	switch {
	case len(args) > 1:
		return nil, usagef("put takes one BODY, got %d arguments (quote the body)", len(args))
	case len(args) == 1 && args[0] != "-":
		return []byte(args[0]), nil
	case len(args) == 0 && isTerminal(c.stdin):
		fmt.Fprintln(c.stderr, "hourglass put: reading the body from standard input (end it with Ctrl-D)")
	}
	b, err := io.ReadAll(io.LimitReader(c.stdin, beanstalkc.MaxBody+1))
	if err != nil {
		return nil, fmt.Errorf("reading the body from standard input: %w", err)
	}
	if len(b) > beanstalkc.MaxBody {
		return nil, fmt.Errorf("the body on standard input is over %d bytes", beanstalkc.MaxBody)
	}
	return b, nil
}

func (c *cli) put(ctx context.Context, cf clientFlags, tube string, pri uint32, delay, ttr time.Duration, body []byte) error {
	ctx, conn, done, err := connect(ctx, cf, tube)
	if err != nil {
		return err
	}
	defer done()
	id, err := conn.Put(ctx, body, pri, delay, ttr)
	switch {
	case errors.Is(err, beanstalkc.ErrJobTooBig):
		limit := "its max-job-size"
		if st, err := conn.Stats(ctx); err == nil {
			if v, ok := st.Get("max-job-size"); ok {
				limit = v + " bytes"
			}
		}
		return refusedError{fmt.Sprintf("job too big: %d bytes, the server takes at most %s", len(body), limit), err}
	case errors.Is(err, beanstalkc.ErrBuried):
		return fmt.Errorf("job %d was buried: the server ran out of memory", id)
	case err != nil:
		return describe(err)
	}
	o := object{{"id", id}, {"tube", tube}}
	if cf.json {
		return writeJSON(c.stdout, o)
	}
	return writeKV(c.stdout, o)
}

// putKeyFlags checks the flags of a put's unique key, its windows and its
// debounce, given through fs, and sets req's debounce mode; it reports
// whether the put has a key.
func putKeyFlags(fs *flag.FlagSet, req *httpapi.PutRequest, debounce time.Duration, mode string) (bool, error) {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	for _, name := range []string{"unique-for", "unique-kept", "debounce"} {
		if set[name] && req.UniqueKey == "" {
			return false, usagef("--%s needs --unique-key", name)
		}
	}
	for _, name := range []string{"debounce-mode", "max-wait", "duplicate-live"} {
		if set[name] && !set["debounce"] {
			return false, usagef("--%s needs --debounce", name)
		}
	}
	if set["unique-key"] && (req.UniqueKey == "" || len(req.UniqueKey) > queue.MaxUniqueKey) {
		return false, usagef("--unique-key: %d bytes, want 1 to %d", len(req.UniqueKey), queue.MaxUniqueKey)
	}
	switch ufor := time.Duration(req.UniqueForMS) * time.Millisecond; {
	case ufor < 0 || ufor > queue.MaxRetention:
		return false, usagef("--unique-for %v: want 0 to %v", ufor, queue.MaxRetention)
	}
	if set["debounce"] {
		switch {
		case set["delay"]:
			return false, usagef("--debounce is the job's delay: give it or --delay, not both")
		case debounce < 0:
			return false, usagef("--debounce %v: want 0 or more", debounce)
		case req.MaxWaitMS < 0:
			return false, usagef("--max-wait %v: want 0 or more", time.Duration(req.MaxWaitMS)*time.Millisecond)
		case req.MaxWaitMS > 0 && req.MaxWaitMS < debounce.Milliseconds():
			return false, usagef("--max-wait %v is shorter than --debounce %v", time.Duration(req.MaxWaitMS)*time.Millisecond, debounce)
		}
		switch mode {
		case "both", "extend", "replace":
			req.Debounce = mode
		default:
			return false, usagef("--debounce-mode %q: want both, extend or replace", mode)
		}
	}
	return req.UniqueKey != "", nil
}

// putHTTP puts a job over the HTTP API, which counts milliseconds, and
// prints what put prints. req carries the put's unique key, windows and
// debounce.
func (c *cli) putHTTP(ctx context.Context, lf leaseFlags, tube, group string, pri uint32, delay, ttr time.Duration, body []byte, req httpapi.PutRequest) error {
	req.Priority, req.DelayMS, req.TTRMS, req.Group = &pri, delay.Milliseconds(), ttr.Milliseconds(), group
	if utf8.Valid(body) {
		s := string(body)
		req.Body = &s
	} else {
		s := base64.StdEncoding.EncodeToString(body)
		req.BodyBase64 = &s
	}
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	hc := lf.client()
	if tp := os.Getenv("TRACEPARENT"); tp != "" {
		hc.header = map[string]string{"traceparent": tp}
		if ts := os.Getenv("TRACESTATE"); ts != "" {
			hc.header["tracestate"] = ts
		}
	}
	_, reply, err := hc.call(ctx, "POST", "/v1/tubes/"+url.PathEscape(tube)+"/jobs", req)
	if err != nil {
		return err
	}
	var r httpapi.PutReply
	if err := json.Unmarshal(reply, &r); err != nil {
		return fmt.Errorf("put: the server's reply: %w", err)
	}
	if group != "" {
		tube = queue.GroupTube(tube, group)
	}
	o := object{{"id", r.ID}, {"tube", tube}}
	if r.Duplicate {
		o = append(o, field{"duplicate", true})
	}
	if r.Debounced {
		o = append(o, field{"debounced", true})
	}
	if lf.json {
		return writeJSON(c.stdout, o)
	}
	return writeKV(c.stdout, o)
}

// isTerminal reports whether r is a terminal (a character device).
func isTerminal(r any) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
