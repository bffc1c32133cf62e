package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/hourglass-io/hourglass"
)

var migrateCommand = &command{
	name:    "migrate",
	forms:   []string{""},
	args:    "--store URL",
	summary: "convert a Redis store written by an earlier release",
	help: `Converts the Redis store --store names to the key layout this build reads,
in place: every job keeps its state, history and counters. serve refuses a
store of an earlier layout with an error naming this command. Stop every
hourglass using the store first: migrate refuses while a server's session
lease in the store has not lapsed (a few seconds after it stops). It
converts a chunk at a time; run it again if it stops half way. A store
already converted, or a Redis without one, is left as it is. The embedded
engine has nothing to convert.

Examples:

  hourglass migrate --store redis://10.0.0.5:6379/0
  hourglass migrate --store redis+cluster://h1:6379,h2:6379
`,
	flags: func(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
		var store string
		fs.StringVar(&store, "store", "", "`URL` of the Redis store (redis://, rediss://, redis+sentinel://, redis+cluster://)")
		return func(ctx context.Context, c *cli, args []string) error {
			if len(args) > 0 {
				return usagef("migrate takes no arguments, got %q", args)
			}
			if store == "" {
				return usagef("migrate needs --store")
			}
			m, err := hourglass.Migrate(ctx, store, nil)
			if err != nil {
				return err
			}
			switch {
			case m.From == "":
				fmt.Fprintln(c.stdout, "no store there: nothing to convert")
			case m.From == m.To:
				fmt.Fprintf(c.stdout, "layout %s already: nothing to convert\n", m.To)
			case m.Deleted > 0:
				fmt.Fprintf(c.stdout, "converted layout %s to %s (%d jobs rewritten, %d keys of layout 1 deleted)\n", m.From, m.To, m.Converted, m.Deleted)
			default:
				fmt.Fprintf(c.stdout, "converted layout %s to %s (%d jobs rewritten)\n", m.From, m.To, m.Converted)
			}
			return nil
		}
	},
}
