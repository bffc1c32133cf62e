package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/internal/beanstalkc"
	"github.com/hourglass-io/hourglass/schedule"
)

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"mem://":                                    "mem://",
		"./data":                                    "./data",
		"redis://127.0.0.1:6379/0":                  "redis://127.0.0.1:6379/0",
		"redis://:secret@host:6379/0":               "redis://:xxxxx@host:6379/0",
		"rediss://user:p@ss@host:6379":              "rediss://user:xxxxx@host:6379",
		"redis+cluster://u:pw@h1:1,h2:2?x=1":        "redis+cluster://u:xxxxx@h1:1,h2:2?x=1",
		"redis+sentinel://u:pw@h1:1,h2:2/master/0":  "redis+sentinel://u:xxxxx@h1:1,h2:2/master/0",
		"redis://user@host:6379":                    "redis://user@host:6379",
		"redis://host:6379/0?client_name=a@b:c":     "redis://host:6379/0?client_name=a@b:c",
		"file:///var/lib/hourglass":                 "file:///var/lib/hourglass",
		"redis+sentinel://:pw@h1:26379/mymaster?x=": "redis+sentinel://:xxxxx@h1:26379/mymaster?x=",
	} {
		if got := redact(in); got != want {
			t.Errorf("redact(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestApplyEnv(t *testing.T) {
	env := map[string]string{
		"HOURGLASS_STORE":        "from-env",
		"HOURGLASS_MAX_JOB_SIZE": "100",
		"HOURGLASS_TUBE":         "ignored",
	}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }

	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	store := fs.String("store", "default", "")
	size := fs.Int("max-job-size", 1, "")
	if err := fs.Parse([]string{"--store", "from-flag"}); err != nil {
		t.Fatal(err)
	}
	used, err := serveCommand.applyEnv(fs, lookup)
	if err != nil {
		t.Fatal(err)
	}
	if *store != "from-flag" || *size != 100 || strings.Join(used, ",") != "HOURGLASS_MAX_JOB_SIZE" {
		t.Errorf("store %q, max-job-size %d, used %q: want from-flag, 100, [HOURGLASS_MAX_JOB_SIZE]", *store, *size, used)
	}

	// Client commands read only HOURGLASS_ADDR.
	fs = flag.NewFlagSet("put", flag.ContinueOnError)
	tube := fs.String("tube", "default", "")
	addr := fs.String("addr", "x", "")
	env["HOURGLASS_ADDR"] = "10.0.0.1:11300"
	if _, err := putCommand.applyEnv(fs, lookup); err != nil {
		t.Fatal(err)
	}
	if *tube != "default" || *addr != "10.0.0.1:11300" {
		t.Errorf("put: tube %q, addr %q", *tube, *addr)
	}

	env["HOURGLASS_MAX_JOB_SIZE"] = "big"
	fs = flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.Int("max-job-size", 1, "")
	if _, err := serveCommand.applyEnv(fs, lookup); err == nil || !strings.Contains(err.Error(), "HOURGLASS_MAX_JOB_SIZE") {
		t.Errorf("bad value from the environment: %v", err)
	}
	if got := envName("shutdown-timeout"); got != "HOURGLASS_SHUTDOWN_TIMEOUT" {
		t.Errorf("envName = %q", got)
	}
}

func TestStatsJSON(t *testing.T) {
	st := beanstalkc.Stats{
		{Key: "current-jobs-ready", Value: "3"},
		{Key: "rusage-utime", Value: "0.012000"},
		{Key: "version", Value: "1.12"},
		{Key: "id", Value: "1234567890123456"},
		{Key: "draining", Value: "false"},
		{Key: "hostname", Value: "box"},
		{Key: "odd", Value: "01"},
	}
	b, err := json.Marshal(statsObject(st))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"current-jobs-ready":3,"rusage-utime":0.012000,"version":"1.12","id":"1234567890123456","draining":false,"hostname":"box","odd":"01"}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
}

func TestReadableBody(t *testing.T) {
	for in, want := range map[string]string{
		"hello":        "hello",
		"hello\n":      "hello",
		"a\nb\n":       "|\n  a\n  b",
		"\xff":         "(binary; use --raw or --json)",
		"bell\a":       "(binary; use --raw or --json)",
		"tab\tand é ✓": "tab\tand é ✓",
	} {
		if got := readableBody([]byte(in)); got != want {
			t.Errorf("readableBody(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestWarnExposed(t *testing.T) {
	for _, tc := range []struct {
		addr string
		warn bool
	}{
		{"127.0.0.1:11300", false},
		{"[::1]:11300", false},
		{"0.0.0.0:11300", true},
		{"[::]:11300", true},
		{"10.1.2.3:11300", true},
	} {
		a, err := net.ResolveTCPAddr("tcp", tc.addr)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		warnExposed(slog.New(slog.NewTextHandler(&buf, nil)), "beanstalk_addr", a, "why")
		if got := strings.Contains(buf.String(), "non-loopback"); got != tc.warn {
			t.Errorf("%s: warned %v, want %v: %s", tc.addr, got, tc.warn, buf.String())
		}
	}
}

func TestLatenessBody(t *testing.T) {
	due := time.Unix(1700000000, 123456789)
	for _, size := range []int{0, 19, 100} {
		b := latenessBody(due, size)
		if len(b) < size {
			t.Errorf("size %d: body of %d bytes", size, len(b))
		}
		got, ok := parseDue(b)
		if !ok || !got.Equal(due) {
			t.Errorf("size %d: parseDue(%q) = %v, %v", size, b, got, ok)
		}
	}
	if _, ok := parseDue([]byte("xyz")); ok {
		t.Error("parseDue accepted a foreign body")
	}
	d := []time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	if p50, p99 := percentile(d, 0.5), percentile(d, 0.99); p50 != 5 || p99 != 10 {
		t.Errorf("percentiles of 1..10: p50 %d, p99 %d", p50, p99)
	}
}

func TestParseArgs(t *testing.T) {
	for _, tt := range []struct {
		args      []string
		want      string
		tube, pri string
	}{
		{[]string{"a", "--tube", "t", "b"}, "a b", "t", "0"},
		{[]string{"--tube", "t", "a", "--pri", "5"}, "a", "t", "5"},
		{[]string{"-", "--priority", "7"}, "-", "", "7"},
		{[]string{"a", "--", "--tube", "x"}, "a --tube x", "", "0"},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		tube := fs.String("tube", "", "")
		pri := fs.Uint64("priority", 0, "p")
		alias(fs, "pri", "priority")
		got, err := parseArgs(fs, tt.args)
		if err != nil || strings.Join(got, " ") != tt.want || *tube != tt.tube || fmt.Sprint(*pri) != tt.pri {
			t.Errorf("%q: args %q tube %q priority %d (err %v), want %q %q %s", tt.args, got, *tube, *pri, err, tt.want, tt.tube, tt.pri)
		}
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if _, err := parseArgs(fs, []string{"a", "--nosuch"}); err == nil {
		t.Error("an unknown flag after an argument was accepted")
	}
}

// The example file of docs/schedules.md is a good --schedules-file.
func TestSchedulesFileExample(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "schedules.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(string(doc), "## Declared in a file")
	_, rest, _ = strings.Cut(rest, "```json\n")
	example, _, found := strings.Cut(rest, "```")
	if !found {
		t.Fatal("no JSON example in the file section of docs/schedules.md")
	}
	path := filepath.Join(t.TempDir(), "schedules.json")
	if err := os.WriteFile(path, []byte(example), 0o644); err != nil {
		t.Fatal(err)
	}
	scs, err := loadSchedulesFile(path)
	if err != nil {
		t.Fatalf("the example: %v", err)
	}
	if len(scs) != 3 || scs[0].Name != "nightly-report" || scs[0].Misfire != schedule.CatchUp(3) || scs[2].End.IsZero() {
		t.Fatalf("the example reads as %+v", scs)
	}
}
