package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/server/httpapi"
)

// tubeLimitOptions are serve's --tube-limit and --tube-limits-file: the
// tube limits (docs/tube-limits.md) set in the store at start. Tubes they
// do not name keep the limits the store has.
type tubeLimitOptions struct {
	specs []string // --tube-limit TUBE=SPEC
	file  string
}

func (o *tubeLimitOptions) flags(fs *flag.FlagSet) {
	fs.Func("tube-limit", "a tube's rate and cap, `TUBE=SPEC`, set at start (repeatable; see below)", func(s string) error { o.specs = append(o.specs, s); return nil })
	fs.StringVar(&o.file, "tube-limits-file", "", "`file` of tube limits set at start, one TUBE=SPEC a line (# comments)")
}

// tubeLimitsHelp is the part of serve's help on tube limits.
const tubeLimitsHelp = `
--tube-limit and --tube-limits-file set tube limits at start: a rate and a
cap on the reserves of a tube, which the store enforces for every client of
every server sharing it (docs/tube-limits.md).
` + httpapi.TubeLimitSpecSyntax + `
Tubes not named keep the limits the store has; hourglass tube-limit changes
them while the server runs.

  --tube-limit emails=100/1s,burst=10;cap=5 --tube-limit reports=cap=2
`

// load reads the flags and the file, all of it before anything is set: a
// bad line changes nothing.
func (o *tubeLimitOptions) load() (map[string]queue.Limits, error) {
	return namedSpecs("--tube-limits-file", o.file, "--tube-limit", o.specs, httpapi.ParseNamedTubeLimits, "tube %s has limits twice")
}

// apply sets the limits in the store.
func applyTubeLimits(ctx context.Context, q *queue.Queue, limits map[string]queue.Limits) error {
	for tube, l := range limits {
		if err := q.SetLimits(ctx, tube, l); err != nil {
			return fmt.Errorf("setting the limits of tube %s: %w", tube, err)
		}
	}
	return nil
}

// namedSpecs parses each line of file (skipping blank lines and
// # comments), then each of specs, into a name and its value, all of them
// before anything is set. It stops at the first that does not parse or
// whose name came before (twice is that error's format, given the name),
// naming where it came from ("--limits-file limits.txt:3",
// "--limit \"a=1/s\"").
func namedSpecs[T any](fileFlag, file, specFlag string, specs []string, parse func(string) (string, T, error), twice string) (map[string]T, error) {
	out := map[string]T{}
	add := func(where, s string) error {
		name, v, err := parse(s)
		if err != nil {
			return usagef("%s: %v", where, err)
		}
		if _, dup := out[name]; dup {
			return usagef("%s: "+twice, where, name)
		}
		out[name] = v
		return nil
	}
	if file != "" {
		f, err := os.Open(file)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", fileFlag, err)
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for n := 1; sc.Scan(); n++ {
			line := strings.TrimSpace(sc.Text())
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			if err := add(fmt.Sprintf("%s %s:%d", fileFlag, file, n), line); err != nil {
				return nil, err
			}
		}
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("%s: %w", fileFlag, err)
		}
	}
	for _, s := range specs {
		if err := add(fmt.Sprintf("%s %q", specFlag, s), s); err != nil {
			return nil, err
		}
	}
	return out, nil
}
