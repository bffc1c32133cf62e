//go:build unix

package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// hourglass lock obtains, refreshes and releases a lock over the HTTP API
// of a running serve, readable by default and JSON with --json.
func TestLockCommand(t *testing.T) {
	p := startServe(t, []string{"HOURGLASS_AUTH_TOKEN=tok"}, "--store", "mem://", "--max-wait", "300ms")
	env := []string{"HOURGLASS_HTTP=http://" + p.httpAddr, "HOURGLASS_AUTH_TOKEN=tok"}

	out := ok(t, env, "lock", "obtain", "report/eu", "--ttl", "1m")
	for _, want := range []string{"name:   report/eu\n", "token:  ", "fence:  ", "limit:  1\n", "ttl:    1m0s\n", "waited: 0s\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("obtain printed %q, lacking %q", out, want)
		}
	}
	// Held: a second obtain waits up to the server's maximum wait, then fails.
	expect(t, env, 1, []string{"lock", "obtain", "--wait", "1m", "report/eu"}, "(not_obtained)")

	// --json, and a semaphore of two slots.
	var g struct {
		Token string `json:"token"`
		Fence uint64 `json:"fence"`
		Limit int    `json:"limit"`
	}
	if err := json.Unmarshal([]byte(ok(t, env, "lock", "--json", "obtain", "--limit", "2", "pool")), &g); err != nil || g.Token == "" || g.Fence == 0 || g.Limit != 2 {
		t.Fatalf("obtain --json: %+v, %v", g, err)
	}
	tok := strings.TrimSpace(ok(t, env, "lock", "obtain", "--token-only", "--limit", "2", "pool"))
	if tok == "" || tok == g.Token || strings.Contains(tok, ":") {
		t.Fatalf("--token-only printed %q", tok)
	}
	expect(t, env, 1, []string{"lock", "obtain", "--limit", "2", "pool"}, "(not_obtained)")

	if out := ok(t, env, "lock", "refresh", "--ttl", "10m", "pool", "--", tok); out != "refreshed pool\n" {
		t.Errorf("refresh printed %q", out)
	}
	if out := ok(t, env, "lock", "ttl", "pool", "--", tok); !strings.HasPrefix(out, "ttl: 9m5") {
		t.Errorf("ttl printed %q, want about ten minutes", out)
	}
	// Only the owner releases.
	expect(t, env, 1, []string{"lock", "release", "pool", "someone-else"}, "(not_held)")
	if out := ok(t, env, "lock", "release", "pool", "--", tok); out != "released pool\n" {
		t.Errorf("release printed %q", out)
	}
	expect(t, env, 1, []string{"lock", "release", "pool", "--", tok}, "(not_held)")
	ok(t, env, "lock", "obtain", "--limit", "2", "pool")

	// Usage errors.
	expect(t, env, 2, []string{"lock", "grab", "x"}, "unknown subcommand")
	expect(t, env, 2, []string{"lock", "release", "x"}, "takes NAME TOKEN")
	expect(t, env, 2, []string{"lock", "refresh", "x", "t"}, "needs --ttl")
}
