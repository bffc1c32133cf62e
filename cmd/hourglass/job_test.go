//go:build unix

package main

import (
	"fmt"
	"regexp"
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
