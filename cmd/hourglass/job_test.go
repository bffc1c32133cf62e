//go:build unix

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestJobLookup: hourglass job finds a job by ID and by its tube's unique
// key while it is live and, once finished in a tube with a retention,
// while it is kept, with its result; no such job is exit status 3, and a
// key without a tube a usage error.
func TestJobLookup(t *testing.T) {
	p := startServe(t, nil, "--store", "mem://")
	base := "http://" + p.httpAddr
	env := p.env
	ok(t, env, "api", "--http", base, "PUT", "/v1/tubes/orders/retention", `{"retention_ms":3600000}`)
	var put struct {
		ID uint64 `json:"id"`
	}
	post(t, base, "/v1/tubes/orders/jobs", "", map[string]any{"body": "ship", "unique_key": "order-42"}, &put)
	id := fmt.Sprint(put.ID)

	got := kv(t, ok(t, env, "job", id, "--http", base))
	if got["id"] != id || got["state"] != "ready" || got["unique_key"] != "order-42" || got["kept_until"] != "" {
		t.Errorf("job ID of a live job: %v", got)
	}
	got = kv(t, ok(t, env, "job", "--tube", "orders", "--key", "order-42", "--http", base))
	if got["id"] != id || got["state"] != "ready" {
		t.Errorf("job --key of a live job: %v", got)
	}

	post(t, base, "/v1/jobs/"+id+"/finish", "", map[string]any{"result": "shipped"}, nil)
	stamp := regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`)
	for _, args := range [][]string{{"job", id}, {"job", "--key", "order-42", "--tube", "orders"}} {
		got := kv(t, ok(t, env, append(args, "--http", base)...))
		if got["id"] != id || got["state"] != "finished" || got["result"] != `"shipped"` ||
			!stamp.MatchString(got["finished_at"]) || !stamp.MatchString(got["kept_until"]) {
			t.Errorf("%v of a kept job: %v", args, got)
		}
	}
	m := decode(t, ok(t, env, "job", "--json", "--tube", "orders", "--key", "order-42", "--http", base))
	if m["state"] != "finished" || m["result_base64"] != "c2hpcHBlZA==" {
		t.Errorf("job --json: %v", m)
	}

	if r := run(t, env, "", "job", "--tube", "orders", "--key", "order-43", "--http", base); r.code != 3 {
		t.Errorf("job of a key nobody holds: exit %d, want 3; stderr %s", r.code, r.stderr)
	}
	if r := run(t, env, "", "job", "999999", "--http", base); r.code != 3 {
		t.Errorf("job of an unknown ID: exit %d, want 3; stderr %s", r.code, r.stderr)
	}
	for _, args := range [][]string{{"job", "--key", "k"}, {"job", "--tube", "orders"}, {"job", id, "--key", "k", "--tube", "t"}, {"job"}} {
		if r := run(t, env, "", append(args, "--http", base)...); r.code != exitUsage {
			t.Errorf("%v: exit %d, want %d (usage)", args, r.code, exitUsage)
		}
	}
}

// TestJobFinishedList: hourglass job --tube T --finished lists the jobs
// the tube keeps, the newest first, in pages that end with "next:", and
// --json prints the API's reply.
func TestJobFinishedList(t *testing.T) {
	p := startServe(t, nil, "--store", "mem://")
	base := "http://" + p.httpAddr
	env := p.env
	ok(t, env, "api", "--http", base, "PUT", "/v1/tubes/orders/retention", `{"retention_ms":3600000}`)
	var ids []string
	for i := range 3 {
		var put struct {
			ID uint64 `json:"id"`
		}
		post(t, base, "/v1/tubes/orders/jobs", "", map[string]any{"body": "ship", "unique_key": fmt.Sprintf("order-%d", i)}, &put)
		ids = append(ids, fmt.Sprint(put.ID))
		post(t, base, "/v1/jobs/"+ids[i]+"/finish", "", map[string]any{"result": fmt.Sprintf("shipped %d", i)}, nil)
	}
	out := ok(t, env, "job", "--tube", "orders", "--finished", "--limit", "2", "--http", base)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "ID") || !strings.HasPrefix(lines[3], "next: ") {
		t.Fatalf("job --finished --limit 2 printed:\n%s", out)
	}
	for i, n := range []int{2, 1} {
		f := strings.Fields(lines[i+1])
		if len(f) < 5 || f[0] != ids[n] || f[1] != fmt.Sprintf("order-%d", n) || f[2] != "finished" || !strings.Contains(lines[i+1], fmt.Sprintf(`"shipped %d"`, n)) {
			t.Errorf("line %d of job --finished: %q, want job %s, key order-%d, finished, result \"shipped %d\"", i+1, lines[i+1], ids[n], n, n)
		}
	}
	out = ok(t, env, "job", "--tube", "orders", "--finished", "--limit", "2", "--cursor", strings.TrimPrefix(lines[3], "next: "), "--http", base)
	lines = strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[1], ids[0]+" ") {
		t.Errorf("the second page of job --finished:\n%s", out)
	}
	m := decode(t, ok(t, env, "job", "--json", "--tube", "orders", "--finished", "--http", base))
	if jobs, _ := m["jobs"].([]any); len(jobs) != 3 {
		t.Errorf("job --finished --json: %v", m)
	}
	for _, args := range [][]string{{"job", "--finished"}, {"job", "--finished", "--tube", "orders", "--key", "k"}, {"job", "--finished", "--tube", "orders", "--limit", "0"}, {"job", "--limit", "3", "--tube", "orders", "--key", "k"}} {
		if r := run(t, env, "", append(args, "--http", base)...); r.code != exitUsage {
			t.Errorf("%v: exit %d, want %d (usage)", args, r.code, exitUsage)
		}
	}
}

// TestJobErrorHistory: hourglass job, peek --http and stats --job --http
// print the errors of a job's attempts, oldest first, one "error:" line
// each with its time and attempt, a reason of several lines as a block
// under its line; --json has them as "errors".
func TestJobErrorHistory(t *testing.T) {
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
	post(t, base, fmt.Sprintf("/v1/jobs/%d/release", r.Job.ID), r.Lease, map[string]any{"reason": "smtp: 451 try later\nqueue full"}, nil)
	post(t, base, "/v1/reserve", "", map[string]any{"tubes": []string{"mail"}}, &r)
	post(t, base, fmt.Sprintf("/v1/jobs/%d/bury", r.Job.ID), r.Lease, map[string]any{"reason": "smtp: 550 no such user"}, nil)
	id := fmt.Sprint(r.Job.ID)

	line := regexp.MustCompile(`(?m)^error: +\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z attempt (\d+): (.*)$`)
	for _, args := range [][]string{{"job", id}, {"peek", id}, {"stats", "--job", id}} {
		out := ok(t, env, append(args, "--http", base)...)
		m := line.FindAllStringSubmatch(out, -1)
		if len(m) != 2 || m[0][1] != "1" || m[0][2] != "|" || m[1][1] != "2" || m[1][2] != "smtp: 550 no such user" {
			t.Errorf("%v: error lines %q in\n%s", args, m, out)
		}
		if !strings.Contains(out, "\n  smtp: 451 try later\n  queue full\n") {
			t.Errorf("%v: the first error's two lines are not a block under it:\n%s", args, out)
		}
	}
	var v struct {
		Errors []struct {
			Attempt int    `json:"attempt"`
			Reason  string `json:"reason"`
			At      string `json:"at"`
		} `json:"errors"`
	}
	if err := json.Unmarshal([]byte(ok(t, env, "job", id, "--json", "--http", base)), &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Errors) != 2 || v.Errors[0].Attempt != 1 || v.Errors[1].Reason != "smtp: 550 no such user" || v.Errors[1].At == "" {
		t.Errorf("job --json: errors %+v", v.Errors)
	}
}

// TestDeleteResult: delete --result finishes a job with a result given as
// text, on standard input or in a file, with and without a lease; the
// tube keeps it and hourglass job shows the result. A result over 64 KiB
// is a usage error and changes nothing.
func TestDeleteResult(t *testing.T) {
	p := startServe(t, nil, "--store", "mem://")
	base := "http://" + p.httpAddr
	env := append(p.env, "HOURGLASS_HTTP="+base)
	ok(t, env, "api", "PUT", "/v1/tubes/orders/retention", `{"retention_ms":3600000}`)
	putID := func() string {
		var put struct {
			ID uint64 `json:"id"`
		}
		post(t, base, "/v1/tubes/orders/jobs", "", map[string]any{"body": "ship"}, &put)
		return fmt.Sprint(put.ID)
	}
	result := func(id string) string {
		t.Helper()
		got := kv(t, ok(t, env, "job", id))
		if got["state"] != "finished" {
			t.Errorf("job %s after delete --result: %v", id, got)
		}
		return got["result"]
	}

	id := putID()
	if out := ok(t, env, "delete", id, "--result", "shipped"); out != "finished job "+id+"\n" {
		t.Errorf("delete --result printed %q", out)
	}
	if r := result(id); r != `"shipped"` {
		t.Errorf("result of --result: %s", r)
	}

	id = putID()
	if r := run(t, env, "line one\nline two\n", "delete", "--result", "-", id); r.code != 0 {
		t.Fatalf("delete --result -: exit %d: %s", r.code, r.stderr)
	}
	if r := result(id); r != `"line one\nline two\n"` {
		t.Errorf("result from standard input: %s", r)
	}

	id = putID()
	file := filepath.Join(t.TempDir(), "result.json")
	if err := os.WriteFile(file, []byte(`{"n":1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	ok(t, env, "delete", id, "--result-file", file)
	if r := result(id); r != `"{\"n\":1}"` {
		t.Errorf("result from a file: %s", r)
	}

	// A held job, under its lease; --json says which were finished.
	id = putID()
	out := ok(t, env, "reserve", "--keep", "--tube", "orders", "--timeout", "0", "--json")
	_, lease, _ := strings.Cut(out, `"lease":"`)
	lease, _, _ = strings.Cut(lease, `"`)
	if r := run(t, env, "", "delete", id, "--result", "x"); r.code == 0 {
		t.Errorf("delete --result of a job held by another lease: exit 0")
	}
	m := decode(t, ok(t, env, "delete", "--json", "--lease", lease, "--result", "done", id))
	if fmt.Sprint(m["deleted"]) != "["+id+"]" {
		t.Errorf("delete --json --result: %v", m)
	}
	if r := result(id); r != `"done"` {
		t.Errorf("result under a lease: %s", r)
	}

	id = putID()
	if r := run(t, env, strings.Repeat("x", 64<<10+1), "delete", "--result", "-", id); r.code != exitUsage {
		t.Errorf("a result over 64 KiB: exit %d, want %d", r.code, exitUsage)
	}
	if got := kv(t, ok(t, env, "job", id)); got["state"] != "ready" {
		t.Errorf("job after a refused delete --result: %v", got)
	}
}
