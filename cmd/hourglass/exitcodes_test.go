//go:build unix

package main

import (
	"slices"
	"strings"
	"testing"
)

// exitCase is a command line and the exit status it must have.
type exitCase struct {
	status int
	args   []string
	// nowhere: run against addresses nothing listens on.
	nowhere bool
}

// exitCases are, for every command of the table, a command line of each
// kind of outcome the command can meet: a bad argument it finds itself
// (2), one only the server finds (2), something not there (3) and a
// failure (1, the server unreachable).
var exitCases = map[string][]exitCase{
	"serve": {
		{2, []string{"serve", "--max-job-size", "-1"}, false},
		{2, []string{"serve", "extra"}, false},
		{1, []string{"serve", "--store", "redis://127.0.0.1:1/0"}, false},
	},
	"put": {
		{2, []string{"put", "--tube", "bad name", "x"}, false},
		{2, []string{"put", "--debounce", "1s", "x"}, false},   // without --unique-key
		{2, []string{"put", strings.Repeat("x", 2000)}, false}, // beyond the server's --max-job-size
		{1, []string{"put", "x"}, true},
	},
	"reserve": {
		{2, []string{"reserve", "--timeout", "1.5s"}, false},
		{3, []string{"reserve", "--tube", "empty", "--timeout", "0"}, false},
		{1, []string{"reserve", "--timeout", "0"}, true},
	},
	"delete": {
		{2, []string{"delete", "abc"}, false},
		{3, []string{"delete", "999999"}, false},
		{1, []string{"delete", "1"}, true},
		{2, []string{"delete", "1", "--result", "x", "--result-file", "f"}, false},
		{2, []string{"delete", "1", "--result-file", "/nonexistent/result"}, false},
		{3, []string{"delete", "999999", "--result", "x"}, false},
		{1, []string{"delete", "1", "--result", "x"}, true},
	},
	"bury": {
		{2, []string{"bury", "abc", "--lease", "LEASE"}, false},
		{2, []string{"bury", "1", "--lease", "hgl_bogus"}, false},
		{3, []string{"bury", "999999", "--lease", "LEASE"}, false},
		{1, []string{"bury", "1", "--lease", "LEASE"}, true},
	},
	"release": {
		{2, []string{"release", "abc", "--lease", "LEASE"}, false},
		{2, []string{"release", "1", "--lease", "hgl_bogus"}, false},
		{3, []string{"release", "999999", "--lease", "LEASE"}, false},
		{1, []string{"release", "1", "--lease", "LEASE"}, true},
	},
	"touch": {
		{2, []string{"touch", "abc", "--lease", "LEASE"}, false},
		{2, []string{"touch", "1", "--lease", "hgl_bogus"}, false},
		{3, []string{"touch", "999999", "--lease", "LEASE"}, false},
		{1, []string{"touch", "1", "--lease", "LEASE"}, true},
	},
	"work": {
		// A worker waits out a server it cannot reach: it has no status 1.
		{2, []string{"work"}, false},
		{2, []string{"work", "--concurrency", "0", "--", "true"}, false},
	},
	"kick": {
		{2, []string{"kick", "-3"}, false},
		{3, []string{"kick", "--job", "999999"}, false},
		{1, []string{"kick", "1"}, true},
	},
	"cancel": {
		{2, []string{"cancel", "0"}, false},
		{3, []string{"cancel", "999999"}, false},
		{1, []string{"cancel", "1"}, true},
	},
	"job": {
		{2, []string{"job", "abc"}, false},
		{2, []string{"job", "--key", "k"}, false},
		{3, []string{"job", "999999"}, false},
		{3, []string{"job", "--tube", "t", "--key", "nope"}, false},
		{1, []string{"job", "1"}, true},
	},
	"peek": {
		{2, []string{"peek", "0"}, false},
		{3, []string{"peek", "999999"}, false},
		{1, []string{"peek", "1"}, true},
	},
	"stats": {
		{2, []string{"stats", "--job", "x"}, false},
		{3, []string{"stats", "--tube", "nosuch"}, false},
		{1, []string{"stats"}, true},
	},
	"tubes": {
		{2, []string{"tubes", "extra"}, false},
		{1, []string{"tubes"}, true},
	},
	"api": {
		{2, []string{"api", "GET", "nopath"}, false},
		{2, []string{"api", "POST", "/v1/tubes/emails/jobs", `{"body":"x","delay_ms":-5}`}, false},
		{3, []string{"api", "GET", "/v1/jobs/999999"}, false},
		{1, []string{"api", "GET", "/v1/stats"}, true},
	},
	"limit": {
		{2, []string{"limit", "allow"}, false},
		{2, []string{"limit", "allow", "k", "--limit", "5/1s", "-n", "-1"}, false},
		{3, []string{"limit", "allow", "k", "--name", "nosuch"}, false},
		{1, []string{"limit", "list"}, true},
	},
	"tube-limit": {
		{2, []string{"tube-limit", "frob"}, false},
		{2, []string{"tube-limit", "set", "t", "--cap", "-1"}, false},
		{2, []string{"tube-limit", "get", "bad name"}, false},
		{1, []string{"tube-limit", "list"}, true},
	},
	"hash": {
		{2, []string{"hash", "expire", "h", "f"}, false},
		{2, []string{"hash", "ack", "g", "notanid"}, false},
		{3, []string{"hash", "get", "nosuch", "f"}, false},
		{1, []string{"hash", "get", "h"}, true},
	},
	"lock": {
		{2, []string{"lock", "frob"}, false},
		{2, []string{"lock", "obtain", strings.Repeat("x", 5000)}, false},
		{2, []string{"lock", "refresh", "x", "tok", "--ttl", "1000000h"}, false},
		{1, []string{"lock", "obtain", "x"}, true},
	},
	"schedule": {
		{2, []string{"schedule", "set", "s", "--tube", "t", "--spec", "@hourly", "--misfire", "sometimes"}, false},
		{2, []string{"schedule", "set", "s", "--tube", "t", "--spec", "@every 2x"}, false},
		{3, []string{"schedule", "get", "nosuch"}, false},
		{1, []string{"schedule", "list"}, true},
	},
	"bench": {
		{2, []string{"bench", "--conns", "0"}, false},
		{1, []string{"bench", "--jobs", "1", "--lateness-jobs", "0"}, true},
	},
	"bench limits": {
		{2, []string{"bench", "limits", "--clients", "0"}, false},
		{3, []string{"bench", "limits", "--name", "nosuch", "--decisions", "1"}, false},
		{1, []string{"bench", "limits", "--decisions", "1"}, true},
	},
	"migrate": {
		{2, []string{"migrate", "extra"}, false},
		{1, []string{"migrate", "--store", "redis://127.0.0.1:1/0"}, false},
	},
}

// TestExitStatusOfEveryCommand runs the cases of exitCases against one
// server, and fails for a command of the table without cases.
func TestExitStatusOfEveryCommand(t *testing.T) {
	p := startServe(t, nil, "--store", "mem://", "--max-job-size", "1000")
	env := append(p.env, "HOURGLASS_HTTP=http://"+p.httpAddr)
	var away []string
	for k, v := range nowhere {
		away = append(away, k+"="+v)
	}
	// LEASE in a case is the lease of a job reserved here.
	ok(t, env, "put", "--tube", "held", "x")
	out := ok(t, env, "reserve", "--keep", "--tube", "held", "--timeout", "0", "--json")
	_, lease, _ := strings.Cut(out, `"lease":"`)
	lease, _, _ = strings.Cut(lease, `"`)
	for _, cmd := range everyCommand() {
		cases := exitCases[cmd.name]
		if len(cases) == 0 {
			t.Errorf("command %q has no exit status cases", cmd.name)
		}
		for _, c := range cases {
			e := env
			if c.nowhere {
				e = away
			}
			args := slices.Clone(c.args)
			for i, a := range args {
				if a == "LEASE" {
					args[i] = lease
				}
			}
			r := run(t, e, "", args...)
			if r.code != c.status {
				t.Errorf("hourglass %q: exit %d, want %d\n%s", c.args, r.code, c.status, r.stderr)
			}
		}
	}
}
