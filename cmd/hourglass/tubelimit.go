package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/url"
	"time"

	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/ratelimit"
	"github.com/hourglass-io/hourglass/server/httpapi"
)

var tubeLimitForms = []string{"set TUBE", "get TUBE", "clear TUBE", "list"}

var tubeLimitCommand = &command{
	name:    "tube-limit",
	forms:   tubeLimitForms,
	args:    "[flags] set|get|clear|list [TUBE]",
	summary: "set, get, list and clear a tube's rate and cap over the HTTP API",
	help: `Manages the limits of tubes through the server's HTTP API (--http, or
HOURGLASS_HTTP; default ` + defaultHTTP + `). The store enforces them at every
reserve, for every client of every server sharing it, beanstalkd clients
included: at most --rate reserves (a GCRA limit, EVENTS/PER[,burst=N]) and at
most --cap jobs reserved at once. A job counts toward the cap until it is
deleted, released, buried or its TTR ends.

  set TUBE     set --rate, --cap or both (what is not given is not limited;
               --cap 0 is no cap)
  get TUBE     the tube's limits
  clear TUBE   remove them
  list         every limited tube and its limits

Examples:

  hourglass tube-limit set emails --rate 100/1s,burst=10 --cap 5
  hourglass tube-limit set reports --cap 2
  hourglass tube-limit set emails --cap 50 --group-rate 1/1s,burst=5 --group-cap 2
  hourglass tube-limit list
  hourglass tube-limit clear emails
`,
	flags: func(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
		var f tubeLimitFlags
		f.http.define(fs)
		fs.StringVar(&f.rate, "rate", "", "set: the `rate`, EVENTS/PER[,burst=N] (100/1s,burst=10)")
		fs.IntVar(&f.cap, "cap", 0, "set: the most jobs of the tube reserved at once (a `count`)")
		fs.StringVar(&f.groupRate, "group-rate", "", "set: the `rate` of each group of the tube, EVENTS/PER[,burst=N]")
		fs.IntVar(&f.groupCap, "group-cap", 0, "set: the most jobs of each group of the tube reserved at once (a `count`)")
		return func(ctx context.Context, c *cli, args []string) error {
			f.set = givenOf(fs)
			return c.tubeLimit(ctx, &f, args)
		}
	},
}

type tubeLimitFlags struct {
	http            httpFlags
	rate, groupRate string
	cap, groupCap   int
	set             givenFlags
}

func (c *cli) tubeLimit(ctx context.Context, f *tubeLimitFlags, args []string) error {
	sub, args, err := subcommand("tube-limit", tubeLimitForms, args)
	if err != nil {
		return err
	}
	for _, fl := range f.set {
		if (fl == "rate" || fl == "cap" || fl == "group-rate" || fl == "group-cap") && sub != "set" {
			return usagef("tube-limit %s: --%s is a flag of set", sub, fl)
		}
	}
	hc := f.http.client()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if sub == "list" {
		_, body, err := hc.call(ctx, "GET", "/v1/tube-limits", nil)
		if err != nil {
			return err
		}
		if f.http.json {
			return c.show(f.http, body)
		}
		var list httpapi.TubeLimitsList
		if err := json.Unmarshal(body, &list); err != nil {
			return fmt.Errorf("reading the list: %w", err)
		}
		for _, tl := range list.Limits {
			if _, err := fmt.Fprintf(c.stdout, "%s\t%s\n", tl.Tube, httpapi.TubeLimitsSpec(limitsFromJSON(tl))); err != nil {
				return err
			}
		}
		return nil
	}
	tube := args[0]
	if err := queue.CheckTube(tube); err != nil {
		return usagef("tube-limit %s: %v", sub, err)
	}
	path := "/v1/tubes/" + url.PathEscape(tube) + "/limits"
	var body []byte
	switch sub {
	case "set":
		in := httpapi.TubeLimits{Cap: f.cap}
		if in.Rate, err = cliRate("--rate", f.rate); err != nil {
			return err
		}
		if f.groupRate != "" || f.set.has("group-cap") {
			in.Group = &httpapi.GroupLimits{Cap: f.groupCap}
			if in.Group.Rate, err = cliRate("--group-rate", f.groupRate); err != nil {
				return err
			}
		}
		if in.Rate == nil && in.Cap == 0 && in.Group == nil && f.set.has("cap") {
			return usagef("tube-limit set %s --cap 0: 0 is no cap, and no other limit is given; to remove the tube's limits, run tube-limit clear %s", tube, tube)
		}
		if !f.set.has("rate") && !f.set.has("cap") && in.Group == nil {
			return usagef("tube-limit set needs --rate, --cap, --group-rate or --group-cap (clear removes the limits)")
		}
		_, body, err = hc.call(ctx, "PUT", path, in)
	case "get":
		_, body, err = hc.call(ctx, "GET", path, nil)
	case "clear":
		_, body, err = hc.call(ctx, "DELETE", path, nil)
		if err == nil && !f.http.json {
			_, err = fmt.Fprintf(c.stdout, "cleared the limits of %s\n", tube)
			return err
		}
	}
	if err != nil {
		return err
	}
	if f.http.json {
		return c.show(f.http, body)
	}
	var tl httpapi.TubeLimits
	if err := json.Unmarshal(body, &tl); err != nil {
		return fmt.Errorf("reading the reply: %w", err)
	}
	spec := httpapi.TubeLimitsSpec(limitsFromJSON(tl))
	if spec == "" {
		spec = "none"
	}
	_, err = fmt.Fprintf(c.stdout, "%s\t%s\n", tube, spec)
	return err
}

// cliRate reads the GCRA rate of flag name, nil when v is "".
func cliRate(name, v string) (*httpapi.Limit, error) {
	if v == "" {
		return nil, nil
	}
	rs, err := httpapi.ParseLimits(v)
	if err != nil {
		return nil, usagef("%s: %v", name, err)
	}
	if len(rs) != 1 || rs[0].Algorithm != ratelimit.GCRA {
		return nil, usagef("%s %q: want one GCRA limit, EVENTS/PER[,burst=N]", name, v)
	}
	r := httpapi.LimitOf(rs[0])
	r.Quota, r.Algorithm = 0, ""
	return &r, nil
}

// limitsFromJSON reads the limits of a reply.
func limitsFromJSON(tl httpapi.TubeLimits) queue.Limits {
	l := queue.Limits{Cap: tl.Cap}
	if r := tl.Rate; r != nil && r.Per != nil {
		l.Rate = ratelimit.Limit{Events: r.Events, Per: time.Duration(*r.Per), Burst: r.Burst}
	}
	if g := tl.Group; g != nil {
		l.Group.Cap = g.Cap
		if r := g.Rate; r != nil && r.Per != nil {
			l.Group.Rate = ratelimit.Limit{Events: r.Events, Per: time.Duration(*r.Per), Burst: r.Burst}
		}
	}
	return l
}
