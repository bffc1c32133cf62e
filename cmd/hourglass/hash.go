package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"time"
	"unicode/utf8"
)

var hashCommand = &command{
	name: "hash",
	// ownArgs: a subcommand word comes first and parses its own flags.
	ownArgs: true,
	args:    "set|get|del|ttl|expire|persist|events|ack [flags] ARGS",
	summary: "expiring hash fields over the HTTP API: set, get, expire, read expiry events",
	help: `Subcommands (flags may come before or after the subcommand):

  set HASH FIELD VALUE [FIELD VALUE...]   store fields (--ttl, --at or --keep-ttl;
                                          none: no TTL, clearing any); VALUE - reads
                                          standard input; --base64: VALUEs are base64
  get HASH [FIELD...]                     the live fields named, or all of them
  del HASH FIELD...                       delete fields
  ttl HASH FIELD...                       time left per field (-1 no TTL, -2 missing)
  expire HASH FIELD...                    --ttl or --at, under --cond NX|XX|GT|LT
  persist HASH FIELD...                   remove the TTL of fields
  events GROUP                            read expiry events for --consumer, waiting
                                          up to --timeout (--create makes the group)
  ack GROUP ID...                         acknowledge events

get prints "field: value" lines (the value as text when it is valid UTF-8,
else "base64:..."); --json prints the server's reply. events prints one
line per event: its ID, hash, field, value and how late it expired.

Examples:

  hourglass hash set --ttl 30m sessions s1 alice
  hourglass hash get sessions s1
  hourglass hash expire --ttl 1h --cond GT sessions s1
  hourglass hash events --create --consumer worker-1 --timeout 30s audit
  hourglass hash ack audit 3:1718000000000-0
`,
	flags: func(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
		var f hashFlags
		f.http.define(fs)
		fs.DurationVar(&f.ttl, "ttl", 0, "set, expire: the TTL (a `duration`, whole milliseconds; expire: 0 expires at once)")
		fs.StringVar(&f.at, "at", "", "set, expire: the deadline, RFC 3339 `time`")
		fs.BoolVar(&f.keepTTL, "keep-ttl", false, "set: keep the deadline of fields that have one")
		fs.BoolVar(&f.b64, "base64", false, "set: the VALUEs are base64")
		fs.StringVar(&f.cond, "cond", "", "expire: only when `NX` (no TTL), XX (a TTL), GT (later) or LT (earlier)")
		fs.StringVar(&f.consumer, "consumer", "", "events: the consumer `name` (default the host name)")
		fs.IntVar(&f.max, "max", 10, "events: the most `events` to read")
		fs.DurationVar(&f.timeout, "timeout", 0, "events: how long to wait for a first event (a `duration`)")
		fs.BoolVar(&f.create, "create", false, "events: create the group first")
		return func(ctx context.Context, c *cli, args []string) error {
			if len(args) == 0 {
				return usagef("hash takes a subcommand: set, get, del, ttl, expire, persist, events or ack")
			}
			sub := args[0]
			// Flags after the subcommand.
			if err := fs.Parse(args[1:]); err != nil {
				return usagef("%v", err)
			}
			return c.hash(ctx, f, sub, fs.Args())
		}
	},
}

type hashFlags struct {
	http     httpFlags
	ttl      time.Duration
	at       string
	keepTTL  bool
	b64      bool
	cond     string
	consumer string
	max      int
	timeout  time.Duration
	create   bool
}

func hashPath(hash string) string { return "/v1/hashes/" + url.PathEscape(hash) }

func fieldQuery(fields []string) string {
	if len(fields) == 0 {
		return ""
	}
	return "?" + url.Values{"field": fields}.Encode()
}

// deadline parses --at.
func (f hashFlags) deadline() (*time.Time, error) {
	if f.at == "" {
		return nil, nil
	}
	t, err := time.Parse(time.RFC3339Nano, f.at)
	if err != nil {
		return nil, usagef("--at %q: want an RFC 3339 time such as 2030-01-02T15:04:05Z", f.at)
	}
	return &t, nil
}

func (c *cli) hash(ctx context.Context, f hashFlags, sub string, args []string) error {
	hc := f.http.client()
	need := func(n int, synopsis string) error {
		if len(args) < n {
			return usagef("hash %s takes %s, got %q", sub, synopsis, args)
		}
		return nil
	}
	at, err := f.deadline()
	if err != nil {
		return err
	}
	var body []byte
	switch sub {
	case "set":
		if err := need(3, "HASH FIELD VALUE [FIELD VALUE...]"); err != nil {
			return err
		}
		if len(args)%2 != 1 {
			return usagef("hash set: a FIELD without its VALUE")
		}
		if f.ttl < 0 {
			return usagef("--ttl %v: want more than 0", f.ttl)
		}
		req := map[string]any{}
		var fields []map[string]any
		for i := 1; i < len(args); i += 2 {
			v := []byte(args[i+1])
			if args[i+1] == "-" {
				if v, err = io.ReadAll(io.LimitReader(c.stdin, 64<<20+1)); err != nil {
					return fmt.Errorf("reading standard input: %w", err)
				}
			} else if f.b64 {
				if v, err = base64.StdEncoding.DecodeString(args[i+1]); err != nil {
					return usagef("hash set: the value of %q is not base64: %v", args[i], err)
				}
			}
			fields = append(fields, map[string]any{"name": args[i], "value_base64": base64.StdEncoding.EncodeToString(v)})
		}
		req["fields"] = fields
		if f.ttl > 0 {
			req["ttl_ms"] = f.ttl.Milliseconds()
		}
		if at != nil {
			req["at"] = at
		}
		if f.keepTTL {
			req["keep_ttl"] = true
		}
		_, body, err = hc.call(ctx, "POST", hashPath(args[0])+"/fields", req)
	case "get":
		if err := need(1, "HASH [FIELD...]"); err != nil {
			return err
		}
		if _, body, err = hc.call(ctx, "GET", hashPath(args[0])+"/fields"+fieldQuery(args[1:]), nil); err != nil {
			return err
		}
		if f.http.json {
			return c.show(f.http, body)
		}
		return c.printFields(body)
	case "del":
		if err := need(2, "HASH FIELD..."); err != nil {
			return err
		}
		_, body, err = hc.call(ctx, "DELETE", hashPath(args[0])+"/fields"+fieldQuery(args[1:]), nil)
	case "ttl":
		if err := need(2, "HASH FIELD..."); err != nil {
			return err
		}
		if _, body, err = hc.call(ctx, "GET", hashPath(args[0])+"/ttl"+fieldQuery(args[1:]), nil); err != nil {
			return err
		}
		if f.http.json {
			return c.show(f.http, body)
		}
		var r struct {
			Fields []struct {
				Name  string `json:"name"`
				TTLMS int64  `json:"ttl_ms"`
			} `json:"fields"`
		}
		if err := json.Unmarshal(body, &r); err != nil {
			return err
		}
		for _, x := range r.Fields {
			v := (time.Duration(x.TTLMS) * time.Millisecond).String()
			switch x.TTLMS {
			case -1:
				v = "no TTL"
			case -2:
				v = "missing"
			}
			fmt.Fprintf(c.stdout, "%s: %s\n", x.Name, v)
		}
		return nil
	case "expire", "persist":
		if err := need(2, "HASH FIELD..."); err != nil {
			return err
		}
		req := map[string]any{"fields": args[1:]}
		if sub == "expire" {
			fs := 0
			if at != nil {
				req["at"] = at
				fs++
			}
			if f.ttl != 0 || at == nil {
				if f.ttl < 0 {
					return usagef("--ttl %v: want 0 (expire now) or more", f.ttl)
				}
				req["ttl_ms"] = f.ttl.Milliseconds()
				fs++
			}
			if fs != 1 {
				return usagef("hash expire: give --ttl or --at, not both")
			}
			if f.cond != "" {
				req["cond"] = strings.ToUpper(f.cond)
			}
		}
		if _, body, err = hc.call(ctx, "POST", hashPath(args[0])+"/"+sub, req); err != nil {
			return err
		}
		if f.http.json {
			return c.show(f.http, body)
		}
		var r struct {
			Fields []struct {
				Name string `json:"name"`
				Code int    `json:"code"`
			} `json:"fields"`
		}
		if err := json.Unmarshal(body, &r); err != nil {
			return err
		}
		words := map[int]string{-2: "missing", -1: "no TTL", 0: "condition not met", 1: "done", 2: "expired"}
		for _, x := range r.Fields {
			fmt.Fprintf(c.stdout, "%s: %s (%d)\n", x.Name, words[x.Code], x.Code)
		}
		return nil
	case "events":
		if err := need(1, "GROUP"); err != nil {
			return err
		}
		if len(args) > 1 {
			return usagef("hash events takes one GROUP, got %q", args)
		}
		group := url.PathEscape(args[0])
		if f.create {
			if _, _, err := hc.call(ctx, "POST", "/v1/hash-groups/"+group, nil); err != nil {
				return err
			}
		}
		consumer := f.consumer
		if consumer == "" {
			consumer = defaultConsumer()
		}
		if f.timeout < 0 {
			return usagef("--timeout %v: want 0 or more", f.timeout)
		}
		ctx, cancel := context.WithTimeout(ctx, f.timeout+time.Minute)
		defer cancel()
		req := map[string]any{"consumer": consumer, "max": f.max, "timeout_ms": f.timeout.Milliseconds()}
		if _, body, err = hc.call(ctx, "POST", "/v1/hash-groups/"+group+"/read", req); err != nil {
			return err
		}
		if f.http.json {
			return c.show(f.http, body)
		}
		return c.printEvents(body)
	case "ack":
		if err := need(2, "GROUP ID..."); err != nil {
			return err
		}
		_, body, err = hc.call(ctx, "POST", "/v1/hash-groups/"+url.PathEscape(args[0])+"/ack", map[string]any{"ids": args[1:]})
	default:
		return usagef("hash: unknown subcommand %q: want set, get, del, ttl, expire, persist, events or ack", sub)
	}
	if err != nil {
		return err
	}
	return c.show(f.http, body)
}

// showValue writes a value for people: text when it is valid UTF-8, else
// base64.
func showValue(b64 string, text *string) string {
	if text != nil && utf8.ValidString(*text) {
		return *text
	}
	return "base64:" + b64
}

func (c *cli) printFields(body []byte) error {
	var r struct {
		Fields []struct {
			Name        string     `json:"name"`
			ValueBase64 string     `json:"value_base64"`
			Value       *string    `json:"value"`
			Deadline    *time.Time `json:"deadline"`
		} `json:"fields"`
		Missing []string `json:"missing"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return err
	}
	for _, x := range r.Fields {
		line := x.Name + ": " + showValue(x.ValueBase64, x.Value)
		if x.Deadline != nil {
			line += "  (expires " + x.Deadline.Format(time.RFC3339Nano) + ")"
		}
		fmt.Fprintln(c.stdout, line)
	}
	for _, m := range r.Missing {
		fmt.Fprintf(c.stdout, "%s: (missing)\n", m)
	}
	return nil
}

func (c *cli) printEvents(body []byte) error {
	var r struct {
		Events []struct {
			ID          string    `json:"id"`
			Hash        string    `json:"hash"`
			Field       string    `json:"field"`
			ValueBase64 string    `json:"value_base64"`
			Value       *string   `json:"value"`
			Deadline    time.Time `json:"deadline"`
			ExpiredAt   time.Time `json:"expired_at"`
			Redelivered bool      `json:"redelivered"`
		} `json:"events"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return err
	}
	for _, e := range r.Events {
		again := ""
		if e.Redelivered {
			again = " (redelivered)"
		}
		fmt.Fprintf(c.stdout, "%s %s %s: %s  expired %v after its deadline%s\n", e.ID, e.Hash, e.Field,
			showValue(e.ValueBase64, e.Value), e.ExpiredAt.Sub(e.Deadline), again)
	}
	return nil
}

// defaultConsumer names the consumer of "hash events" without --consumer:
// the host name.
func defaultConsumer() string {
	if h, err := os.Hostname(); err == nil && h != "" {
		return h
	}
	return "hourglass"
}
