package main

import (
	"context"
	"errors"
	"flag"
	"fmt"

	"github.com/hourglass-io/hourglass/internal/beanstalkc"
)

var deleteCommand = &command{
	name:    "delete",
	forms:   []string{"ID"},
	args:    "[flags] ID...",
	summary: "delete jobs by ID",
	help: `Deletes each job that is ready, delayed or buried. A job reserved by another
connection cannot be deleted and counts as not found, as in beanstalkd. The
other IDs are still deleted when one fails; the exit status is then 1.

With --lease (or HOURGLASS_LEASE) it deletes over the HTTP API (--http, or
HOURGLASS_HTTP) a job reserved under that lease by reserve --keep, and
jobs that are not reserved.

Examples:

  hourglass delete 42
  hourglass delete --json 42 43 44
  hourglass delete --lease hgl_5f0c… 42
`,
	flags: func(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
		var cf clientFlags
		cf.define(fs)
		var lf leaseFlags
		lf.define(fs, true)
		return func(ctx context.Context, c *cli, args []string) error {
			if len(args) == 0 {
				return usagef("no job ID given")
			}
			ids := make([]uint64, len(args))
			for i, a := range args {
				id, err := parseID(a)
				if err != nil {
					return err
				}
				ids[i] = id
			}
			if lf.lease != "" {
				if err := lf.needLease("delete"); err != nil {
					return err
				}
				return c.deleteHeld(ctx, lf, ids, cf.json)
			}
			return c.delete(ctx, cf, ids)
		}
	},
}

func (c *cli) delete(ctx context.Context, cf clientFlags, ids []uint64) error {
	ctx, conn, done, err := connect(ctx, cf, "")
	if err != nil {
		return err
	}
	defer done()
	deleted, notFound := []uint64{}, []uint64{}
	for _, id := range ids {
		err := conn.Delete(ctx, id)
		switch {
		case err == nil:
			deleted = append(deleted, id)
			if !cf.json {
				fmt.Fprintf(c.stdout, "deleted job %d\n", id)
			}
		case errors.Is(err, beanstalkc.ErrNotFound):
			notFound = append(notFound, id)
			fmt.Fprintf(c.stderr, "hourglass delete: job %d not found (or reserved by another connection)\n", id)
		default:
			return describe(err)
		}
	}
	if cf.json {
		if err := writeJSON(c.stdout, object{{"deleted", deleted}, {"not_found", notFound}}); err != nil {
			return err
		}
	}
	if len(notFound) > 0 {
		return missf("%d of %d jobs not deleted", len(notFound), len(ids))
	}
	return nil
}
