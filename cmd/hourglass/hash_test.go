//go:build unix

package main

import (
	"encoding/base64"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/internal/testkit/redistest"
)

// TestHashCommand runs the hash subcommands against two servers sharing a
// Redis: both sweep it, and an event of a field set through one is read
// through the other.
func TestHashCommand(t *testing.T) {
	rs := redistest.Standalone(t)
	url := "redis://" + rs.Addr + "/0"
	a := startServe(t, nil, "--store", url)
	b := startServe(t, nil, "--store", url)
	for _, p := range []*serveProc{a, b} {
		p.log.waitFor(t, "ttlhash sweeper started", 10*time.Second)
	}
	ea := []string{"HOURGLASS_HTTP=http://" + a.httpAddr}
	eb := []string{"HOURGLASS_HTTP=http://" + b.httpAddr}

	if got := kv(t, ok(t, ea, "hash", "set", "--ttl", "1h", "sess", "a", "hello", "b", "world")); got["added"] != "2" {
		t.Errorf("set: %v", got)
	}
	every := make([]byte, 256)
	for i := range every {
		every[i] = byte(i)
	}
	enc := base64.StdEncoding.EncodeToString(every)
	ok(t, ea, "hash", "set", "--base64", "sess", "bin", enc)
	// A field missing: printed, and exit status 3 as the help says.
	if r := run(t, eb, "", "hash", "get", "sess", "a", "nope"); r.code != 3 || !strings.HasPrefix(r.stdout, "a: hello  (expires ") ||
		!strings.Contains(r.stdout, "\nnope: (missing)\n") || !strings.Contains(r.stderr, "field nope not found") {
		t.Errorf("get a nope: %v", r)
	}
	if out := ok(t, eb, "hash", "get", "sess", "bin"); out != "bin: base64:"+enc+"\n" {
		t.Errorf("get bin: %q", out)
	}
	if out := ok(t, eb, "hash", "get", "--json", "sess", "bin"); !strings.Contains(out, `"value_base64":"`+enc+`"`) {
		t.Errorf("get --json bin: %s", out)
	}
	if out := ok(t, ea, "hash", "ttl", "sess", "a", "bin", "nope"); !strings.HasPrefix(out, "a: 59m5") || !strings.Contains(out, "bin: no TTL\nnope: missing\n") {
		t.Errorf("ttl:\n%s", out)
	}
	if out := ok(t, ea, "hash", "expire", "--ttl", "2h", "--cond", "gt", "sess", "a", "bin", "nope"); out != "a: done (1)\nbin: condition not met (0)\nnope: missing (-2)\n" {
		t.Errorf("expire GT:\n%s", out)
	}
	if out := ok(t, ea, "hash", "persist", "sess", "a", "bin"); out != "a: done (1)\nbin: no TTL (-1)\n" {
		t.Errorf("persist:\n%s", out)
	}
	if got := kv(t, ok(t, ea, "hash", "del", "sess", "bin", "nope")); got["deleted"] != "1" {
		t.Errorf("del: %v", got)
	}

	// Events: the group first, then a field that expires.
	if out := ok(t, eb, "hash", "events", "--create", "--consumer", "w1", "audit"); out != "" {
		t.Errorf("events before any expiry: %q", out)
	}
	ok(t, ea, "hash", "set", "--ttl", "100ms", "sess", "soon", "bye")
	out := ok(t, eb, "hash", "events", "--consumer", "w1", "--timeout", "20s", "audit")
	fields := strings.Fields(out)
	if len(fields) < 4 || fields[1] != "sess" || fields[2] != "soon:" || fields[3] != "bye" {
		t.Fatalf("events: %q", out)
	}
	if got := kv(t, ok(t, ea, "hash", "ack", "audit", fields[0])); got["acked"] != "1" {
		t.Errorf("ack: %v", got)
	}

	// Usage errors.
	for _, args := range [][]string{{"hash"}, {"hash", "frob"}, {"hash", "set", "h", "f"}, {"hash", "expire", "--ttl", "1s", "--at", "2030-01-01T00:00:00Z", "h", "f"},
		{"hash", "expire", "late", "g"}, {"hash", "expire", "late", "g", "--ttl", "0s"}, {"hash", "set", "late", "g", "v", "--ttl", "-5s"}, {"hash", "set", "late", "g", "v", "--ttl", "1500us"}} {
		if r := run(t, ea, "", args...); r.code != 2 {
			t.Errorf("hourglass %q: exit %d, want 2 (%s)", args, r.code, r.stderr)
		}
	}
	// Flags after the arguments are flags: the TTL goes to the field named,
	// and no field is named after a flag.
	if got := kv(t, ok(t, ea, "hash", "set", "late", "g", "v", "--ttl", "1m")); got["added"] != "1" {
		t.Errorf("set with --ttl after the arguments: %v", got)
	}
	if out := ok(t, ea, "hash", "ttl", "late", "g"); !strings.HasPrefix(out, "g: 5") {
		t.Errorf("ttl of g after set ... --ttl 1m: %q", out)
	}
	if out := ok(t, ea, "hash", "get", "late", "--json"); !strings.Contains(out, `"name":"g"`) || strings.Contains(out, "--") {
		t.Errorf("get late --json: %s", out)
	}
	if out := ok(t, ea, "hash", "expire", "late", "g", "--ttl", "2m"); out != "g: done (1)\n" {
		t.Errorf("expire late g --ttl 2m: %q", out)
	}
	// After --, a word that looks like a flag is a field.
	ok(t, ea, "hash", "set", "late", "--", "--ttl", "v")
	if out := ok(t, ea, "hash", "get", "late", "--", "--ttl"); out != "--ttl: v\n" {
		t.Errorf("get late -- --ttl: %q", out)
	}

	// An expire without a TTL, or with a zero one, is refused and changes
	// nothing: g keeps its TTL.
	for _, args := range [][]string{{"hash", "expire", "late", "g"}, {"hash", "expire", "late", "g", "--ttl", "0s"}} {
		if r := run(t, ea, "", args...); r.code != 2 || !strings.Contains(r.stderr, "--ttl") {
			t.Errorf("hourglass %q: %v", args, r)
		}
	}
	if out := ok(t, ea, "hash", "ttl", "late", "g"); !strings.HasPrefix(out, "g: 1m5") {
		t.Errorf("ttl of g after refused expires: %q", out)
	}
	// A zero TTL is no TTL.
	ok(t, ea, "hash", "set", "late", "g", "v", "--ttl", "0s")
	if out := ok(t, ea, "hash", "ttl", "late", "g"); out != "g: no TTL\n" {
		t.Errorf("ttl of g after set --ttl 0s: %q", out)
	}

	// An error reply: exit 3 for not_found, with the code.
	if r := run(t, ea, "", "hash", "events", "--consumer", "w", "nosuchgroup"); r.code != 3 || !strings.Contains(r.stderr, "(not_found)") {
		t.Errorf("events of a missing group: %v", r)
	}

	a.signal(t, syscall.SIGTERM)
	if code := a.wait(t, 30*time.Second); code != 0 {
		t.Errorf("serve exited %d", code)
	}
	a.log.waitFor(t, "ttlhash sweeper stopped", 0)
}
