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
tube drops it. It prints the job's last error and the errors of its
attempts, oldest first, one "error:" line each (time, attempt, reason):
the last 10 a release or bury gave, fewer when their reasons take more
than 4,096 bytes together.

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

// printLookup prints a looked-up job as lines of "name: value" (writeKV:
// a value of several lines, a worker's error, is a block under its name).
func printLookup(c *cli, l httpapi.JobLookup) error {
	kv := []field{{"id", l.ID}, {"tube", l.Tube}, {"state", l.State}}
	if l.UniqueKey != "" {
		kv = append(kv, field{"unique_key", l.UniqueKey})
	}
	kv = append(kv, field{"priority", l.Priority}, field{"attempts", l.Attempts})
	if l.LastError != "" {
		kv = append(kv, field{"last_error", l.LastError})
	}
	kv = append(kv, errorFields(l.Errors)...)
	if t := time.Time(l.FinishedAt); !t.IsZero() {
		kv = append(kv, field{"finished_at", t.UTC().Format(httpapi.TimestampFormat)})
	}
	if t := time.Time(l.KeptUntil); !t.IsZero() {
		kv = append(kv, field{"kept_until", t.UTC().Format(httpapi.TimestampFormat)})
	}
	if l.ResultBase64 != "" {
		r, err := base64.StdEncoding.DecodeString(l.ResultBase64)
		if err != nil {
			return fmt.Errorf("job: the server's reply: %w", err)
		}
		kv = append(kv, field{"result", fmt.Sprintf("%q", r)})
	}
	return writeKV(c.stdout, kv)
}
