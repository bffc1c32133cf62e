package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/url"
	"time"
)

var lockForms = []string{"obtain NAME", "release NAME TOKEN", "refresh NAME TOKEN", "ttl NAME TOKEN"}

var lockCommand = &command{
	name:    "lock",
	forms:   lockForms,
	args:    "[flags] obtain NAME | release NAME TOKEN | refresh NAME TOKEN | ttl NAME TOKEN",
	summary: "obtain, release, refresh a lock or semaphore slot over the HTTP API",
	help: `Obtains a lock (or, with --limit, a slot of a semaphore) through the
server's HTTP API (--http, or HOURGLASS_HTTP; default ` + defaultHTTP + `), and
acts on a grant with the owner TOKEN that obtain printed. Flags may come
before or after the subcommand; give -- before a TOKEN that starts with -.

  obtain NAME         take the lock: at once, or waiting up to --wait (a long
                      poll, cut to the server's --max-wait); prints the owner
                      token, the fencing token and the lease. Exit status 1
                      (not_obtained) when it is still held when the wait ends.
  release NAME TOKEN  give the lock up; only its owner TOKEN can (not_held).
  refresh NAME TOKEN  set the lease to end --ttl from now.
  ttl NAME TOKEN      print how long the lease has left.

Nothing renews a lease obtained over HTTP: refresh it before it runs out, or
the lock goes to the next caller. Pass the fencing token to the resource the
lock protects, which refuses writes with a smaller one than it has seen.

Examples:

  hourglass lock obtain --ttl 1m --wait 30s nightly-report
  TOKEN=$(hourglass lock obtain --token-only nightly-report)
  hourglass lock refresh --ttl 1m nightly-report "$TOKEN"
  hourglass lock ttl nightly-report "$TOKEN"
  hourglass lock release nightly-report "$TOKEN"
  hourglass lock obtain --limit 4 --wait 10s --fair encoders
`,
	flags: func(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
		var (
			hf        httpFlags
			ttl, wait time.Duration
			fair      bool
			limit     int
			tokenOnly bool
		)
		hf.define(fs)
		fs.DurationVar(&ttl, "ttl", 0, "the lease (a `duration`; obtain: default 15s; refresh: required; 0 is no --ttl)")
		fs.DurationVar(&wait, "wait", 0, "obtain: how long to wait while the lock is held (0: try once)")
		fs.BoolVar(&fair, "fair", false, "obtain: wait in line, granted in arrival order")
		fs.IntVar(&limit, "limit", 0, "obtain: a semaphore of `n` slots (default 1, a lock)")
		fs.BoolVar(&tokenOnly, "token-only", false, "obtain: print only the owner token")
		return func(ctx context.Context, c *cli, args []string) error {
			sub, args, err := subcommand("lock", lockForms, args)
			if err != nil {
				return err
			}
			if args[0] == "" {
				return usagef("lock %s: NAME is empty", sub)
			}
			if ttl < 0 || wait < 0 || limit < 0 {
				return usagef("lock: --ttl, --wait and --limit must not be negative")
			}
			if ttl != 0 && ttl < time.Millisecond {
				return usagef("lock: --ttl %v is below a millisecond", ttl)
			}
			path := "/v1/locks/" + url.PathEscape(args[0]) + "/" + sub
			hc := hf.client()
			// A long poll may wait as long as the server allows.
			ctx, cancel := context.WithTimeout(ctx, wait+time.Minute)
			defer cancel()
			var (
				body []byte
				in   any
			)
			switch sub {
			case "obtain":
				in = map[string]any{"ttl_ms": ttl.Milliseconds(), "wait_ms": wait.Milliseconds(), "fair": fair, "limit": limit}
				_, body, err = hc.call(ctx, "POST", path, in)
				if err == nil && tokenOnly && !hf.json {
					var g struct {
						Token string `json:"token"`
					}
					if err := json.Unmarshal(body, &g); err != nil {
						return fmt.Errorf("reading the grant: %w", err)
					}
					_, err = fmt.Fprintln(c.stdout, g.Token)
					return err
				}
			case "refresh":
				if ttl == 0 {
					return usagef("lock refresh needs --ttl: the new lease")
				}
				_, body, err = hc.callWith(ctx, "POST", path, map[string]any{"ttl_ms": ttl.Milliseconds()}, args[1])
			case "release":
				_, body, err = hc.callWith(ctx, "POST", path, nil, args[1])
			case "ttl":
				_, body, err = hc.callWith(ctx, "GET", path, nil, args[1])
			}
			if err != nil {
				return err
			}
			if len(body) == 0 && !hf.json {
				_, err := fmt.Fprintf(c.stdout, "%s %s\n", map[string]string{"release": "released", "refresh": "refreshed"}[sub], args[0])
				return err
			}
			return c.show(hf, body)
		}
	},
}

// callWith is call with the owner token of a lock in its header.
func (c *httpClient) callWith(ctx context.Context, method, path string, in any, token string) (int, []byte, error) {
	c2 := *c
	c2.header = map[string]string{"Hourglass-Lock-Token": token}
	return c2.call(ctx, method, path, in)
}
