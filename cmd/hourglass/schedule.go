package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hourglass-io/hourglass/schedule"
)

var scheduleForms = []string{"set NAME", "get NAME", "list", "delete NAME", "pause NAME", "resume NAME", "trigger NAME", "next NAME"}

var scheduleCommand = &command{
	name:    "schedule",
	forms:   scheduleForms,
	args:    "[flags] set|get|list|delete|pause|resume|trigger|next [NAME]",
	summary: "set, list, pause, trigger schedules over the HTTP API",
	help: `Manages the schedules of the server's store through its HTTP API (--http,
or HOURGLASS_HTTP; default ` + defaultHTTP + `). hourglass serve fires them:
each tick puts the schedule's job into its tube, once across every server of
the store. Flags may come before or after the subcommand and NAME.

  set NAME      create or update: --spec and --tube are required; setting an
                unchanged definition changes nothing. Prints the schedule.
  get NAME      the schedule: definition, next tick, counts, last fires
  list          every schedule (from --after): name, spec, zone, next tick
  delete NAME   delete it (the jobs it put stay)
  pause NAME    its ticks pass unfired
  resume NAME   fire again from the first tick after now
  trigger NAME  put its job now, outside the spec; prints the job id
  next NAME     its next -n fire times, one a line

--spec is five cron fields (six with leading seconds), a macro (@hourly,
@daily, @weekly, @monthly, @yearly) or "@every DURATION"; --zone an IANA
zone (default UTC). --misfire says what happens to ticks missed while no
server ran: skip (the default: fire the latest if it is at most --grace
late), fire-once (fire the latest however late) or catch-up=N (fire the
latest N). --overlap says what a tick does while the schedule's previous
job is still in the queue: allow (the default: put anyway), skip (put
nothing while it is ready, delayed or reserved), buffer_one (put nothing
while it is ready or delayed; while it is reserved, put one held until it
ends) or cancel_previous (cancel it, then put);
--pause-on-failure pauses the schedule when a tick finds the previous
job buried. Exit status 3 when there is no schedule of the name.

Examples:

  hourglass schedule set nightly-report --spec '30 2 * * *' --zone Europe/Berlin \
      --tube reports --body '{"kind":"nightly"}' --ttr 10m --misfire catch-up=3
  hourglass schedule set sync --spec '@every 1m' --tube sync --overlap skip --pause-on-failure
  hourglass schedule set heartbeat --spec '@every 30s' --tube beats --body beat
  hourglass schedule next -n 5 nightly-report
  hourglass schedule trigger nightly-report
  hourglass schedule list
  hourglass schedule pause nightly-report
`,
	flags: func(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
		var f scheduleFlags
		f.http.define(fs)
		fs.StringVar(&f.spec, "spec", "", "set: the cron `spec`, macro or @every DURATION")
		fs.StringVar(&f.zone, "zone", "", "set: the IANA time `zone` of the spec (default UTC)")
		fs.StringVar(&f.tube, "tube", "", "set: the `tube` each tick's job goes into")
		fs.StringVar(&f.body, "body", "", "set: the job's body `text` (- reads standard input)")
		fs.UintVar(&f.priority, "priority", 1024, "set: the job's `priority` (0 is the most urgent)")
		fs.DurationVar(&f.ttr, "ttr", 0, "set: the job's time to run (a `duration`, at least 1s; 0: the queue's default)")
		fs.StringVar(&f.misfire, "misfire", "skip", "set: `policy` for missed ticks: skip, fire-once or catch-up=N")
		fs.DurationVar(&f.grace, "grace", 0, "set: how late a tick may fire and count as on time (a `duration`; 0: a minute)")
		fs.StringVar(&f.overlap, "overlap", "allow", "set: `policy` while the previous job is in the queue: allow, skip, buffer_one or cancel_previous")
		fs.BoolVar(&f.pauseOnFailure, "pause-on-failure", false, "set: pause the schedule when a tick finds its previous job buried")
		fs.StringVar(&f.start, "start", "", "set: the first instant a tick may fire at, RFC 3339 `time` (anchors @every)")
		fs.StringVar(&f.end, "end", "", "set: the instant after which no tick fires, RFC 3339 `time`")
		fs.StringVar(&f.after, "after", "", "list: start after this schedule `name`")
		fs.IntVar(&f.n, "n", 10, "next: how many fire `times` (1 to 1000)")
		return func(ctx context.Context, c *cli, args []string) error {
			f.set = givenOf(fs)
			return c.schedule(ctx, &f, args)
		}
	},
}

type scheduleFlags struct {
	http             httpFlags
	spec, zone, tube string
	body             string
	priority         uint
	ttr, grace       time.Duration
	misfire          string
	overlap          string
	pauseOnFailure   bool
	start, end       string
	after            string
	n                int
	set              givenFlags
}

// parseMisfire reads --misfire as the API's misfire object.
func parseMisfire(s string) (map[string]any, error) {
	switch {
	case s == "skip":
		return map[string]any{"policy": "skip"}, nil
	case s == "fire-once":
		return map[string]any{"policy": "fire_once"}, nil
	case strings.HasPrefix(s, "catch-up="):
		n, err := strconv.Atoi(strings.TrimPrefix(s, "catch-up="))
		if err != nil || n < 1 {
			return nil, usagef("--misfire %q: catch-up=N wants a whole number N of 1 or more", s)
		}
		return map[string]any{"policy": "catch_up", "n": n}, nil
	}
	return nil, usagef("--misfire %q: want skip, fire-once or catch-up=N", s)
}

func (c *cli) schedule(ctx context.Context, f *scheduleFlags, args []string) error {
	sub, args, err := subcommand("schedule", scheduleForms, args)
	if err != nil {
		return err
	}
	for _, fl := range f.set {
		if !scheduleFlagFor(fl, sub) {
			return usagef("schedule %s: --%s is not one of its flags", sub, fl)
		}
	}
	hc := f.http.client()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if sub == "list" {
		return c.scheduleList(ctx, f, hc)
	}
	name := args[0]
	if name == "" {
		return usagef("schedule %s: NAME is empty", sub)
	}
	path := "/v1/schedules/" + url.PathEscape(name)
	var body []byte
	switch sub {
	case "set":
		in, err := c.scheduleBody(f)
		if err != nil {
			return err
		}
		_, body, err = hc.call(ctx, "PUT", path, in)
		if err != nil {
			return err
		}
	case "get":
		_, body, err = hc.call(ctx, "GET", path, nil)
	case "delete":
		_, body, err = hc.call(ctx, "DELETE", path, nil)
		if err == nil && !f.http.json {
			_, err = fmt.Fprintf(c.stdout, "deleted %s\n", name)
			return err
		}
	case "pause", "resume", "trigger":
		_, body, err = hc.call(ctx, "POST", path+"/"+sub, nil)
	case "next":
		if f.n < 1 || f.n > 1000 {
			return usagef("schedule next: -n %d: want 1 to 1000", f.n)
		}
		_, body, err = hc.call(ctx, "GET", path+"/next?n="+strconv.Itoa(f.n), nil)
		if err == nil && !f.http.json {
			var r struct {
				Times []string `json:"times"`
			}
			if err := json.Unmarshal(body, &r); err != nil {
				return fmt.Errorf("reading the reply: %w", err)
			}
			for _, t := range r.Times {
				if _, err := fmt.Fprintln(c.stdout, t); err != nil {
					return err
				}
			}
			return nil
		}
	}
	if err != nil {
		return err
	}
	if !f.http.json && sub != "trigger" {
		return c.showSchedule(body)
	}
	return c.show(f.http, body)
}

// scheduleFlagFor reports whether flag fl belongs to subcommand sub.
func scheduleFlagFor(fl, sub string) bool {
	switch fl {
	case "http", "auth-token", "json":
		return true
	case "after":
		return sub == "list"
	case "n":
		return sub == "next"
	}
	return sub == "set"
}

// scheduleBody builds the body of a set from the flags.
func (c *cli) scheduleBody(f *scheduleFlags) (map[string]any, error) {
	if f.spec == "" || f.tube == "" {
		return nil, usagef("schedule set needs --spec and --tube")
	}
	if f.priority > 1<<32-1 {
		return nil, usagef("--priority %d: want 0 to %d", f.priority, uint64(1<<32-1))
	}
	if f.ttr < 0 || f.grace < 0 {
		return nil, usagef("--ttr and --grace must not be negative")
	}
	misfire, err := parseMisfire(f.misfire)
	if err != nil {
		return nil, err
	}
	body := f.body
	if body == "-" {
		b, err := io.ReadAll(io.LimitReader(c.stdin, 1<<20))
		if err != nil {
			return nil, fmt.Errorf("reading the body from standard input: %w", err)
		}
		body = string(b)
	}
	job := map[string]any{"tube": f.tube, "body": body, "ttr_ms": f.ttr.Milliseconds()}
	if f.set.has("priority") {
		job["priority"] = f.priority
	}
	if _, err := schedule.ParseOverlap(f.overlap); err != nil {
		return nil, usagef("--overlap %q: want allow, skip, buffer_one or cancel_previous", f.overlap)
	}
	in := map[string]any{"spec": f.spec, "job": job, "misfire": misfire, "grace_ms": f.grace.Milliseconds(),
		"overlap": f.overlap, "pause_on_failure": f.pauseOnFailure}
	for k, v := range map[string]string{"zone": f.zone, "start": f.start, "end": f.end} {
		if v != "" {
			in[k] = v
		}
	}
	return in, nil
}

// scheduleList prints every schedule from --after, a page at a time.
func (c *cli) scheduleList(ctx context.Context, f *scheduleFlags, hc *httpClient) error {
	type state struct {
		Name   string `json:"name"`
		Spec   string `json:"spec"`
		Zone   string `json:"zone"`
		Next   string `json:"next"`
		Paused bool   `json:"paused"`
		Fires  uint64 `json:"fires"`
		Job    struct {
			Tube string `json:"tube"`
		} `json:"job"`
	}
	var all []json.RawMessage
	var rows []state
	after := f.after
	for {
		_, body, err := hc.call(ctx, "GET", "/v1/schedules?limit=1000&after="+url.QueryEscape(after), nil)
		if err != nil {
			return err
		}
		var page struct {
			Schedules []json.RawMessage `json:"schedules"`
			NextAfter string            `json:"next_after"`
		}
		if err := json.Unmarshal(body, &page); err != nil {
			return fmt.Errorf("reading the list: %w", err)
		}
		for _, raw := range page.Schedules {
			var st state
			if err := json.Unmarshal(raw, &st); err != nil {
				return fmt.Errorf("reading the list: %w", err)
			}
			all, rows = append(all, raw), append(rows, st)
		}
		if page.NextAfter == "" {
			break
		}
		after = page.NextAfter
	}
	if f.http.json {
		if all == nil {
			all = []json.RawMessage{}
		}
		b, err := json.Marshal(map[string]any{"schedules": all})
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(c.stdout, "%s\n", b)
		return err
	}
	if len(rows) == 0 {
		_, err := fmt.Fprintln(c.stdout, "no schedules")
		return err
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSPEC\tZONE\tTUBE\tNEXT\tFIRES")
	for _, st := range rows {
		zone, next := st.Zone, st.Next
		if zone == "" {
			zone = "UTC"
		}
		switch {
		case st.Paused:
			next = "paused"
		case next == "":
			next = "ended"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\n", st.Name, st.Spec, zone, st.Job.Tube, next, st.Fires)
	}
	return tw.Flush()
}
