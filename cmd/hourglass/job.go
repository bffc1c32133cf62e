package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"net/url"
	"time"

	"github.com/hourglass-io/hourglass/server/httpapi"
)

var jobCommand = &command{
	name:    "job",
	forms:   []string{"ID", ""},
	args:    "[flags] ID | --tube TUBE --key KEY",
	summary: "look up a job, live or kept after it finished, by ID or by unique key",
	help: `Looks up a job over the HTTP API (--http, or HOURGLASS_HTTP): by its ID, or
by the unique key it was put with in --tube. It finds a live job and one
its tube keeps after it ended (the tube's retention, docs/keys.md): that
one is in state finished, with its result, when it finished and when the
tube drops it.

Exit status: 0 when the job was found, 3 when there is none, 1 when the
server cannot be reached, 2 for a usage error.

Examples:

  hourglass job 42
  hourglass job --tube orders --key order-42
  hourglass job --json --tube orders --key order-42
`,
	flags: func(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
		var lf leaseFlags
		lf.define(fs, false)
		fs.BoolVar(&lf.json, "json", false, "print the job as JSON")
		tube := fs.String("tube", "", "the `TUBE` whose unique key --key names")
		key := fs.String("key", "", "the unique `KEY` the job was put with (needs --tube)")
		return func(ctx context.Context, c *cli, args []string) error {
			var path, what string
			switch {
			case *key != "" || *tube != "":
				if len(args) != 0 {
					return usagef("job takes an ID or --tube and --key, not both")
				}
				if *key == "" || *tube == "" {
					return usagef("job --key needs --tube, and --tube needs --key")
				}
				path = "/v1/tubes/" + url.PathEscape(*tube) + "/keys/" + url.PathEscape(*key)
				what = fmt.Sprintf("no job with key %q in tube %s", *key, *tube)
			default:
				id, err := jobArg("job", args)
				if err != nil {
					return err
				}
				path = fmt.Sprintf("/v1/jobs/%d/lookup", id)
				what = fmt.Sprintf("job %d not found", id)
			}
			ctx, cancel := context.WithTimeout(ctx, commandTimeout)
			defer cancel()
			_, body, err := lf.client().call(ctx, "GET", path, nil)
			if err != nil {
				return notFound(err, "%s", what)
			}
			var l httpapi.JobLookup
			if err := json.Unmarshal(body, &l); err != nil {
				return fmt.Errorf("job: the server's reply: %w", err)
			}
			if lf.json {
				_, err := c.stdout.Write(append(body, '\n'))
				return err
			}
			return printLookup(c, l)
		}
	},
}

// printLookup prints a looked-up job as lines of "name: value".
func printLookup(c *cli, l httpapi.JobLookup) error {
	w := c.stdout
	fmt.Fprintf(w, "id: %d\ntube: %s\nstate: %s\n", l.ID, l.Tube, l.State)
	if l.UniqueKey != "" {
		fmt.Fprintf(w, "unique_key: %s\n", l.UniqueKey)
	}
	fmt.Fprintf(w, "priority: %d\nattempts: %d\n", l.Priority, l.Attempts)
	if l.LastError != "" {
		fmt.Fprintf(w, "last_error: %s\n", l.LastError)
	}
	if t := time.Time(l.FinishedAt); !t.IsZero() {
		fmt.Fprintf(w, "finished_at: %s\n", t.UTC().Format(httpapi.TimestampFormat))
	}
	if t := time.Time(l.KeptUntil); !t.IsZero() {
		fmt.Fprintf(w, "kept_until: %s\n", t.UTC().Format(httpapi.TimestampFormat))
	}
	if l.ResultBase64 != "" {
		r, err := base64.StdEncoding.DecodeString(l.ResultBase64)
		if err != nil {
			return fmt.Errorf("job: the server's result: %w", err)
		}
		fmt.Fprintf(w, "result: %q\n", r)
	}
	return nil
}
