//go:build unix

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/hourglass-io/hourglass/server/httpapi"
)

// post sends a JSON body to the HTTP API at base and decodes the reply
// into out (when not nil).
func post(t *testing.T, base, path, lease string, in, out any) {
	t.Helper()
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(t.Context(), "POST", base+path, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if lease != "" {
		req.Header.Set(httpapi.LeaseHeader, lease)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		t.Fatalf("POST %s: %s", path, resp.Status)
	}
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatalf("POST %s: %v", path, err)
		}
	}
}

// TestJobHistoryCommands: peek and stats --job with --http show the
// history of a job a worker buried with its error; without --http they
// show beanstalkd's stats-job, unchanged.
func TestJobHistoryCommands(t *testing.T) {
	p := startServe(t, nil, "--store", "mem://")
	base := "http://" + p.httpAddr
	env := p.env
	ok(t, env, "put", "--tube", "mail", "to bob")
	var r struct {
		Lease string `json:"lease"`
		Job   struct {
			ID uint64 `json:"id"`
		} `json:"job"`
	}
	post(t, base, "/v1/reserve", "", map[string]any{"tubes": []string{"mail"}}, &r)
	post(t, base, fmt.Sprintf("/v1/jobs/%d/bury", r.Job.ID), r.Lease, map[string]any{"reason": "smtp: 550 no such user"}, nil)

	stamp := regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`)
	check := func(what string, got map[string]string) {
		t.Helper()
		if got["state"] != "buried" || got["attempts"] != "1" || got["last_error"] != "smtp: 550 no such user" ||
			got["released_at"] != "never" || got["kicked_at"] != "never" || got["timed_out_at"] != "never" ||
			got["buried_at"] != got["last_error_at"] {
			t.Errorf("%s: %v", what, got)
		}
		for _, k := range []string{"put_at", "reserved_at", "buried_at", "last_error_at"} {
			if !stamp.MatchString(got[k]) {
				t.Errorf("%s: %s is %q, want RFC 3339 with milliseconds", what, k, got[k])
			}
		}
		// Durations with their unit, as in every text output.
		for k, v := range got {
			if strings.HasSuffix(k, "_ms") {
				t.Errorf("%s: %s: %s, want a duration with its unit", what, k, v)
			}
		}
		if got["ttr"] != "1m0s" {
			t.Errorf("%s: ttr %q, want 1m0s", what, got["ttr"])
		}
	}
	id := fmt.Sprint(r.Job.ID)
	got := kv(t, ok(t, env, "peek", id, "--http", base))
	check("peek --http", got)
	if got["body"] != "to bob" || got["body_base64"] != "" {
		t.Errorf("peek --http: body %q, body_base64 %q; want the text alone", got["body"], got["body_base64"])
	}
	check("peek --buried --http", kv(t, ok(t, env, "peek", "--buried", "--tube", "mail", "--http", base)))
	check("stats --job --http", kv(t, ok(t, env, "stats", "--job", id, "--http", base)))
	m := decode(t, ok(t, env, "stats", "--job", id, "--http", base, "--json"))
	if m["last_error"] != "smtp: 550 no such user" || m["released_at"] != nil || m["buries"] != 1.0 {
		t.Errorf("stats --job --http --json: %v", m)
	}
	if out := ok(t, env, "peek", id, "--http", base, "--raw"); out != "to bob" {
		t.Errorf("peek --http --raw = %q", out)
	}
	// HOURGLASS_HTTP does as --http; stats of the server stay beanstalkd's.
	henv := append(env[:len(env):len(env)], "HOURGLASS_HTTP="+base)
	check("peek with HOURGLASS_HTTP", kv(t, ok(t, henv, "peek", id)))
	if got := kv(t, ok(t, henv, "stats")); got["current-jobs-buried"] != "1" {
		t.Errorf("stats with HOURGLASS_HTTP: %v", got)
	}

	// Over the beanstalkd protocol: stats-job as beanstalkd has it.
	got = kv(t, ok(t, env, "stats", "--job", id))
	if got["state"] != "buried" || got["buries"] != "1" {
		t.Errorf("stats --job: %v", got)
	}
	for k := range got {
		if strings.Contains(k, "error") || strings.HasSuffix(k, "_at") {
			t.Errorf("stats --job over beanstalkd shows %s", k)
		}
	}
	expect(t, env, 3, []string{"peek", "99", "--http", base}, "hourglass peek: job 99 not found")
	expect(t, env, 3, []string{"stats", "--job", "99", "--http", base}, "job 99 not found")
	expect(t, env, 3, []string{"peek", "--ready", "--tube", "mail", "--http", base}, "no ready job in tube mail")
}
