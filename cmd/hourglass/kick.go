package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strconv"

	"github.com/hourglass-io/hourglass/internal/beanstalkc"
)

var kickCommand = &command{
	name:    "kick",
	forms:   []string{"N"},
	args:    "[flags] N | --job ID",
	summary: "move up to N buried jobs of a tube to ready (delayed jobs when none is buried), or one job with --job",
	help: `"kick N" kicks buried jobs, oldest first, when the tube has any, and
otherwise delayed jobs, soonest first, as beanstalkd does. "kick --job ID"
kicks one buried or delayed job, whatever its tube.

Examples:

  hourglass kick 100
  hourglass kick --tube emails 10
  hourglass kick --job 42
`,
	flags: func(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
		var cf clientFlags
		cf.define(fs)
		tube := fs.String("tube", "default", "`tube` whose jobs N kicks")
		job := fs.String("job", "", "kick the job with this `ID` instead")
		return func(ctx context.Context, c *cli, args []string) error {
			if *job != "" {
				if len(args) > 0 {
					return usagef("--job takes no N")
				}
				id, err := parseID(*job)
				if err != nil {
					return err
				}
				return c.kickJob(ctx, cf, id)
			}
			if err := checkTube(*tube); err != nil {
				return err
			}
			if len(args) != 1 {
				return usagef("want N, the most jobs to kick (or --job ID)")
			}
			n, err := strconv.ParseUint(args[0], 10, 32)
			if err != nil {
				return usagef("bad N %q: want 0 to 4294967295", args[0])
			}
			return c.kick(ctx, cf, *tube, int(n))
		}
	},
}

func (c *cli) kick(ctx context.Context, cf clientFlags, tube string, n int) error {
	ctx, conn, done, err := connect(ctx, cf, tube)
	if err != nil {
		return err
	}
	defer done()
	kicked, err := conn.Kick(ctx, n)
	if err != nil {
		return describe(err)
	}
	if cf.json {
		return writeJSON(c.stdout, object{{"kicked", kicked}, {"tube", tube}})
	}
	_, err = fmt.Fprintf(c.stdout, "kicked %d %s in tube %s\n", kicked, plural(kicked, "job"), tube)
	return err
}

func (c *cli) kickJob(ctx context.Context, cf clientFlags, id uint64) error {
	ctx, conn, done, err := connect(ctx, cf, "")
	if err != nil {
		return err
	}
	defer done()
	switch err := conn.KickJob(ctx, id); {
	case errors.Is(err, beanstalkc.ErrNotFound):
		return missf("job %d not found (or neither buried nor delayed)", id)
	case err != nil:
		return describe(err)
	}
	if cf.json {
		return writeJSON(c.stdout, object{{"kicked", 1}, {"id", id}})
	}
	_, err = fmt.Fprintf(c.stdout, "kicked job %d\n", id)
	return err
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}
