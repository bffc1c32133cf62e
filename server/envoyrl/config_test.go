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
		{"no unit", "domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      requests_per_unit: 5\n", ":5: unit: missing"},
		{"unknown field", "domain: d\ndescriptors:\n  - key: a\n    colour: blue\n", ":4: unknown field \"colour\""},
		{"extension outside rate_limit", "domain: d\ndescriptors:\n  - key: a\n    burst: 2\n", ":4: unknown field \"burst\""},
		{"negative requests", "domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      unit: second\n      requests_per_unit: -1\n", ":6: requests_per_unit: want a whole number"},
		{"requests beyond uint32", "domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      unit: second\n      requests_per_unit: 4294967296\n", ":6: requests_per_unit: want a whole number"},
		{"fractional requests", "domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      unit: second\n      requests_per_unit: 1.5\n", ":6: value \"1.5\""},
		{"quoted requests", "domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      unit: second\n      requests_per_unit: \"5\"\n", ":6: requests_per_unit: want a whole number"},
		{"list of strings", "domain: d\ndescriptors:\n  - a\n", ":3: a list of this format holds mappings"},
		{"descriptors not a list", "domain: d\ndescriptors:\n  key: a\n", ":3: descriptors: want a list"},
		{"share_threshold without wildcard", "domain: d\ndescriptors:\n  - key: a\n    value: b\n    share_threshold: true\n", ":3: share_threshold"},
		{"replaces itself", "domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      name: n\n      unit: second\n      requests_per_unit: 1\n      replaces: [{name: n}]\n", ":5: replaces: a limit cannot replace its own name"},
		{"replaces without name", "domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      unit: second\n      requests_per_unit: 1\n      replaces: [{name: \"\"}]\n", ":7: replaces: an entry without a name"},
		{"bad boolean", "domain: d\ndescriptors:\n  - key: a\n    shadow_mode: maybe\n", ":4: shadow_mode: want true or false"},
		{"empty file", "", ":1: domain is missing"},
		{"no key", "domain: d\ndescriptors:\n  - value: a\n", ":3: descriptor without key"},
		{"duplicate", "domain: d\ndescriptors:\n  - key: a\n  - key: a\n", ":4: descriptor key \"a\" value \"\" is also at line 3"},
		{"no domain", "descriptors: []\n", ":1: domain is missing"},
		{"bad per", "domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      per: soon\n      requests_per_unit: 1\n", ":5: per \"soon\""},
		{"unit and per", "domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      unit: second\n      per: 2s\n      requests_per_unit: 1\n", ":6: per: give unit or per"},
		{"bad algorithm", "domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      algorithm: fixed\n      unit: second\n      requests_per_unit: 1\n", ":5: algorithm \"fixed\""},
		{"syntax", "domain: d\ndescriptors:\n  - key: [\n", "line"},
		{"unlimited with unit", "domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      unlimited: true\n      unit: second\n", ":6: unit: an unlimited rate_limit takes no unit"},
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

// TestConfigAcceptsTheFormat: what envoyproxy/ratelimit loads, hourglass
// loads: any uint32 requests_per_unit (0 and rates beyond one event per
// microsecond included), every unit in any case, every field, a field of
// the format where it means nothing, YAML 1.1 booleans, names given twice,
// replaces of a name nobody has, unlimited with a number or a unit it does
// not know.
func TestConfigAcceptsTheFormat(t *testing.T) {
	for _, c := range []struct{ name, rateLimit string }{
		{"a billion a second", "{unit: second, requests_per_unit: 1000000000}"},
		{"uint32 max a second", "{unit: SECOND, requests_per_unit: 4294967295}"},
		{"uint32 max a year", "{unit: Year, requests_per_unit: 4294967295}"},
		{"zero", "{unit: minute, requests_per_unit: 0}"},
		{"no requests_per_unit", "{unit: minute}"},
		{"hex", "{unit: minute, requests_per_unit: 0x10}"},
		{"unlimited with requests", "{unlimited: true, requests_per_unit: 5}"},
		{"unlimited with an unknown unit", "{unlimited: true, unit: fortnight}"},
		{"a field of the format out of place", "{unit: minute, requests_per_unit: 1, key: x, shadow_mode: true}"},
		{"replaces an unknown name", "{unit: minute, requests_per_unit: 1, replaces: [{name: nobody}]}"},
		{"null replaces", "{unit: minute, requests_per_unit: 1, replaces: }"},
		{"week", "{unit: week, requests_per_unit: 7}"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "ok.yaml")
			writeFile(t, p, "domain: d\ndescriptors:\n  - key: a\n    rate_limit: "+c.rateLimit+"\n")
			if _, err := envoyrl.LoadConfig(p); err != nil {
				t.Fatalf("LoadConfig: %v", err)
			}
		})
	}
	p := filepath.Join(t.TempDir(), "all.yaml")
	writeFile(t, p, `domain: d
descriptors:
  - key: a
    value: "x*"
    share_threshold: yes
    value_to_metric: on
    detailed_metric: false
    quota_mode: true
    shadow_mode: no
    rate_limit: {name: same, unit: hour, requests_per_unit: 10}
    descriptors:
  - key: b
    unit: minute
    rate_limit: {name: same, unit: hour, requests_per_unit: 10}
  - key: c
    rate_limit:
  - key: d
    value: 5
    rate_limit: {unit: day, requests_per_unit: 1}
`)
	if _, err := envoyrl.LoadConfig(p); err != nil {
		t.Fatalf("LoadConfig: %v", err)
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
