package main

import (
	"context"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/hourglass-io/hourglass/internal/beanstalkc"
	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/server/httpapi"
)

var deleteCommand = &command{
	name:    "delete",
	forms:   []string{"ID"},
	args:    "[flags] ID...",
	summary: "delete jobs by ID (--result: finish them with a result)",
	help: `Deletes each job that is ready, delayed or buried. A job reserved by another
connection cannot be deleted and counts as not found, as in beanstalkd. The
other IDs are still deleted when one fails; the exit status is then 1.

With --lease (or HOURGLASS_LEASE) it deletes over the HTTP API (--http, or
HOURGLASS_HTTP) a job reserved under that lease by reserve --keep, and
jobs that are not reserved.

With --result TEXT (- reads it from standard input) or --result-file FILE
it finishes each job with that result instead, over the HTTP API: as a
delete, but a tube with a retention keeps the job with the result, which
"hourglass job" then shows (docs/keys.md). A result is at most 64 KiB; in
a tube without a retention it is dropped with the job. With --lease it
finishes a job held under that lease.

Examples:

  hourglass delete 42
  hourglass delete --json 42 43 44
  hourglass delete --lease hgl_5f0c… 42
  hourglass delete --result '{"shipped":true}' 42
  ./report.sh | hourglass delete --lease hgl_5f0c… --result - 42
  hourglass delete --result-file out.json 42
`,
	flags: func(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
		var cf clientFlags
		cf.define(fs)
		var lf leaseFlags
		lf.define(fs, true)
		var rf resultFlags
		rf.define(fs)
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
			if rf.given() {
				if lf.lease != "" {
					if err := lf.needLease("delete"); err != nil {
						return err
					}
				}
				result, err := rf.read(c)
				if err != nil {
					return err
				}
				return c.finishJobs(ctx, lf, ids, result, cf.json)
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

// resultFlags are delete's --result and --result-file.
type resultFlags struct {
	text, file string
	set        bool // --result given, even empty
}

func (f *resultFlags) define(fs *flag.FlagSet) {
	fs.Func("result", "finish the jobs with this `result` instead of deleting them (- reads it from standard input)", func(v string) error {
		f.text, f.set = v, true
		return nil
	})
	fs.StringVar(&f.file, "result-file", "", "finish the jobs with the content of `file` as their result")
}

func (f *resultFlags) given() bool { return f.set || f.file != "" }

// read returns the result the flags name, at most queue.MaxResultLen
// bytes.
func (f *resultFlags) read(c *cli) ([]byte, error) {
	var (
		b    []byte
		err  error
		from string
	)
	switch {
	case f.set && f.file != "":
		return nil, usagef("give --result or --result-file, not both")
	case f.file != "":
		from = f.file
		var fh *os.File
		if fh, err = os.Open(f.file); err != nil {
			return nil, usagef("--result-file: %v", err)
		}
		defer fh.Close()
		b, err = io.ReadAll(io.LimitReader(fh, queue.MaxResultLen+1))
	case f.text == "-":
		from = "standard input"
		b, err = io.ReadAll(io.LimitReader(c.stdin, queue.MaxResultLen+1))
	default:
		b = []byte(f.text)
	}
	if err != nil {
		return nil, fmt.Errorf("reading the result from %s: %w", from, err)
	}
	if len(b) > queue.MaxResultLen {
		return nil, usagef("the result is over %d bytes", queue.MaxResultLen)
	}
	return b, nil
}

// finishJobs finishes each job with result over the HTTP API (under lf's
// lease when it has one).
func (c *cli) finishJobs(ctx context.Context, lf leaseFlags, ids []uint64, result []byte, asJSON bool) error {
	r64 := base64.StdEncoding.EncodeToString(result)
	return c.eachJobHTTP(ctx, lf, ids, asJSON, jobCall{
		method: "POST", path: "/v1/jobs/%d/finish", body: httpapi.FinishRequest{ResultBase64: &r64},
		did: "finished", reserved: "is reserved by another worker (give its lease with --lease)",
	})
}

// jobCall is one HTTP call eachJobHTTP makes for every job: path takes the
// job's ID; did is what a success prints ("finished job 42") and what the
// count of misses says was not done; reserved ends the error of a job that
// another lease holds.
type jobCall struct {
	method, path  string
	body          any
	did, reserved string
}

// eachJobHTTP makes call for each job of ids in turn over the HTTP API, and
// reports each job done or not found (a line each, or one JSON object);
// it stops at the first other error.
func (c *cli) eachJobHTTP(ctx context.Context, lf leaseFlags, ids []uint64, asJSON bool, call jobCall) error {
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	hc := lf.client()
	done, notFound := []uint64{}, []uint64{}
	for _, id := range ids {
		_, _, err := hc.call(ctx, call.method, fmt.Sprintf(call.path, id), call.body)
		var miss missError
		switch err := heldError(err, id); {
		case err == nil:
			done = append(done, id)
			if !asJSON {
				fmt.Fprintf(c.stdout, "%s job %d\n", call.did, id)
			}
		case errors.As(err, &miss):
			notFound = append(notFound, id)
			fmt.Fprintf(c.stderr, "hourglass delete: job %d not found\n", id)
		default:
			var ae *apiError
			if errors.As(err, &ae) && ae.Code == httpapi.CodeReserved {
				return fmt.Errorf("job %d %s", id, call.reserved)
			}
			return err
		}
	}
	if asJSON {
		if err := writeJSON(c.stdout, object{{"deleted", done}, {"not_found", notFound}}); err != nil {
			return err
		}
	}
	if len(notFound) > 0 {
		return missf("%d of %d jobs not %s", len(notFound), len(ids), call.did)
	}
	return nil
}
