//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestLimitCommands(t *testing.T) {
	file := filepath.Join(t.TempDir(), "limits")
	if err := os.WriteFile(file, []byte("# per user\napi=2/1s,burst=2\n\nupload=funnel:capacity=100,drain=1m,quota=10\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startServe(t, nil, "--store", "mem://", "--limit", "sms=1/30m", "--limits-file", file)
	if line := p.log.waitFor(t, `msg="hourglass serving"`, time.Second); logValue(line, "limits") != "3" {
		t.Errorf("start line %q: want limits=3", line)
	}
	env := []string{"HOURGLASS_HTTP=http://" + p.httpAddr}

	// A named limit: the first passes, the second is refused, printed,
	// with exit status 1.
	if got := kv(t, ok(t, env, "limit", "allow", "+15550100", "--name", "sms")); got["allowed"] != "true" || got["remaining"] != "0" {
		t.Errorf("limit allow: %v", got)
	}
	r := run(t, env, "", "limit", "allow", "+15550100", "--name", "sms")
	if r.code != 1 || !strings.Contains(r.stderr, "(rate_limited)") || kv(t, r.stdout)["allowed"] != "false" {
		t.Errorf("limit allow, limited: %v", r)
	}
	if ms, _ := strconv.Atoi(kv(t, r.stdout)["retry_after_ms"]); ms < 29*60*1000 {
		t.Errorf("limit allow, limited: retry_after_ms %d, want about 30 minutes", ms)
	}
	// Limits given on the command line, a cost, JSON; flags before KEY too.
	m := decode(t, ok(t, env, "limit", "allow", "--json", "user:7", "--limit", "5/1h", "-n", "3"))
	if m["allowed"] != true || m["remaining"] != 2.0 {
		t.Errorf("limit allow --json: %v", m)
	}
	m = decode(t, ok(t, env, "limit", "allow", "u", "--name", "upload", "--json", "-n", "10"))
	if m["allowed"] != true || m["remaining"] != 0.0 {
		t.Errorf("limit allow of a funnel: %v", m)
	}
	// wait: the second of one per 2 s waits for its slot (a loaded
	// machine may take a few hundred ms to start the second command).
	ok(t, env, "limit", "wait", "w", "--limit", "1/2s")
	if got := kv(t, ok(t, env, "limit", "wait", "w", "--limit", "1/2s", "--max-wait", "5s")); got["allowed"] != "true" || got["waited_ms"] == "0" {
		t.Errorf("limit wait: %v", got)
	}
	if r := run(t, env, "", "limit", "wait", "+15550100", "--name", "sms", "--max-wait", "0s"); r.code != 1 || !strings.Contains(r.stderr, "(rate_limited)") {
		t.Errorf("limit wait beyond the slot: %v", r)
	}
	if out := ok(t, env, "limit", "list"); !strings.Contains(out, `"name":"sms","spec":"1/30m"`) {
		t.Errorf("limit list: %q", out)
	}

	// Bad input.
	expect(t, env, 2, []string{"limit", "allow", "k"}, "give --limit SPEC or --name NAME")
	expect(t, env, 2, []string{"limit", "allow", "k", "--limit", "5/fortnight"}, `--limit "5/fortnight"`, "period")
	expect(t, env, 2, []string{"limit", "peek", "k"}, "unknown subcommand")
	if r := run(t, env, "", "limit", "allow", "k", "--name", "nope"); r.code != 3 || !strings.Contains(r.stderr, "(unknown_limit)") {
		t.Errorf("an unknown name: %v", r)
	}
}

// serve checks its named limits at start and says what is wrong.
func TestServeBadLimit(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--limit", "sms"}, `--limit "sms": invalid limit: "sms": want NAME=SPEC`},
		{[]string{"--limit", "sms=1/30m", "--limit", "sms=2/1h"}, "limit sms is defined twice"},
		{[]string{"--limit", "x=1/1s,burst=-1"}, `burst=-1: want 1 or more`},
	} {
		r := run(t, nil, "", append([]string{"serve", "--store", "mem://", "--beanstalk-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0"}, tc.args...)...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("serve %q: %v, want exit 2 saying %q", tc.args, r, tc.want)
		}
	}
}
