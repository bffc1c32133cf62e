package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hourglass-io/hourglass/internal/beanstalkc"
)

var reserveCommand = &command{
	name:    "reserve",
	forms:   []string{""},
	args:    "[flags]",
	summary: "reserve a job and print it; --delete deletes it once printed, --keep holds it for bury, release, touch or delete",
	help: `Waits for a ready job in the --tube tubes (default: "default") and prints it.
Without --timeout it waits as long as it takes; --timeout 0 does not wait.
--timeout is whole seconds, as the beanstalkd protocol counts; with --keep,
which reserves over the HTTP API, it takes milliseconds too (--timeout
250ms).

Without --delete the job goes back to ready when the command ends (the
connection closes), with one more reserve counted: use it to look at the
next job. With --delete the job is deleted once it has been printed, so a
failure to print leaves it in the queue.

With --keep the job stays reserved after the command ends, for its TTR:
the reserve goes over the HTTP API (--http, or HOURGLASS_HTTP), which
prints the job's lease beside its ID. Later commands act on the job with
it: hourglass bury, release, touch (renews the TTR) and delete, each with
--lease or HOURGLASS_LEASE. A job neither deleted, buried, released nor
touched goes back to ready when its TTR runs out.

A reserve that gets no job while jobs are ready says what held them back:
the tube's pause, its cap (and when a reservation ends by its TTR) or its
rate (and when the next reserve passes), asking the HTTP API (--http).

Examples:

  hourglass reserve --timeout 5s
  hourglass reserve --tube emails --tube sms --delete --json
  hourglass reserve --tube reports --raw --delete | gunzip > report.csv

  hourglass reserve --keep --tube emails        # id: 42, lease: hgl_5f0c…
  export HOURGLASS_LEASE=hgl_5f0c…
  hourglass touch 42
  hourglass bury --reason 'bounced: no such user' 42

  hourglass reserve --keep --tube retries --timeout 250ms
  out=$(hourglass reserve --keep --json --timeout 10s)
  id=$(echo "$out" | jq .job.id); lease=$(echo "$out" | jq -r .lease)
  hourglass release --lease "$lease" --delay 1m "$id"
`,
	flags: func(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
		var cf clientFlags
		cf.define(fs)
		var tubes tubeList
		fs.Var(&tubes, "tube", "`tube` to take a job from; repeat for several (default default)")
		timeout := secondsVar(fs, "timeout", 0, "wait at most this `duration` for a job: whole seconds, or milliseconds with --keep (a bare number is seconds; 0: do not wait; default: wait for ever)")
		del := fs.Bool("delete", false, "delete the job once it is printed")
		raw := fs.Bool("raw", false, "print the body alone, as it is")
		keep := fs.Bool("keep", false, "keep the job reserved after the command, for its TTR, under a lease printed with it (over the HTTP API)")
		var lf leaseFlags
		lf.define(fs, false)
		return func(ctx context.Context, c *cli, args []string) error {
			if len(args) > 0 {
				return usagef("reserve takes no arguments, got %q", args)
			}
			wait := time.Duration(-1) // for ever
			var err error
			fs.Visit(func(f *flag.Flag) {
				if f.Name == "timeout" {
					wait = *timeout
					switch {
					case !*keep:
						err = wholeSeconds("timeout", wait, 0)
						if err != nil && wait > 0 && wait%time.Second != 0 {
							err = usagef("--timeout %v: the beanstalkd protocol counts whole seconds: give whole seconds, or add --keep to reserve over the HTTP API, which counts milliseconds", wait)
						}
					case wait < 0:
						err = usagef("--timeout %v: want 0 or more", wait)
					case wait%time.Millisecond != 0:
						err = usagef("--timeout %v: the HTTP API counts whole milliseconds", wait)
					}
				}
			})
			if err != nil {
				return err
			}
			if *raw && cf.json {
				return usagef("--raw and --json exclude each other")
			}
			if *keep {
				switch {
				case *del:
					return usagef("--keep and --delete exclude each other: delete a kept job with hourglass delete --lease")
				case *raw:
					return usagef("--keep prints the job's lease, which --raw would leave out: use --json")
				}
				return c.reserveKept(ctx, lf, tubes, wait, cf.json)
			}
			return c.reserve(ctx, cf, lf, tubes, wait, *del, *raw)
		}
	},
}

// reserve reserves a job from tubes, waiting up to wait (for ever when
// negative), prints it, and deletes it when del is set.
func (c *cli) reserve(ctx context.Context, cf clientFlags, lf leaseFlags, tubes []string, wait time.Duration, del, raw bool) error {
	setup, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	conn, err := dial(setup, cf.addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	if len(tubes) > 0 {
		for _, t := range tubes {
			if _, err := conn.Watch(setup, t); err != nil {
				return describe(err)
			}
		}
		if !slices.Contains(tubes, "default") {
			if _, err := conn.Ignore(setup, "default"); err != nil {
				return describe(err)
			}
		}
	} else {
		tubes = []string{"default"}
	}

	var j beanstalkc.Job
	if wait < 0 {
		j, err = conn.Reserve(ctx)
	} else {
		rctx, cancel := context.WithTimeout(ctx, wait+commandTimeout)
		j, err = conn.ReserveWithTimeout(rctx, wait)
		cancel()
	}
	switch {
	case errors.Is(err, beanstalkc.ErrTimedOut):
		return noJob(tubes, wait, heldBackByStats(ctx, lf.client(), tubes))
	case err != nil:
		return describe(err)
	}

	out, cancel2 := context.WithTimeout(ctx, commandTimeout)
	defer cancel2()
	if err := c.showJob(out, conn, j, raw, cf.json); err != nil {
		return err
	}
	if del {
		if err := conn.Delete(out, j.ID); err != nil {
			if errors.Is(err, beanstalkc.ErrNotFound) {
				return fmt.Errorf("job %d not found: its TTR ran out before the delete, and it is no longer ours", j.ID)
			}
			return fmt.Errorf("deleting job %d: %w", j.ID, describe(err))
		}
	}
	return nil
}

func tubeNames(tubes []string) string {
	if len(tubes) == 1 {
		return "tube " + tubes[0]
	}
	return "tubes " + strings.Join(tubes, ", ")
}
