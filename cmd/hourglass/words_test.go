package main

import (
	"errors"
	"flag"
	"fmt"
	"strings"
	"testing"
)

func TestCLIWords(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.String("spec", "", "")
	fs.Duration("wait", 0, "")
	fs.Int("n", 1, "")
	for _, tt := range []struct {
		err  error
		env  []string
		want string
	}{
		{&apiError{Status: 400, Code: "bad_request", Message: "spec: invalid spec: \"x\"", Field: "spec"}, nil, `--spec: invalid spec: "x" (bad_request)`},
		{&apiError{Status: 400, Code: "bad_request", Message: "Spec: invalid spec: never", Field: "spec"}, nil, `--spec: invalid spec: never (bad_request)`},
		{&apiError{Status: 400, Code: "bad_request", Message: "invalid spec", Field: "spec"}, nil, `--spec: invalid spec (bad_request)`},
		{&apiError{Status: 400, Code: "bad_request", Message: "n is -5, want 1 or more", Field: "n"}, nil, `--n is -5, want 1 or more (bad_request)`},
		{&apiError{Status: 400, Code: "bad_request", Message: "zone: bad", Field: "zone"}, nil, `zone: bad (bad_request)`}, // no such flag
		{&apiError{Status: 409, Code: "not_obtained", Message: "the lock is held (give wait_ms to wait for it)"}, nil, `the lock is held (give --wait to wait for it) (not_obtained)`},
		{fmt.Errorf("reserve: %w", &apiError{Status: 400, Code: "bad_request", Message: "tube: bad", Field: "tube"}), nil, `reserve: tube: bad (bad_request)`},
		{errors.New("limit \"1/0s\": ratelimit: invalid limit: x"), nil, `limit "1/0s": invalid limit: x`},
		{errors.New("ratelimit: cost exceeds the burst: 5 events of quota 1 exceed limit 0's capacity 2"), nil, "cost exceeds the burst: 5 events of quota 1 exceed the burst of limit 1 of the SPEC (2)"},
		{errors.New("first\nsecond\n"), nil, "first; second"},
		{usagef("--spec %q: bad", "x"), []string{"HOURGLASS_SPEC", "HOURGLASS_ADDR"}, `--spec "x": bad (--spec from HOURGLASS_SPEC)`},
	} {
		if got := cliWords(tt.err, fs, tt.env); got != tt.want {
			t.Errorf("cliWords(%q):\n got %s\nwant %s", tt.err, got, tt.want)
		}
	}
}

// A value of several lines keeps the key: value layout.
func TestWriteKVBlock(t *testing.T) {
	var b strings.Builder
	if err := writeKV(&b, []field{{"id", 1}, {"last_error", "exit status 1\nstack: x"}, {"state", "ready"}}); err != nil {
		t.Fatal(err)
	}
	want := "id:         1\nlast_error: |\n  exit status 1\n  stack: x\nstate:      ready\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}
