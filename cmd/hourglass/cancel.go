package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"

	"github.com/hourglass-io/hourglass/server/httpapi"
)

var cancelCommand = &command{
	name:    "cancel",
	forms:   []string{"ID"},
	args:    "[flags] ID",
	summary: "cancel a job in any state; a reserved job's holder is told at once",
	help: `Cancels a job over the HTTP API (--http, or HOURGLASS_HTTP), whatever its
state: a ready, delayed or buried job is removed; a reserved job is removed
and its holder told at once, on whatever server it holds the job (a
queue.Worker's handler context ends, "hourglass work" stops the job's
command: SIGTERM to its process group, SIGKILL after its --grace). The
holder's later delete, release, bury or touch finds no job (HTTP 404
not_found, beanstalkd NOT_FOUND), and the job is never retried. The reason
travels to the holder. The tube counts the cancel (stats-tube's cancels).

Exit status: 0 when the job was cancelled, 3 when there is no such job, 1
when the server cannot be reached, 2 for a usage error.

Examples:

  hourglass cancel 42
  hourglass cancel --reason "account closed" 42
`,
	flags: func(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
		var lf leaseFlags
		lf.define(fs, false)
		fs.BoolVar(&lf.json, "json", false, "print the outcome as JSON")
		reason := fs.String("reason", "", "why the job is cancelled (at most 1024 bytes are kept): it travels to the holder")
		return func(ctx context.Context, c *cli, args []string) error {
			id, err := jobArg("cancel", args)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(ctx, commandTimeout)
			defer cancel()
			_, body, err := lf.client().call(ctx, "POST", fmt.Sprintf("/v1/jobs/%d/cancel", id), httpapi.CancelRequest{Reason: *reason})
			if err != nil {
				return notFound(err, "job %d not found", id)
			}
			var r httpapi.CancelReply
			if err := json.Unmarshal(body, &r); err != nil {
				return fmt.Errorf("cancel: the server's reply: %w", err)
			}
			if lf.json {
				return writeJSON(c.stdout, object{{"id", r.ID}, {"was", r.Was}})
			}
			if r.Was == "reserved" {
				_, err = fmt.Fprintf(c.stdout, "cancelled job %d (it was reserved: its holder was told)\n", r.ID)
			} else {
				_, err = fmt.Fprintf(c.stdout, "cancelled job %d (it was %s)\n", r.ID, r.Was)
			}
			return err
		}
	},
}
