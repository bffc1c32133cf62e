package main

import (
	"context"
	"errors"
	"flag"

	"github.com/hourglass-io/hourglass/internal/beanstalkc"
)

var statsCommand = &command{
	name:    "stats",
	forms:   []string{""},
	args:    "[flags]",
	summary: "print the statistics of the server, of a tube (--tube) or of a job (--job)",
	help: `Prints the server's stats document as it sends it, one "key: value" per
line in its order, or as one JSON object (numbers and booleans as such).

With --job and --http URL (or HOURGLASS_HTTP: an hourglass server's HTTP
API, with the token of --auth-token or HOURGLASS_AUTH_TOKEN) the job's statistics are read there
instead, with its history, which beanstalkd's stats-job has no field for:
attempts, last_error (the reason its last release or bury gave, a
worker's error), and the times of its last put, reserve, release, bury,
kick, timeout and error (RFC 3339, "never" when it has not happened).
Without --job, --http changes nothing: the server's and a tube's
statistics are beanstalkd's.

Examples:

  hourglass stats
  hourglass stats --tube emails
  hourglass stats --job 42 --json
  hourglass stats --job 42 --http http://127.0.0.1:7480
  hourglass stats --json | jq '."current-jobs-ready"'
`,
	flags: func(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
		var cf clientFlags
		cf.define(fs)
		var hf jobHTTP
		hf.define(fs)
		tube := fs.String("tube", "", "show this `tube`'s statistics")
		job := fs.String("job", "", "show the statistics of the job with this `ID`")
		return func(ctx context.Context, c *cli, args []string) error {
			if len(args) > 0 {
				return usagef("stats takes no arguments, got %q", args)
			}
			if *tube != "" && *job != "" {
				return usagef("give --tube or --job, not both")
			}
			var id uint64
			if *job != "" {
				var err error
				if id, err = parseID(*job); err != nil {
					return err
				}
			}
			if *tube != "" {
				if err := checkTube(*tube); err != nil {
					return err
				}
			}
			if hf.url != "" && id != 0 {
				return c.statsJobHTTP(ctx, hf, cf.json, id)
			}
			return c.stats(ctx, cf, *tube, id)
		}
	},
}

func (c *cli) stats(ctx context.Context, cf clientFlags, tube string, id uint64) error {
	ctx, conn, done, err := connect(ctx, cf, "")
	if err != nil {
		return err
	}
	defer done()
	var st beanstalkc.Stats
	switch {
	case id != 0:
		st, err = conn.StatsJob(ctx, id)
		if errors.Is(err, beanstalkc.ErrNotFound) {
			return missf("job %d not found", id)
		}
	case tube != "":
		st, err = conn.StatsTube(ctx, tube)
		if errors.Is(err, beanstalkc.ErrNotFound) {
			return missf("tube %s not found", tube)
		}
	default:
		st, err = conn.Stats(ctx)
	}
	if err != nil {
		return describe(err)
	}
	if cf.json {
		return writeJSON(c.stdout, statsObject(st))
	}
	return writeKV(c.stdout, statsKV(st))
}
