package main

import (
	"context"
	"errors"
	"flag"

	"github.com/hourglass-io/hourglass/internal/beanstalkc"
)

var peekCommand = &command{
	name:    "peek",
	forms:   []string{"ID"},
	args:    "[flags] ID | --ready | --delayed | --buried",
	summary: "show a job without reserving it: by ID, or the next ready, delayed or buried job of a tube",
	help: `--ready shows the job a reserve would take next (lowest priority, then
lowest ID), --delayed the delayed job due first, --buried the job buried
first. The job is shown with what stats-job says of it.

With --http URL (or HOURGLASS_HTTP: an hourglass server's HTTP API, with
the token of --auth-token or HOURGLASS_AUTH_TOKEN) the job is read there instead, and
shown with its history as well, which the beanstalkd protocol has no
field for: attempts, last_error (the reason its last release or bury gave,
a worker's error), and when it was put, last reserved, released, buried,
kicked and timed out, and when its last error was given (RFC 3339, "never"
when it has not happened).

Examples:

  hourglass peek 42
  hourglass peek --buried --tube emails
  hourglass peek --ready --raw > next-body
  hourglass peek --buried --tube emails --http http://127.0.0.1:7480
`,
	flags: func(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
		var cf clientFlags
		cf.define(fs)
		var hf jobHTTP
		hf.define(fs)
		tube := fs.String("tube", "default", "`tube` of --ready, --delayed and --buried")
		ready := fs.Bool("ready", false, "show the next ready job of the tube")
		delayed := fs.Bool("delayed", false, "show the delayed job of the tube due first")
		buried := fs.Bool("buried", false, "show the job of the tube buried first")
		raw := fs.Bool("raw", false, "print the body alone, as it is")
		return func(ctx context.Context, c *cli, args []string) error {
			var state string
			n := 0
			for s, set := range map[string]bool{"ready": *ready, "delayed": *delayed, "buried": *buried} {
				if set {
					state, n = s, n+1
				}
			}
			if *raw && cf.json {
				return usagef("--raw and --json exclude each other")
			}
			switch {
			case n > 1:
				return usagef("give one of --ready, --delayed and --buried")
			case n == 1 && len(args) > 0:
				return usagef("give an ID or --%s, not both", state)
			case n == 0 && len(args) != 1:
				return usagef("want one job ID, or --ready, --delayed or --buried")
			}
			if n == 1 {
				if err := checkTube(*tube); err != nil {
					return err
				}
				if hf.url != "" {
					return c.peekHTTP(ctx, hf, cf.json, 0, *tube, state, *raw)
				}
				return c.peek(ctx, cf, 0, *tube, state, *raw)
			}
			id, err := parseID(args[0])
			if err != nil {
				return err
			}
			if hf.url != "" {
				return c.peekHTTP(ctx, hf, cf.json, id, "", "", *raw)
			}
			return c.peek(ctx, cf, id, "", "", *raw)
		}
	},
}

// peek shows the job with the given ID or, when state is set, the next job
// of tube in that state.
func (c *cli) peek(ctx context.Context, cf clientFlags, id uint64, tube, state string, raw bool) error {
	ctx, conn, done, err := connect(ctx, cf, "")
	if err != nil {
		return err
	}
	defer done()
	var j beanstalkc.Job
	switch state {
	case "":
		j, err = conn.Peek(ctx, id)
		if errors.Is(err, beanstalkc.ErrNotFound) {
			return missf("job %d not found", id)
		}
	default:
		if err := selectTube(ctx, conn, tube); err != nil {
			return err
		}
		switch state {
		case "ready":
			j, err = conn.PeekReady(ctx)
		case "delayed":
			j, err = conn.PeekDelayed(ctx)
		case "buried":
			j, err = conn.PeekBuried(ctx)
		}
		if errors.Is(err, beanstalkc.ErrNotFound) {
			return missf("no %s job in tube %s", state, tube)
		}
	}
	if err != nil {
		return describe(err)
	}
	return c.showJob(ctx, conn, j, raw, cf.json)
}
