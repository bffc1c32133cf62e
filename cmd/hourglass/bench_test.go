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
