package main

import (
	"context"
	"errors"
	"flag"
	"time"

	"github.com/hourglass-io/hourglass/ratelimit"
	"github.com/hourglass-io/hourglass/server/httpapi"
)

// serveLimitsHelp is serve's help on named rate limits.
const serveLimitsHelp = `Rate limits are served under /v1/limits on every store. A request gives its
limits, or names one of the server's: --limit NAME=SPEC (repeatable) and
--limits-file (one NAME=SPEC a line, blank lines and # comments ignored)
define them; a name defined twice, or a SPEC that does not parse, stops
serve at start. Names are 1 to 64 letters, digits and - _ . :

` + httpapi.LimitSpecSyntax + ` Quote a SPEC with ';' in a shell.

  --limit sms=1/30m                        one per 30 minutes
  --limit api=100/1s,burst=10              100 a second, 10 at once
  --limit upload=funnel:capacity=100,drain=1m,quota=1
  --limit 'daily=1/1s;100/24h'             both at once
  --limit search=50/1m,algorithm=sliding-log
`

// namedLimits reads --limit and --limits-file.
func (o *serveOptions) namedLimits() (map[string][]ratelimit.Limit, error) {
	return namedSpecs("--limits-file", o.limitsFile, "--limit", o.limits, httpapi.ParseNamedLimit, "limit %s is defined twice")
}

var limitCommand = &command{
	name:    "limit",
	forms:   []string{"allow KEY", "wait KEY", "list"},
	args:    "allow|wait [flags] KEY | list",
	summary: "ask a server's rate limits over HTTP: allow or wait for events on a key",
	help: `allow asks whether -n events (default 1) on KEY pass now under the limits
of --limit (a SPEC as serve --limit takes it, see 'hourglass help serve') or
under the server's limit --name; wait waits for them to pass, up to
--max-wait (cut to the server's --max-wait). list prints the server's named
limits. The reply is printed as "key: value" lines, or as the server's JSON
with --json. When the events do not pass, the reply is printed too and the
exit status is 1.

Examples:

  hourglass limit allow +15550100 --name sms
  hourglass limit allow user:42 --limit 100/1s,burst=10 -n 5
  hourglass limit wait api:export --limit '1/1s;100/24h' --max-wait 10s
  hourglass limit list --json
`,
	flags: func(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
		var hf httpFlags
		hf.define(fs)
		spec := fs.String("limit", "", "the limits, a `SPEC`: 100/1s,burst=10 or 1/1s;100/24h")
		name := fs.String("name", "", "a limit `NAME` of the server's configuration")
		n := fs.Int("n", 1, "the cost: how many `events`")
		maxWait := fs.Duration("max-wait", 30*time.Second, "wait: the longest `duration` to wait")
		return func(ctx context.Context, c *cli, args []string) error {
			pos := args
			if len(pos) == 0 {
				return usagef("limit takes allow KEY, wait KEY or list")
			}
			if pos[0] == "list" {
				if len(pos) != 1 {
					return usagef("limit list takes no arguments, got %q", pos[1:])
				}
				return c.limitCall(ctx, hf, "GET", "/v1/limits", nil, 30*time.Second)
			}
			if pos[0] != "allow" && pos[0] != "wait" {
				return usagef("limit: unknown subcommand %q: want allow, wait or list", pos[0])
			}
			if len(pos) != 2 {
				return usagef("limit %s takes one KEY, got %q", pos[0], pos[1:])
			}
			body := map[string]any{"key": pos[1], "n": *n}
			switch {
			case (*spec == "") == (*name == ""):
				return usagef("limit %s: give --limit SPEC or --name NAME, one of the two", pos[0])
			case *name != "":
				body["name"] = *name
			default:
				ls, err := httpapi.ParseLimits(*spec)
				if err != nil {
					return usagef("--limit %q: %v", *spec, err)
				}
				js := make([]httpapi.Limit, len(ls))
				for i, l := range ls {
					js[i] = httpapi.LimitOf(l)
				}
				body["limits"] = js
			}
			if pos[0] == "allow" {
				return c.limitCall(ctx, hf, "POST", "/v1/limits/allow", body, 30*time.Second)
			}
			if *maxWait < 0 {
				return usagef("--max-wait %v: want 0 or more", *maxWait)
			}
			body["max_wait_ms"] = maxWait.Milliseconds()
			return c.limitCall(ctx, hf, "POST", "/v1/limits/wait", body, *maxWait+30*time.Second)
		}
	},
}

// limitCall sends one request and prints its reply, a 429's too.
func (c *cli) limitCall(ctx context.Context, hf httpFlags, method, path string, in any, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	_, body, err := hf.client().call(ctx, method, path, in)
	var ae *apiError
	if errors.As(err, &ae) && ae.Code == httpapi.CodeRateLimited {
		if serr := c.show(hf, body); serr != nil {
			return serr
		}
		return err
	}
	if err != nil {
		return err
	}
	return c.show(hf, body)
}
