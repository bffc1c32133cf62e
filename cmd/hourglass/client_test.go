//go:build unix

package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/internal/beanstalkc"
)

// decode parses one JSON object printed by a command.
func decode(t *testing.T, out string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("output is not one JSON object: %v\n%s", err, out)
	}
	return m
}

// kv parses key: value output.
func kv(t *testing.T, out string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for line := range strings.SplitSeq(strings.TrimSuffix(out, "\n"), "\n") {
		if strings.HasPrefix(line, "  ") {
			continue // a line of a multi-line body
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			t.Fatalf("line %q is not key: value\n%s", line, out)
		}
		m[k] = strings.TrimSpace(v)
	}
	return m
}

func TestClientCommands(t *testing.T) {
	p := startServe(t, nil, "--store", "mem://")
	env := p.env

	// put: from an argument, from standard input, with --json.
	if got := kv(t, ok(t, env, "put", "hello")); got["id"] != "1" || got["tube"] != "default" {
		t.Errorf("put: %v", got)
	}
	r := run(t, env, "line one\nline two\n", "put", "--tube", "emails", "--pri", "5", "-")
	if r.code != 0 || kv(t, r.stdout)["id"] != "2" {
		t.Fatalf("put -: %v", r)
	}
	// Flags before and after the body; --priority is the name, --pri an alias.
	m := decode(t, ok(t, env, "put", "--json", "--tube", "emails", "later", "--delay", "1h", "--priority", "7"))
	if m["id"] != 3.0 || m["tube"] != "emails" {
		t.Errorf("put --json: %v", m)
	}

	// tubes: a table with the counts.
	out := ok(t, env, "tubes")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "TUBE") {
		t.Fatalf("tubes:\n%s", out)
	}
	if f := strings.Fields(lines[2]); f[0] != "emails" || f[1] != "1" || f[3] != "1" || f[6] != "2" {
		t.Errorf("tubes row %q: want emails, 1 ready, 1 delayed, 2 in total", lines[2])
	}
	tubes := decode(t, ok(t, env, "tubes", "--json"))["tubes"].([]any)
	if len(tubes) != 2 || tubes[1].(map[string]any)["current-jobs-delayed"] != 1.0 {
		t.Errorf("tubes --json: %v", tubes)
	}

	// stats: text, JSON with numbers and strings, a tube, a job.
	if got := kv(t, ok(t, env, "stats"))["current-jobs-ready"]; got != "2" {
		t.Errorf("stats current-jobs-ready = %q", got)
	}
	m = decode(t, ok(t, env, "stats", "--json"))
	if m["current-jobs-delayed"] != 1.0 || m["version"] != "1.12" || m["draining"] != false {
		t.Errorf("stats --json: ready %v, version %v, draining %v", m["current-jobs-delayed"], m["version"], m["draining"])
	}
	if _, isString := m["id"].(string); !isString {
		t.Errorf("stats --json id = %#v, want a string", m["id"])
	}
	if got := kv(t, ok(t, env, "stats", "--tube", "emails")); got["name"] != "emails" || got["total-jobs"] != "2" {
		t.Errorf("stats --tube: %v", got)
	}
	if got := decode(t, ok(t, env, "stats", "--job", "3", "--json")); got["state"] != "delayed" || got["tube"] != "emails" {
		t.Errorf("stats --job: %v", got)
	}

	// peek: by ID, by state; text, raw and JSON.
	got := kv(t, ok(t, env, "peek", "1"))
	if got["body"] != "hello" || got["state"] != "ready" || got["bytes"] != "5" {
		t.Errorf("peek 1: %v", got)
	}
	if out := ok(t, env, "peek", "--ready", "--tube", "emails", "--raw"); out != "line one\nline two\n" {
		t.Errorf("peek --ready --raw = %q", out)
	}
	m = decode(t, ok(t, env, "peek", "--delayed", "--tube", "emails", "--json"))
	if m["id"] != 3.0 || m["body"] != "later" || m["body_base64"] != base64.StdEncoding.EncodeToString([]byte("later")) {
		t.Errorf("peek --delayed --json: %v", m)
	}
	expect(t, env, 3, []string{"peek", "42"}, "hourglass peek: job 42 not found")
	expect(t, env, 3, []string{"peek", "--buried"}, "no buried job in tube default")
	expect(t, env, 2, []string{"peek", "--ready", "--buried"}, "one of")

	// reserve --delete prints the job, then deletes it.
	got = kv(t, ok(t, env, "reserve", "--delete", "--timeout", "5s"))
	if got["id"] != "1" || got["body"] != "hello" || got["state"] != "reserved" {
		t.Errorf("reserve --delete: %v", got)
	}
	expect(t, env, 3, []string{"peek", "1"}, "job 1 not found")
	// Without --delete the job is back once the command ends.
	m = decode(t, ok(t, env, "reserve", "--json", "--tube", "emails", "--tube", "other"))
	if m["id"] != 2.0 || m["body"] != "line one\nline two\n" {
		t.Errorf("reserve --json: %v", m)
	}
	// The server returns the job when it sees the connection close, which
	// may come after the command has exited.
	deadline := time.Now().Add(10 * time.Second)
	for got := kv(t, ok(t, env, "stats", "--job", "2")); got["state"] != "ready" || got["reserves"] != "1"; {
		if time.Now().After(deadline) {
			t.Fatalf("10 s after reserve without --delete: %v", got)
		}
		got = kv(t, ok(t, env, "stats", "--job", "2"))
	}
	expect(t, env, 3, []string{"reserve", "--timeout", "0"}, "no job in tube default within 0s")

	// A binary body is shown as such, and whole in JSON.
	r = run(t, env, "\xff\x00", "put", "--tube", "bin")
	if r.code != 0 {
		t.Fatal(r)
	}
	binID := kv(t, r.stdout)["id"]
	if got := kv(t, ok(t, env, "peek", binID))["body"]; !strings.Contains(got, "binary") {
		t.Errorf("binary body shown as %q", got)
	}
	m = decode(t, ok(t, env, "peek", "--json", binID))
	if _, has := m["body"]; has || m["body_base64"] != "/wA=" {
		t.Errorf("peek --json of a binary body: %v", m)
	}

	// kick: a buried job (buried through the protocol), then a delayed one by ID.
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	c, err := beanstalkc.Dial(ctx, p.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Watch(ctx, "emails"); err != nil {
		t.Fatal(err)
	}
	j, err := c.ReserveWithTimeout(ctx, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Bury(ctx, j.ID, 0); err != nil {
		t.Fatal(err)
	}
	if got := kv(t, ok(t, env, "peek", "--buried", "--tube", "emails"))["id"]; got != "2" {
		t.Errorf("peek --buried: id %s", got)
	}
	if out := ok(t, env, "kick", "--tube", "emails", "10"); out != "kicked 1 job in tube emails\n" {
		t.Errorf("kick = %q", out)
	}
	if m := decode(t, ok(t, env, "kick", "--job", "3", "--json")); m["kicked"] != 1.0 || m["id"] != 3.0 {
		t.Errorf("kick --job --json: %v", m)
	}
	expect(t, env, 3, []string{"kick", "--job", "3"}, "job 3 not found")
	expect(t, env, 2, []string{"kick"}, "want N")

	// delete: several IDs, one missing.
	r = expect(t, env, 3, []string{"delete", "2", "99", "3"}, "job 99 not found")
	if r.stdout != "deleted job 2\ndeleted job 3\n" {
		t.Errorf("delete stdout = %q", r.stdout)
	}
	m = decode(t, expect(t, env, 3, []string{"delete", "--json", binID, "98"}).stdout)
	if len(m["deleted"].([]any)) != 1 || m["not_found"].([]any)[0] != 98.0 {
		t.Errorf("delete --json: %v", m)
	}
	expect(t, env, 2, []string{"delete", "x"}, `bad job ID "x"`)

	// --addr wins over HOURGLASS_ADDR; a server that is not there is named.
	expect(t, env, 1, []string{"stats", "--addr", "127.0.0.1:1"}, "cannot connect to 127.0.0.1:1")
	expect(t, []string{"HOURGLASS_ADDR=127.0.0.1:1"}, 0, []string{"stats", "--addr", p.addr})
}

func TestUsage(t *testing.T) {
	r := expect(t, nil, 0, []string{"help"})
	for _, cmd := range commands {
		if !strings.Contains(r.stdout, "  "+cmd.name+" ") {
			t.Errorf("help does not list %s:\n%s", cmd.name, r.stdout)
		}
	}
	r = expect(t, nil, 0, []string{"help", "serve"})
	for _, s := range []string{"--store URL", "HOURGLASS_STORE", "HOURGLASS_MAX_JOB_SIZE", "Examples:"} {
		if !strings.Contains(r.stdout, s) {
			t.Errorf("help serve does not mention %q", s)
		}
	}
	if r := expect(t, nil, 0, []string{"put", "-h"}); !strings.Contains(r.stdout, "--tube tube") {
		t.Errorf("put -h:\n%s", r.stdout)
	}
	expect(t, nil, 2, nil, "Commands:")
	expect(t, nil, 2, []string{"nosuch"}, `unknown command "nosuch"`)
	expect(t, nil, 2, []string{"put", "--pri", "x", "a"}, "run 'hourglass put -h'")
	expect(t, nil, 2, []string{"put", "a", "--priority", "4294967296"}, "--priority 4294967296")
	if r := expect(t, nil, 0, []string{"help", "put"}); strings.Contains(r.stdout, "--pri ") || !strings.Contains(r.stdout, "(default 1024)") {
		t.Errorf("help put lists the alias --pri or not the default priority:\n%s", r.stdout)
	}
	if r := expect(t, nil, 0, []string{"help"}); !strings.Contains(r.stdout, "3  not there") {
		t.Errorf("help does not document exit status 3:\n%s", r.stdout)
	}
	for _, args := range [][]string{{"version"}, {"--version"}} {
		r := expect(t, nil, 0, args)
		if !regexp.MustCompile(`^hourglass \S+ \(commit \S+, go1\.\d+`).MatchString(r.stdout) {
			t.Errorf("%v printed %q", args, r.stdout)
		}
	}
	expect(t, nil, 2, []string{"put", "--delay", "-1500ms", "a"}, "want 0 or more")
	expect(t, nil, 2, []string{"put", "--tube", "-x", "a"}, `bad tube name "-x"`)
	expect(t, nil, 2, []string{"serve", "--fsync", "sometimes"}, "want always, everysec or no")
	expect(t, []string{"HOURGLASS_MAX_JOB_SIZE=big"}, 2, []string{"serve"}, "HOURGLASS_MAX_JOB_SIZE")
	expect(t, []string{"HOURGLASS_LOG_LEVEL=loud"}, 2, []string{"serve"}, "(--log-level from HOURGLASS_LOG_LEVEL)")
}
