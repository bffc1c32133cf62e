package envoyrl_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hourglass-io/hourglass/server/envoyrl"
)

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestConfigErrorsNameTheLine(t *testing.T) {
	for _, c := range []struct {
		name, yaml, want string
	}{
		{"unknown unit", "domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      unit: fortnight\n      requests_per_unit: 1\n", ":5: unit \"fortnight\""},
		{"no requests", "domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      unit: second\n", ":4: rate_limit needs requests_per_unit"},
		{"unknown field", "domain: d\ndescriptors:\n  - key: a\n    colour: blue\n", ":4: unknown descriptor field \"colour\""},
		{"no key", "domain: d\ndescriptors:\n  - value: a\n", ":3: descriptor without key"},
		{"duplicate", "domain: d\ndescriptors:\n  - key: a\n  - key: a\n", ":4: descriptor key \"a\" value \"\" is also at line 3"},
		{"no domain", "descriptors: []\n", ":1: domain is missing"},
		{"bad per", "domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      per: soon\n      requests_per_unit: 1\n", ":5: per \"soon\""},
		{"unit and per", "domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      unit: second\n      per: 2s\n      requests_per_unit: 1\n", ":6: give unit or per"},
		{"bad algorithm", "domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      algorithm: fixed\n      unit: second\n      requests_per_unit: 1\n", ":5: algorithm \"fixed\""},
		{"syntax", "domain: d\ndescriptors:\n  - key: [\n", "line"},
		{"unlimited with unit", "domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      unlimited: true\n      unit: second\n", ":4: an unlimited rate_limit"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "bad.yaml")
			writeFile(t, p, c.yaml)
			_, err := envoyrl.LoadConfig(p)
			if !errors.Is(err, envoyrl.ErrConfig) || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("LoadConfig: %v, want ErrConfig naming %s and %q", err, p, c.want)
			}
		})
	}
}

func TestConfigDirectory(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.yaml"), "domain: one\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 1}\n")
	writeFile(t, filepath.Join(dir, "b.yml"), "domain: two\n")
	writeFile(t, filepath.Join(dir, "notes.txt"), "not configuration")
	c, err := envoyrl.LoadConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(c.Domains(), ","); got != "one,two" {
		t.Fatalf("domains %q, want one,two", got)
	}
	// The same domain in two files is refused, naming both.
	writeFile(t, filepath.Join(dir, "c.yaml"), "\ndomain: one\n")
	changed, err := c.Reload()
	if changed || !errors.Is(err, envoyrl.ErrConfig) || !strings.Contains(err.Error(), "c.yaml:2") || !strings.Contains(err.Error(), "a.yaml:1") {
		t.Fatalf("Reload: %v %v, want ErrConfig naming c.yaml:2 and a.yaml:1", changed, err)
	}
	if got := strings.Join(c.Domains(), ","); got != "one,two" || c.Generation() != 1 {
		t.Fatalf("after a refused reload: domains %q generation %d, want one,two and 1", got, c.Generation())
	}
	// Unchanged files: nothing to do.
	os.Remove(filepath.Join(dir, "c.yaml"))
	if changed, err := c.Reload(); changed || err != nil {
		t.Fatalf("Reload of unchanged files: %v %v", changed, err)
	}
}

func TestConfigExample(t *testing.T) {
	if _, err := envoyrl.LoadConfig("testdata/basic.yaml"); err != nil {
		t.Fatal(err)
	}
	// Every unit envoyproxy/ratelimit knows loads.
	for _, u := range []string{"second", "minute", "hour", "day", "week", "month", "year", "MINUTE"} {
		p := filepath.Join(t.TempDir(), "u.yaml")
		writeFile(t, p, "domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: "+u+", requests_per_unit: 1}\n")
		if _, err := envoyrl.LoadConfig(p); err != nil {
			t.Errorf("unit %s: %v", u, err)
		}
	}
}
