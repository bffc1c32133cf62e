package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"net/url"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/hourglass-io/hourglass/server/httpapi"
)

var jobCommand = &command{
	name:    "job",
	forms:   []string{"ID", ""},
	args:    "[flags] ID | --tube TUBE --key KEY | --tube TUBE --finished",
	summary: "look up a job, live or kept after it finished, by ID or by unique key; list a tube's finished jobs",
	help: `Looks up a job over the HTTP API (--http, or HOURGLASS_HTTP): by its ID, or
by the unique key it was put with in --tube. It finds a live job and one
its tube keeps after it ended (the tube's retention, docs/keys.md): that
one is in state finished, with its result, when it finished and when the
tube drops it. It prints the job's last error and the errors of its
attempts, oldest first, one "error:" line each (time, attempt, reason):
the last 10 a release or bury gave, fewer when their reasons take more
than 4,096 bytes together.

With --finished it lists the jobs --tube keeps after they ended (finished
or cancelled), the newest first (strictly: the one the tube drops last
first), --limit of them (default 50, at most 1,000), one line each: ID,
unique key, how it ended, when, and the first bytes of its result
(quoted). When there are more it ends with a line "next: CURSOR", and
--cursor CURSOR lists the next page.

Exit status: 0 when the job was found, 3 when there is none, 1 when the
server cannot be reached, 2 for a usage error.

Examples:

  hourglass job 42
  hourglass job --tube orders --key order-42
  hourglass job --json --tube orders --key order-42
  hourglass job --tube orders --finished --limit 20
`,
	flags: func(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
		var lf leaseFlags
		lf.define(fs, false)
		fs.BoolVar(&lf.json, "json", false, "print the job as JSON")
		tube := fs.String("tube", "", "the `TUBE` whose unique key --key names")
		key := fs.String("key", "", "the unique `KEY` the job was put with (needs --tube)")
		finished := fs.Bool("finished", false, "list the jobs --tube keeps after they ended, the newest first")
		limit := fs.Int("limit", 50, "with --finished: list at most `N` jobs (1 to 1000)")
		cursor := fs.String("cursor", "", "with --finished: the `CURSOR` a page before ended with (next:)")
		return func(ctx context.Context, c *cli, args []string) error {
			var path, what string
			switch {
			case *finished:
				if len(args) != 0 || *key != "" || *tube == "" {
					return usagef("job --finished needs --tube, and takes no ID and no --key")
				}
				if *limit < 1 || *limit > 1000 {
					return usagef("job --limit %d: want 1 to 1000", *limit)
				}
				return listFinished(ctx, c, &lf, *tube, *limit, *cursor)
			case *limit != 50 || *cursor != "":
				return usagef("job --limit and --cursor go with --finished")
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

// listFinished prints a page of the jobs tube keeps (GET
// /v1/tubes/{tube}/kept).
func listFinished(ctx context.Context, c *cli, lf *leaseFlags, tube string, limit int, cursor string) error {
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	q := url.Values{"limit": {strconv.Itoa(limit)}}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	_, body, err := lf.client().call(ctx, "GET", "/v1/tubes/"+url.PathEscape(tube)+"/kept?"+q.Encode(), nil)
	if err != nil {
		return err
	}
	if lf.json {
		_, err := c.stdout.Write(append(body, '\n'))
		return err
	}
	var l httpapi.KeptList
	if err := json.Unmarshal(body, &l); err != nil {
		return fmt.Errorf("job: the server's reply: %w", err)
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tKEY\tENDED\tFINISHED AT\tRESULT")
	for _, k := range l.Jobs {
		key := k.UniqueKey
		if key == "" {
			key = "-"
		}
		res := "-"
		if k.ResultBase64 != "" {
			r, err := base64.StdEncoding.DecodeString(k.ResultBase64)
			if err != nil {
				return fmt.Errorf("job: the server's reply: %w", err)
			}
			res = strconv.Quote(string(r[:min(len(r), finishedPreview)]))
			if k.ResultBytes > finishedPreview {
				res += fmt.Sprintf(" (%d bytes)", k.ResultBytes)
			}
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", k.ID, key, k.Ended, time.Time(k.FinishedAt).UTC().Format(httpapi.TimestampFormat), res)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if l.Next != "" {
		_, err := fmt.Fprintf(c.stdout, "next: %s\n", l.Next)
		return err
	}
	return nil
}

// finishedPreview is how many bytes of a result a line of job
// --finished shows.
const finishedPreview = 60

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
