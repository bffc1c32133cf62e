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

	"github.com/hourglass-io/hourglass/server/httpapi"
)

var hashCommand = &command{
	name:    "hash",
	forms:   []string{"set HASH FIELD VALUE", "get HASH FIELD", "del HASH FIELD", "ttl HASH FIELD", "expire HASH FIELD", "persist HASH FIELD", "events GROUP", "ack GROUP ID"},
	args:    "set|get|del|ttl|expire|persist|events|ack [flags] ARGS",
	summary: "expiring hash fields over the HTTP API: set, get, expire, read expiry events",
	help: `Subcommands (flags may come before, between or after the arguments; -- ends
them, so that a FIELD or VALUE may start with -):

  set HASH FIELD VALUE [FIELD VALUE...]   store fields (--ttl, --at or --keep-ttl;
                                          none: no TTL, clearing any); VALUE - reads
                                          standard input; --base64: VALUEs are base64
  get HASH [FIELD...]                     the live fields named, or all of them
  del HASH FIELD...                       delete fields
  ttl HASH FIELD...                       time left per field (-1 no TTL, -2 missing)
  expire HASH FIELD...                    a new TTL: --ttl or --at (one of them),
                                          under --cond NX|XX|GT|LT
  persist HASH FIELD...                   remove the TTL of fields
  events GROUP                            read expiry events for --consumer, waiting
                                          up to --timeout (--create makes the group)
  ack GROUP ID...                         acknowledge events

A zero --ttl is the same as none, in set and expire as in every command
(set: no TTL; expire: refused, it needs --ttl or --at). To remove fields at
once, use del.

get prints "field: value" lines (the value as text when it is valid UTF-8,
else "base64:..."); --json prints the server's reply. A field named but
missing (or no field at all in the hash) is printed "(missing)" and makes
the exit status 3. events prints one
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
		fs.DurationVar(&f.ttl, "ttl", 0, "set, expire: the TTL (a `duration`, whole milliseconds; 0 is no --ttl)")
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
			return c.hash(ctx, f, args[0], args[1:])
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

// hashSub is one subcommand of hash: how many arguments it takes (max < 0:
// no limit), their synopsis for errors, and what it does.
type hashSub struct {
	min, max int
	synopsis string
	run      func(c *cli, ctx context.Context, h hashCall) error
}

// hashCall is what a hash subcommand runs with.
type hashCall struct {
	sub  string
	f    hashFlags
	hc   *httpClient
	args []string
	at   *time.Time // --at, parsed
}

var hashSubs = map[string]hashSub{
	"set":     {3, -1, "HASH FIELD VALUE [FIELD VALUE...]", (*cli).hashSet},
	"get":     {1, -1, "HASH [FIELD...]", (*cli).hashGet},
	"del":     {2, -1, "HASH FIELD...", (*cli).hashDel},
	"ttl":     {2, -1, "HASH FIELD...", (*cli).hashTTL},
	"expire":  {2, -1, "HASH FIELD...", (*cli).hashExpire},
	"persist": {2, -1, "HASH FIELD...", (*cli).hashExpire},
	"events":  {1, 1, "one GROUP", (*cli).hashEvents},
	"ack":     {2, -1, "GROUP ID...", (*cli).hashAck},
}

func (c *cli) hash(ctx context.Context, f hashFlags, sub string, args []string) error {
	s, ok := hashSubs[sub]
	if !ok {
		return usagef("hash: unknown subcommand %q: want set, get, del, ttl, expire, persist, events or ack", sub)
	}
	if len(args) < s.min || (s.max >= 0 && len(args) > s.max) {
		return usagef("hash %s takes %s, got %q", sub, s.synopsis, args)
	}
	at, err := f.deadline()
	if err != nil {
		return err
	}
	if f.ttl < 0 || f.ttl%time.Millisecond != 0 {
		return usagef("--ttl %v: want whole milliseconds, more than 0 (0 is the same as no --ttl)", f.ttl)
	}
	return s.run(c, ctx, hashCall{sub: sub, f: f, hc: f.http.client(), args: args, at: at})
}

// hashShow prints the reply of a call that succeeded.
func (c *cli) hashShow(h hashCall, body []byte, err error) error {
	if err != nil {
		return err
	}
	return c.show(h.f.http, body)
}

func (c *cli) hashSet(ctx context.Context, h hashCall) error {
	args, f := h.args, h.f
	if len(args)%2 != 1 {
		return usagef("hash set: a FIELD without its VALUE")
	}
	req := map[string]any{}
	var fields []map[string]any
	for i := 1; i < len(args); i += 2 {
		v := []byte(args[i+1])
		var err error
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
	if h.at != nil {
		req["at"] = h.at
	}
	if f.keepTTL {
		req["keep_ttl"] = true
	}
	_, body, err := h.hc.call(ctx, "POST", hashPath(args[0])+"/fields", req)
	return c.hashShow(h, body, err)
}

func (c *cli) hashGet(ctx context.Context, h hashCall) error {
	_, body, err := h.hc.call(ctx, "GET", hashPath(h.args[0])+"/fields"+fieldQuery(h.args[1:]), nil)
	if err != nil || h.f.http.json {
		if err := c.hashShow(h, body, err); err != nil {
			return err
		}
		return missingFields(body, h.args[0])
	}
	if err := c.printFields(body); err != nil {
		return err
	}
	return missingFields(body, h.args[0])
}

// missingFields is the miss (exit status 3) of a get that named fields
// the hash does not have, or of one that found no field at all.
func missingFields(body []byte, hash string) error {
	var r struct {
		Fields  []json.RawMessage `json:"fields"`
		Missing []string          `json:"missing"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return err
	}
	switch {
	case len(r.Missing) == 1:
		return missf("field %s not found", r.Missing[0])
	case len(r.Missing) > 1:
		return missf("%d fields not found: %s", len(r.Missing), strings.Join(r.Missing, ", "))
	case len(r.Fields) == 0:
		return missf("hash %s has no live field", hash)
	}
	return nil
}

func (c *cli) hashDel(ctx context.Context, h hashCall) error {
	_, body, err := h.hc.call(ctx, "DELETE", hashPath(h.args[0])+"/fields"+fieldQuery(h.args[1:]), nil)
	return c.hashShow(h, body, err)
}

func (c *cli) hashTTL(ctx context.Context, h hashCall) error {
	_, body, err := h.hc.call(ctx, "GET", hashPath(h.args[0])+"/ttl"+fieldQuery(h.args[1:]), nil)
	if err != nil || h.f.http.json {
		return c.hashShow(h, body, err)
	}
	var r httpapi.TTLReply
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
}

// hashExpire runs expire and persist.
func (c *cli) hashExpire(ctx context.Context, h hashCall) error {
	args, f, sub := h.args, h.f, h.sub
	req := map[string]any{"fields": args[1:]}
	if sub == "expire" {
		switch {
		case h.at != nil && f.ttl > 0:
			return usagef("hash expire: give --ttl or --at, not both")
		case h.at != nil:
			req["at"] = h.at
		case f.ttl > 0:
			req["ttl_ms"] = f.ttl.Milliseconds()
		default:
			return usagef("hash expire needs the new TTL: --ttl DURATION or --at TIME (to remove fields now, use hash del)")
		}
		if f.cond != "" {
			req["cond"] = strings.ToUpper(f.cond)
		}
	}
	_, body, err := h.hc.call(ctx, "POST", hashPath(args[0])+"/"+sub, req)
	if err != nil || f.http.json {
		return c.hashShow(h, body, err)
	}
	var r httpapi.CodesReply
	if err := json.Unmarshal(body, &r); err != nil {
		return err
	}
	words := map[int]string{-2: "missing", -1: "no TTL", 0: "condition not met", 1: "done", 2: "expired"}
	for _, x := range r.Fields {
		fmt.Fprintf(c.stdout, "%s: %s (%d)\n", x.Name, words[x.Code], x.Code)
	}
	return nil
}

func (c *cli) hashEvents(ctx context.Context, h hashCall) error {
	f := h.f
	group := url.PathEscape(h.args[0])
	if f.create {
		if _, _, err := h.hc.call(ctx, "POST", "/v1/hash-groups/"+group, nil); err != nil {
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
	_, body, err := h.hc.call(ctx, "POST", "/v1/hash-groups/"+group+"/read", req)
	if err != nil || f.http.json {
		return c.hashShow(h, body, err)
	}
	return c.printEvents(body)
}

func (c *cli) hashAck(ctx context.Context, h hashCall) error {
	_, body, err := h.hc.call(ctx, "POST", "/v1/hash-groups/"+url.PathEscape(h.args[0])+"/ack", map[string]any{"ids": h.args[1:]})
	return c.hashShow(h, body, err)
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
	var r httpapi.GetFieldsReply
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
	var r httpapi.EventsReply
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
