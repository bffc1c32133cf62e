//go:build unix

package main

import (
	"strings"
	"testing"
)

func TestBench(t *testing.T) {
	p := startServe(t, nil, "--store", "mem://")
	small := []string{"--conns", "4", "--jobs", "500", "--lateness-jobs", "20"}

	t.Run("table", func(t *testing.T) {
		t.Parallel()
		out := ok(t, p.env, append([]string{"bench", "--tube", "bench-table"}, small...)...)
		for _, s := range []string{"phase", "jobs/s", "put", "reserve+delete", "lateness", " 500 ", " 20 "} {
			if !strings.Contains(out, s) {
				t.Errorf("bench table has no %q:\n%s", s, out)
			}
		}
	})
	t.Run("json", func(t *testing.T) {
		t.Parallel()
		m := decode(t, ok(t, p.env, append([]string{"bench", "--json", "--tube", "bench-json"}, small...)...))
		put := m["put"].(map[string]any)
		rd := m["reserve_delete"].(map[string]any)
		late := m["lateness"].(map[string]any)
		if put["jobs"] != 500.0 || rd["jobs"] != 500.0 || late["jobs"] != 20.0 {
			t.Errorf("bench --json jobs: %v", m)
		}
		if put["per_second"].(float64) <= 0 || late["max_ms"].(float64) < late["p50_ms"].(float64) {
			t.Errorf("bench --json figures: %v", m)
		}
	})
}

func TestBenchNeedsEmptyTube(t *testing.T) {
	p := startServe(t, nil, "--store", "mem://")
	ok(t, p.env, "put", "--tube", "busy", "x")
	expect(t, p.env, 1, []string{"bench", "--tube", "busy"}, "tube busy on "+p.addr+" holds 1 jobs")
}

func TestBenchLimits(t *testing.T) {
	p := startServe(t, nil, "--store", "mem://", "--limit", "bench=100/1s,burst=100")
	env := []string{"HOURGLASS_HTTP=http://" + p.httpAddr}

	t.Run("json", func(t *testing.T) {
		t.Parallel()
		// 200 decisions on each of 10 keys: at least the burst of 100 of
		// each passes.
		m := decode(t, ok(t, env, "bench", "limits", "--clients", "4", "--decisions", "2000", "--keys", "10", "--name", "bench", "--json"))
		if m["decisions"] != 2000.0 || m["allowed"].(float64)+m["denied"].(float64) != 2000 || m["allowed"].(float64) < 1000 {
			t.Errorf("bench limits --json counts: %v", m)
		}
		if m["name"] != "bench" || m["clients"] != 4.0 || m["keys"] != 10.0 || m["per_second"].(float64) <= 0 ||
			m["p50_ms"].(float64) > m["p99_ms"].(float64) || m["p99_ms"].(float64) > m["max_ms"].(float64) {
			t.Errorf("bench limits --json figures: %v", m)
		}
	})
	t.Run("denied", func(t *testing.T) {
		t.Parallel()
		// One an hour on each of 5 keys: exactly 5 of 50 pass.
		m := decode(t, ok(t, env, "bench", "limits", "--clients", "3", "--decisions", "50", "--keys", "5", "--limit", "1/1h", "--json"))
		if m["decisions"] != 50.0 || m["allowed"] != 5.0 || m["denied"] != 45.0 || m["limit"] != "1/1h" {
			t.Errorf("bench limits, limited: %v", m)
		}
	})
	t.Run("table", func(t *testing.T) {
		t.Parallel()
		out := ok(t, env, "bench", "limits", "--clients", "2", "--decisions", "300", "--keys", "3", "--limit", "1000/1s,burst=1000")
		for _, s := range []string{"decisions/s", "allowed", "denied", "p99", " 300 ", " 0 ", "limit 1000/1s,burst=1000"} {
			if !strings.Contains(out, s) {
				t.Errorf("bench limits table has no %q:\n%s", s, out)
			}
		}
	})
	t.Run("duration", func(t *testing.T) {
		t.Parallel()
		// Its own limit: the named limit "bench" and its keys belong to the json case.
		m := decode(t, ok(t, env, "bench", "limits", "--clients", "2", "--decisions", "0", "--duration", "200ms", "--keys", "3", "--limit", "1000/1s", "--json"))
		if d := m["decisions"].(float64); d < 1 || m["allowed"].(float64)+m["denied"].(float64) != d {
			t.Errorf("bench limits --duration: %v", m)
		}
	})
	t.Run("bad input", func(t *testing.T) {
		t.Parallel()
		expect(t, env, 2, []string{"bench", "limits", "--clients", "0"}, "--clients 0")
		expect(t, env, 2, []string{"bench", "limits", "--decisions", "0", "--duration", "0"}, "would not end")
		expect(t, env, 2, []string{"bench", "limits", "--limit", "1/1s", "--name", "bench"}, "not both")
		expect(t, env, 2, []string{"bench", "limits", "--limit", "5/fortnight"}, `--limit "5/fortnight"`)
		expect(t, env, 2, []string{"bench", "--json", "limits"}, "the flags go after limits")
		expect(t, env, 3, []string{"bench", "limits", "--name", "nope"}, "(unknown_limit)")
	})
}
