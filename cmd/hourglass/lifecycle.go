package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"net/http"
	"regexp"
	"time"

	"github.com/hourglass-io/hourglass/server/httpapi"
)

// The lifecycle of a job held across commands: reserve --keep takes a job
// over the HTTP API, whose reservation (a lease) outlives the command for
// the job's TTR; bury, release, touch and delete --lease act on it in later
// commands. The beanstalkd protocol cannot do this: a reservation there
// belongs to the connection, which ends with the command.

const envLease = "HOURGLASS_LEASE"

// leaseToken is the form of a lease the server issues.
var leaseToken = regexp.MustCompile(`^hgl_[0-9a-f]{32}$`)

// leaseFlags are the flags of the commands acting on a held job.
type leaseFlags struct {
	url   string
	token string
	lease string
	json  bool
}

func (f *leaseFlags) define(fs *flag.FlagSet, lease bool) {
	fs.StringVar(&f.url, "http", defaultHTTP, "`URL` of the server's HTTP API")
	fs.StringVar(&f.token, "auth-token", "", "bearer `token` of the server")
	if lease {
		fs.StringVar(&f.lease, "lease", "", "the `lease` reserve --keep printed")
	}
}

func (f *leaseFlags) client() *httpClient {
	hc := (&httpFlags{url: f.url, token: f.token}).client()
	if f.lease != "" {
		hc.header = map[string]string{httpapi.LeaseHeader: f.lease}
	}
	return hc
}

// needLease refuses a call without a lease, before the server does.
func (f *leaseFlags) needLease(cmd string) error {
	if f.lease == "" {
		return usagef("%s needs the job's lease: --lease hgl_… (or %s), as reserve --keep printed it", cmd, envLease)
	}
	if !leaseToken.MatchString(f.lease) {
		return usagef("--lease %q is not a lease: reserve --keep prints one, hgl_ and 32 hex digits", f.lease)
	}
	return nil
}

// heldJob reads the one ID argument of a lifecycle command and refuses a
// call without a lease (needLease).
func (f *leaseFlags) heldJob(cmd string, args []string) (uint64, error) {
	id, err := jobArg(cmd, args)
	if err != nil {
		return 0, err
	}
	return id, f.needLease(cmd)
}

// heldError words the API's error of a call on a held job.
func heldError(err error, id uint64) error {
	var ae *apiError
	if !errors.As(err, &ae) {
		return err
	}
	switch ae.Code {
	case httpapi.CodeNotFound:
		return missf("job %d not found", id)
	case httpapi.CodeNotReserved:
		return fmt.Errorf("job %d is not reserved under this lease: it was released, buried or deleted, its TTR ran out (touch renews it), or another lease holds it", id)
	case httpapi.CodeBadLease:
		return usagef("%s", ae.Message)
	}
	return err
}

// priorityFlag is an optional --priority: unset keeps the job's own.
type priorityFlag struct {
	set bool
	v   uint32
}

func (p *priorityFlag) String() string {
	if !p.set {
		return ""
	}
	return fmt.Sprint(p.v)
}

func (p *priorityFlag) Set(s string) error {
	var n uint64
	if _, err := fmt.Sscan(s, &n); err != nil || fmt.Sprint(n) != s || n > math.MaxUint32 {
		return fmt.Errorf("want a whole number from 0 (most urgent) to %d", uint64(math.MaxUint32))
	}
	p.set, p.v = true, uint32(n)
	return nil
}

// endFlags are the flags of bury and release, which end a reservation and
// may change the job's priority and last error.
type endFlags struct {
	pri    priorityFlag
	reason string
}

func (f *endFlags) define(fs *flag.FlagSet) {
	fs.Var(&f.pri, "priority", "new `priority`, 0 (most urgent) to 4294967295 (default: the job's own)")
	fs.StringVar(&f.reason, "reason", "", "why: becomes the job's last error (`text`, at most 1024 bytes kept)")
}

// priority is --priority, nil when not given.
func (f *endFlags) priority() *uint32 {
	if !f.pri.set {
		return nil
	}
	return &f.pri.v
}

// jobArg reads the one ID argument of a lifecycle command.
func jobArg(cmd string, args []string) (uint64, error) {
	if len(args) != 1 {
		return 0, usagef("%s takes one job ID, got %d arguments", cmd, len(args))
	}
	return parseID(args[0])
}

const lifecycleHelp = `The job must be reserved under the lease that 'hourglass reserve --keep'
printed, given with --lease or HOURGLASS_LEASE, within its TTR (touch
renews it). These commands use the HTTP API (--http, or HOURGLASS_HTTP).
`

var buryCommand = &command{
	name:    "bury",
	forms:   []string{"ID"},
	args:    "[flags] ID",
	summary: "bury a job held under a lease (reserve --keep): set it aside until kicked",
	help: lifecycleHelp + `
The job keeps its priority unless --priority is given. --reason becomes the
job's last error (peek --http shows it); without one the job keeps the last
error it had.

Examples:

  export HOURGLASS_LEASE=hgl_5f0c…   # from reserve --keep
  hourglass bury --reason 'no such customer' 42
`,
	flags: func(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
		var lf leaseFlags
		lf.define(fs, true)
		var ef endFlags
		ef.define(fs)
		return func(ctx context.Context, c *cli, args []string) error {
			id, err := lf.heldJob("bury", args)
			if err != nil {
				return err
			}
			req := httpapi.BuryRequest{Reason: ef.reason, Priority: ef.priority()}
			return c.held(ctx, lf, id, "bury", req, fmt.Sprintf("buried job %d", id))
		}
	},
}

var releaseCommand = &command{
	name:    "release",
	forms:   []string{"ID"},
	args:    "[flags] ID",
	summary: "release a job held under a lease (reserve --keep) back to ready, or delayed",
	help: lifecycleHelp + `
The job keeps its priority unless --priority is given, and is ready at once
unless --delay is given. --reason becomes the job's last error.

Examples:

  hourglass release --lease hgl_5f0c… 42
  hourglass release --delay 30s --reason 'smtp: 451 try later' 42
`,
	flags: func(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
		var lf leaseFlags
		lf.define(fs, true)
		var ef endFlags
		ef.define(fs)
		var delay durationFlag
		fs.Var(&delay, "delay", "keep the job delayed this long (a `duration` such as 30s or 5m)")
		return func(ctx context.Context, c *cli, args []string) error {
			id, err := lf.heldJob("release", args)
			if err != nil {
				return err
			}
			if delay.d < 0 {
				return usagef("--delay %v: want 0 or more", delay.d)
			}
			req := httpapi.ReleaseRequest{DelayMS: delay.d.Milliseconds(), Reason: ef.reason, Priority: ef.priority()}
			done := fmt.Sprintf("released job %d", id)
			if delay.d > 0 {
				done += fmt.Sprintf(" (ready in %v)", delay.d)
			}
			return c.held(ctx, lf, id, "release", req, done)
		}
	},
}

var touchCommand = &command{
	name:    "touch",
	forms:   []string{"ID"},
	args:    "[flags] ID",
	summary: "renew the reservation of a job held under a lease (reserve --keep) for another TTR",
	help: lifecycleHelp + `
Examples:

  hourglass touch --lease hgl_5f0c… 42
`,
	flags: func(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
		var lf leaseFlags
		lf.define(fs, true)
		return func(ctx context.Context, c *cli, args []string) error {
			id, err := lf.heldJob("touch", args)
			if err != nil {
				return err
			}
			return c.held(ctx, lf, id, "touch", nil, fmt.Sprintf("touched job %d", id))
		}
	},
}

// held calls action (bury, release, touch) on job id under lf's lease.
func (c *cli) held(ctx context.Context, lf leaseFlags, id uint64, action string, in any, done string) error {
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	if in == nil {
		in = struct{}{}
	}
	if _, _, err := lf.client().call(ctx, "POST", fmt.Sprintf("/v1/jobs/%d/%s", id, action), in); err != nil {
		return heldError(err, id)
	}
	_, err := fmt.Fprintln(c.stdout, done)
	return err
}

// deleteHeld deletes each job under lf's lease, over the HTTP API.
func (c *cli) deleteHeld(ctx context.Context, lf leaseFlags, ids []uint64, asJSON bool) error {
	return c.eachJobHTTP(ctx, lf, ids, asJSON, jobCall{
		method: "DELETE", path: "/v1/jobs/%d", did: "deleted", reserved: "is reserved under another lease",
	})
}

// reserveKept reserves a job over the HTTP API and prints it with its
// lease; the reservation outlives the command for the job's TTR. wait < 0
// waits for ever, in the server's longest polls.
func (c *cli) reserveKept(ctx context.Context, lf leaseFlags, tubes []string, wait time.Duration, asJSON bool) error {
	hc := lf.client()
	if len(tubes) == 0 {
		tubes = []string{"default"}
	}
	deadline := time.Now().Add(wait)
	for {
		left := time.Duration(math.MaxInt64)
		if wait >= 0 {
			left = max(time.Until(deadline), 0)
		}
		poll := min(left, 5*time.Minute)
		rctx, cancel := context.WithTimeout(ctx, poll+commandTimeout)
		status, body, header, err := hc.callHeader(rctx, "POST", "/v1/reserve", httpapi.ReserveRequest{Tubes: tubes, TimeoutMS: poll.Milliseconds(), Explain: true})
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return errors.New("interrupted")
			}
			return err
		}
		if status == http.StatusOK {
			return c.showKept(body, asJSON)
		}
		if wait >= 0 && time.Until(deadline) <= 0 {
			held, err := parseHeldBack(header.Get(httpapi.HeaderHeldBack))
			if err != nil {
				return err
			}
			return noJob(tubes, wait, held)
		}
	}
}

// showKept prints a reserve's reply: the server's JSON, or the job's ID and
// lease first, then the job.
func (c *cli) showKept(body []byte, asJSON bool) error {
	if asJSON {
		return c.show(httpFlags{json: true}, body)
	}
	var r struct {
		Lease string          `json:"lease"`
		Job   json.RawMessage `json:"job"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return fmt.Errorf("reserve: the server's reply: %w", err)
	}
	var job orderedObject
	if err := json.Unmarshal(r.Job, &job); err != nil {
		return fmt.Errorf("reserve: the server's reply: %w", err)
	}
	out := object{}
	var text bool
	for _, f := range job {
		text = text || f.key == "body"
	}
	for _, f := range job {
		switch {
		case f.key == "id":
			out = append(object{f, {"lease", r.Lease}}, out...)
		case f.key == "body_base64" && text:
		case f.key == "body":
			out = append(out, field{"body", readableBody([]byte(f.value.(string)))})
		default:
			out = append(out, f)
		}
	}
	return writeKV(c.stdout, out)
}
