package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"text/tabwriter"

	"github.com/hourglass-io/hourglass/internal/beanstalkc"
)

var tubesCommand = &command{
	name:    "tubes",
	forms:   []string{""},
	args:    "[flags]",
	summary: "list the tubes with their job counts",
	help: `Prints one row per tube: jobs ready (of which urgent), delayed, reserved and
buried, jobs put since the tube was created, connections using, watching
and waiting on it, and the seconds left of a pause. --json prints
{"tubes": [...]} with each tube's whole stats-tube document.

Examples:

  hourglass tubes
  hourglass tubes --json | jq '.tubes[] | select(."current-jobs-buried" > 0) | .name'
`,
	flags: func(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
		var cf clientFlags
		cf.define(fs)
		return func(ctx context.Context, c *cli, args []string) error {
			if len(args) > 0 {
				return usagef("tubes takes no arguments, got %q", args)
			}
			return c.tubes(ctx, cf)
		}
	},
}

// tubeColumns are the table's columns: heading and stats-tube key.
var tubeColumns = []struct{ head, key string }{
	{"TUBE", "name"},
	{"READY", "current-jobs-ready"},
	{"URGENT", "current-jobs-urgent"},
	{"DELAYED", "current-jobs-delayed"},
	{"RESERVED", "current-jobs-reserved"},
	{"BURIED", "current-jobs-buried"},
	{"TOTAL", "total-jobs"},
	{"USING", "current-using"},
	{"WATCHING", "current-watching"},
	{"WAITING", "current-waiting"},
	{"PAUSE-LEFT", "pause-time-left"},
}

func (c *cli) tubes(ctx context.Context, cf clientFlags) error {
	ctx, conn, done, err := connect(ctx, cf, "")
	if err != nil {
		return err
	}
	defer done()
	names, err := conn.ListTubes(ctx)
	if err != nil {
		return describe(err)
	}
	var all []beanstalkc.Stats
	for _, name := range names {
		st, err := conn.StatsTube(ctx, name)
		if errors.Is(err, beanstalkc.ErrNotFound) {
			continue // gone since list-tubes
		}
		if err != nil {
			return describe(err)
		}
		all = append(all, st)
	}
	if cf.json {
		tubes := make([]object, len(all))
		for i, st := range all {
			tubes[i] = statsObject(st)
		}
		return writeJSON(c.stdout, object{{"tubes", tubes}})
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	for i, col := range tubeColumns {
		if i > 0 {
			fmt.Fprint(tw, "\t")
		}
		fmt.Fprint(tw, col.head)
	}
	fmt.Fprintln(tw)
	for _, st := range all {
		for i, col := range tubeColumns {
			if i > 0 {
				fmt.Fprint(tw, "\t")
			}
			v, ok := st.Get(col.key)
			if !ok {
				v = "-"
			}
			fmt.Fprint(tw, v)
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}
