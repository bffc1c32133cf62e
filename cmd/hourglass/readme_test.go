//go:build unix

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// readmeCommand is a "$ " line of a README shell block and the output the
// README shows under it.
type readmeCommand struct {
	line string
	want []string
}

// readmeSessions are the README's sections whose shell blocks are a
// session to run top to bottom.
var readmeSessions = []string{"## Over HTTP, in one session", "## From the shell"}

// readmeBlocks returns the commands of the shell blocks of the README's
// sessions, in order.
func readmeBlocks(t *testing.T) []readmeCommand {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var cmds []readmeCommand
	for _, head := range readmeSessions {
		_, section, ok := strings.Cut(string(b), "\n"+head+"\n")
		if !ok {
			t.Fatalf("README has no section %q", head)
		}
		if i := strings.Index(section, "\n## "); i >= 0 {
			section = section[:i]
		}
		for {
			_, rest, ok := strings.Cut(section, "```sh\n")
			if !ok {
				break
			}
			block, after, _ := strings.Cut(rest, "```")
			section = after
			for _, l := range strings.Split(strings.TrimRight(block, "\n"), "\n") {
				if line, ok := strings.CutPrefix(l, "$ "); ok {
					cmds = append(cmds, readmeCommand{line: line})
				} else if len(cmds) > 0 {
					cmds[len(cmds)-1].want = append(cmds[len(cmds)-1].want, l)
				}
			}
		}
	}
	return cmds
}

// shapeOf is the pattern of an output the README shows: as written, with
// "…" standing for anything.
func shapeOf(lines []string) *regexp.Regexp {
	parts := strings.Split(strings.Join(lines, "\n"), "…")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	return regexp.MustCompile(`(?s)^` + strings.Join(parts, ".*?") + `$`)
}

// TestREADMESessions runs the README's shell sessions as they are written,
// in one shell against a fresh server (the README's "hourglass serve
// --store mem://" started on free ports: its address replaces
// localhost:7480, and HOURGLASS_ADDR and HOURGLASS_HTTP name it), and
// checks that each command succeeds and prints the shape of output the
// README shows under it. The worker of "hourglass work" runs until it is
// stopped, and is left out.
func TestREADMESessions(t *testing.T) {
	for _, tool := range []string{"curl", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the README's sessions use %s: %v", tool, err)
		}
	}
	cmds := readmeBlocks(t)
	p := startServe(t, nil, "--store", "mem://")
	dir := t.TempDir()
	const mark = "@@readme@@"
	var script strings.Builder
	var run []readmeCommand
	for _, c := range cmds {
		switch {
		case strings.HasPrefix(c.line, "hourglass serve"):
			if c.line != "hourglass serve --store mem://" {
				t.Fatalf("the README starts %q; the test starts hourglass serve --store mem://", c.line)
			}
			continue
		case strings.HasPrefix(c.line, "hourglass work "):
			continue
		}
		line := strings.ReplaceAll(c.line, "localhost:7480", p.httpAddr)
		fmt.Fprintf(&script, "%s\necho \"%s $?\"\n", line, mark)
		run = append(run, c)
	}
	if len(run) < 15 {
		t.Fatalf("found %d commands in the README's sessions", len(run))
	}
	sh := exec.CommandContext(t.Context(), "sh", "-c", script.String())
	sh.Dir = dir
	sh.Env = append(baseEnv(), "PATH="+filepath.Dir(binary)+":"+os.Getenv("PATH"),
		"HOURGLASS_ADDR="+p.addr, "HOURGLASS_HTTP=http://"+p.httpAddr)
	out, err := sh.CombinedOutput()
	if err != nil {
		t.Fatalf("the session: %v\n%s", err, out)
	}
	outs := strings.Split(string(out), mark+" ")
	if len(outs) != len(run)+1 {
		t.Fatalf("%d outputs of %d commands:\n%s", len(outs)-1, len(run), out)
	}
	for i, c := range run {
		got := outs[i]
		if i > 0 {
			code, rest, _ := strings.Cut(outs[i], "\n")
			_ = code
			got = rest
		}
		status, _, _ := strings.Cut(outs[i+1], "\n")
		if status != "0" {
			t.Errorf("$ %s: exit %s\n%s", c.line, status, got)
			continue
		}
		if len(c.want) > 0 && !shapeOf(c.want).MatchString(strings.TrimRight(got, "\n")) {
			t.Errorf("$ %s: printed\n%s\nthe README shows\n%s", c.line, got, strings.Join(c.want, "\n"))
		}
	}
}
