//go:build unix

package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// hourglass schedule sets, reads, lists, pauses, triggers and deletes
// schedules over the HTTP API of a running serve, which fires them.
func TestScheduleCommand(t *testing.T) {
	p := startServe(t, []string{"HOURGLASS_AUTH_TOKEN=tok"}, "--store", "mem://")
	env := append([]string{"HOURGLASS_HTTP=http://" + p.httpAddr, "HOURGLASS_AUTH_TOKEN=tok"}, p.env...)

	// Flags before and after the subcommand and the name.
	out := ok(t, env, "schedule", "--zone", "Europe/Berlin", "set", "nightly-report", "--spec", "30 2 * * *",
		"--tube", "reports", "--body", `{"kind":"nightly"}`, "--ttr", "10m", "--misfire", "catch-up=3", "--priority", "7")
	if st := kv(t, out); st["name"] != "nightly-report" || st["spec"] != "30 2 * * *" || st["zone"] != "Europe/Berlin" || st["paused"] != "false" {
		t.Errorf("set printed %q", out)
	}
	for _, want := range []string{"ttr:      10m0s", "priority: 7", "misfire:  catch_up (at most 3 missed ticks)", `body:     {"kind":"nightly"}`} {
		if !strings.Contains(out, want) {
			t.Errorf("set printed %q, lacking %q", out, want)
		}
	}
	// The overlap policy and pause on failure.
	out = ok(t, env, "schedule", "set", "sync", "--spec", "@every 1h", "--tube", "sync", "--overlap", "skip", "--pause-on-failure")
	if st := kv(t, out); st["overlap"] != "skip, pause on failure" || st["skips"] != "0" {
		t.Errorf("set with --overlap skip --pause-on-failure printed %q", out)
	}
	ok(t, env, "schedule", "delete", "sync")
	// Idempotent: the same again keeps the version.
	var a, b struct {
		Version uint64 `json:"version"`
		Next    string `json:"next"`
	}
	set := []string{"schedule", "set", "--json", "nightly-report", "--zone", "Europe/Berlin", "--spec", "30 2 * * *",
		"--tube", "reports", "--body", `{"kind":"nightly"}`, "--ttr", "10m", "--misfire", "catch-up=3", "--priority", "7"}
	json.Unmarshal([]byte(ok(t, env, set...)), &a)
	json.Unmarshal([]byte(ok(t, env, set...)), &b)
	if a.Version == 0 || a != b {
		t.Errorf("setting the same definition twice: %+v then %+v", a, b)
	}

	// next: one time a line, in the zone, a day apart.
	lines := strings.Fields(ok(t, env, "schedule", "next", "nightly-report", "-n", "3"))
	if len(lines) != 3 || lines[0] != a.Next {
		t.Fatalf("next -n 3 printed %q, want 3 times from %s", lines, a.Next)
	}
	t0, err0 := time.Parse(time.RFC3339, lines[0])
	t1, err1 := time.Parse(time.RFC3339, lines[1])
	if err0 != nil || err1 != nil || t1.Sub(t0) < 23*time.Hour || t1.Sub(t0) > 25*time.Hour {
		t.Errorf("next times %q are not a day apart", lines)
	}

	// trigger puts the job now; serve's reserve hands it out.
	out = ok(t, env, "schedule", "trigger", "nightly-report")
	if f := kv(t, out); f["manual"] != "true" || f["job_id"] == "" {
		t.Errorf("trigger printed %q", out)
	}
	if got := kv(t, ok(t, env, "reserve", "--tube", "reports", "--timeout", "5s", "--delete"))["body"]; got != `{"kind":"nightly"}` {
		t.Errorf("the triggered job's body is %q", got)
	}

	// An @every schedule that serve fires.
	ok(t, env, "schedule", "set", "beat", "--spec", "@every 200ms", "--tube", "beats", "--body", "tick")
	if got := kv(t, ok(t, env, "reserve", "--tube", "beats", "--timeout", "10s", "--delete"))["body"]; got != "tick" {
		t.Errorf("the tick's job's body is %q", got)
	}
	if out := ok(t, env, "schedule", "pause", "beat"); kv(t, out)["paused"] != "true" {
		t.Errorf("pause printed %q", out)
	}
	if out := ok(t, env, "schedule", "get", "beat"); kv(t, out)["paused"] != "true" || !strings.Contains(out, "(paused: it will not fire)") || !strings.Contains(out, " late\n") {
		t.Errorf("get of the paused beat printed %q", out)
	}
	if out := ok(t, env, "schedule", "resume", "beat"); kv(t, out)["paused"] != "false" {
		t.Errorf("resume printed %q", out)
	}

	// list: a table, or JSON.
	out = ok(t, env, "schedule", "list")
	if !strings.HasPrefix(out, "NAME ") || !strings.Contains(out, "beat ") || !strings.Contains(out, "nightly-report  30 2 * * *") || !strings.Contains(out, "Europe/Berlin") {
		t.Errorf("list printed %q", out)
	}
	var l struct {
		Schedules []struct {
			Name string `json:"name"`
		} `json:"schedules"`
	}
	if err := json.Unmarshal([]byte(ok(t, env, "schedule", "list", "--json")), &l); err != nil || len(l.Schedules) != 2 || l.Schedules[0].Name != "beat" {
		t.Errorf("list --json: %+v, %v", l, err)
	}
	if err := json.Unmarshal([]byte(ok(t, env, "schedule", "list", "--json", "--after", "beat")), &l); err != nil || len(l.Schedules) != 1 || l.Schedules[0].Name != "nightly-report" {
		t.Errorf("list --after beat: %+v, %v", l, err)
	}

	if out := ok(t, env, "schedule", "delete", "beat"); out != "deleted beat\n" {
		t.Errorf("delete printed %q", out)
	}
	// Not there: exit status 3, for every subcommand on a name.
	for _, sub := range []string{"get", "delete", "pause", "resume", "trigger", "next"} {
		expect(t, env, 3, []string{"schedule", sub, "beat"}, "(not_found)")
	}
	// Bad input the server refuses: exit 2, the field named, nothing changed.
	expect(t, env, 2, []string{"schedule", "set", "x", "--spec", "61 * * * *", "--tube", "t"}, "invalid spec", "minute", "(bad_request)")
	expect(t, env, 2, []string{"schedule", "set", "x", "--spec", "@daily", "--tube", "t", "--zone", "Mars/Olympus"}, "zone", "(bad_request)")
	expect(t, env, 2, []string{"schedule", "set", "x", "--spec", "@daily", "--tube", "t", "--start", "tomorrow"}, "start", "(bad_request)")
	expect(t, env, 3, []string{"schedule", "get", "x"}, "(not_found)")
	// Usage errors.
	expect(t, env, 2, []string{"schedule", "run", "x"}, "unknown subcommand")
	expect(t, env, 2, []string{"schedule", "set", "x", "--tube", "t"}, "needs --spec and --tube")
	expect(t, env, 2, []string{"schedule", "set", "x", "--spec", "@daily", "--tube", "t", "--misfire", "sometimes"}, "--misfire")
	expect(t, env, 2, []string{"schedule", "set", "x", "--spec", "@daily", "--tube", "t", "--misfire", "catch-up=0"}, "catch-up=N")
	expect(t, env, 2, []string{"schedule", "get"}, "takes NAME")
	expect(t, env, 2, []string{"schedule", "next", "-n", "0", "nightly-report"}, "-n 0")
	expect(t, env, 2, []string{"schedule", "get", "nightly-report", "--spec", "@daily"}, "--spec is not one of its flags")
}
