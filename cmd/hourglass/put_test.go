package main

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

// put takes milliseconds: a --delay or --ttr that the beanstalkd protocol
// cannot carry goes over the HTTP API, and the job has them exactly.
func TestPutSubSecond(t *testing.T) {
	p := startServe(t, nil, "--store", "mem://")
	env := append(p.env, "HOURGLASS_HTTP=http://"+p.httpAddr)
	out := ok(t, env, "put", "--tube", "retries", "--delay", "250ms", "--ttr", "1.5s", "--json", "again")
	var put struct {
		ID   uint64 `json:"id"`
		Tube string `json:"tube"`
	}
	if err := json.Unmarshal([]byte(out), &put); err != nil || put.ID == 0 || put.Tube != "retries" {
		t.Fatalf("put printed %q (%v)", out, err)
	}
	var job struct {
		State string `json:"state"`
		TTRMS int64  `json:"ttr_ms"`
		Body  string `json:"body"`
	}
	view := ok(t, env, "api", "--json", "GET", "/v1/jobs/"+strconv.FormatUint(put.ID, 10))
	if err := json.Unmarshal([]byte(view), &job); err != nil || job.State != "delayed" || job.TTRMS != 1500 || job.Body != "again" {
		t.Errorf("the job put with --delay 250ms --ttr 1.5s reads %s (%v)", view, err)
	}
	// The text output is put's as ever; a group goes with it.
	if out := ok(t, env, "put", "--tube", "retries", "--group", "g1", "--delay", "10ms", "x"); !strings.HasPrefix(out, "id: ") || !strings.Contains(out, "tube: retries;g1\n") {
		t.Errorf("put over HTTP printed %q", out)
	}
	// Bad values are bad arguments, whichever transport would carry them.
	for _, args := range [][]string{{"--delay", "-5ms"}, {"--ttr", "500us"}} {
		if r := run(t, env, "", append([]string{"put"}, append(args, "x")...)...); r.code != exitUsage {
			t.Errorf("put %q: exit %d %q, want 2", args, r.code, r.stderr)
		}
	}
}

// put --unique-key, its windows and --debounce go over the HTTP API: a
// debounce put changes the delayed job holding the key and says so; a
// duplicate says so; flags without what they need are bad arguments.
func TestPutKeyAndDebounce(t *testing.T) {
	p := startServe(t, nil, "--store", "mem://")
	env := append(p.env, "HOURGLASS_HTTP=http://"+p.httpAddr)
	first := kv(t, ok(t, env, "put", "--tube", "ix", "--unique-key", "doc-7", "--debounce", "1h", "--max-wait", "2h", "v1"))
	if first["id"] == "" || first["duplicate"] != "" {
		t.Fatalf("first put printed %v", first)
	}
	again := kv(t, ok(t, env, "put", "--tube", "ix", "--unique-key", "doc-7", "--debounce", "1h", "--max-wait", "2h", "v2"))
	if again["id"] != first["id"] || again["debounced"] != "true" || again["duplicate"] != "true" {
		t.Errorf("second put printed %v, want a debounce of %s", again, first["id"])
	}
	kept := kv(t, ok(t, env, "put", "--tube", "ix", "--unique-key", "doc-7", "--debounce", "1h", "--debounce-mode", "extend", "v3"))
	if kept["debounced"] != "true" {
		t.Errorf("extend printed %v", kept)
	}
	var job struct {
		State string `json:"state"`
		Body  string `json:"body"`
	}
	view := ok(t, env, "api", "--json", "GET", "/v1/jobs/"+first["id"])
	if err := json.Unmarshal([]byte(view), &job); err != nil || job.State != "delayed" || job.Body != "v2" {
		t.Errorf("the debounced job reads %s (%v), want delayed with body v2", view, err)
	}
	dup := kv(t, ok(t, env, "put", "--tube", "ix", "--unique-key", "doc-7", "--unique-for", "1m", "x"))
	if dup["id"] != first["id"] || dup["duplicate"] != "true" || dup["debounced"] != "" {
		t.Errorf("a put with the key without --debounce printed %v, want a duplicate", dup)
	}
	for _, args := range [][]string{
		{"--debounce", "1s"},
		{"--unique-for", "1s"},
		{"--unique-kept"},
		{"--unique-key", "k", "--max-wait", "1s"},
		{"--unique-key", "k", "--duplicate-live"},
		{"--unique-key", "k", "--debounce", "2s", "--max-wait", "1s"},
		{"--unique-key", "k", "--debounce", "2s", "--delay", "1s"},
		{"--unique-key", "k", "--debounce", "2s", "--debounce-mode", "later"},
		{"--unique-key", "k", "--unique-for", "-1s"},
	} {
		if r := run(t, env, "", append([]string{"put"}, append(args, "x")...)...); r.code != exitUsage {
			t.Errorf("put %q: exit %d %q, want 2", args, r.code, r.stderr)
		}
	}
}
