package storetest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
)

// The benches whose callers are processes (BenchDebounceProcs,
// BenchKeyWindowsProcs) start the running test binary again, once per
// caller, with a variable of its environment set to the caller's share
// of the work: its fields, apart by spaces. The binary's TestMain calls
// the bench's Run…Child first, which plays the part (runChild) and exits.

// childPart is a part a child process plays: the variable that carries
// its fields, and the words its failures begin with.
type childPart struct {
	env  string
	name string
}

// run starts the running test binary again to play p with fields, env
// added to its environment, and returns what it wrote to standard output;
// a failure carries what it wrote to standard error.
func (p childPart) run(ctx context.Context, env []string, fields ...any) (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	spec := make([]string, len(fields))
	for i, f := range fields {
		spec[i] = fmt.Sprint(f)
	}
	cmd := exec.CommandContext(ctx, exe, "-test.run=^$", "-test.bench=^$")
	cmd.Env = append(append(os.Environ(), env...), p.env+"="+strings.Join(spec, " "))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%v: %s", err, strings.TrimSpace(stderr.String()))
	}
	return string(out), nil
}

// runChild returns at once unless this process was started to play p.
// Then it reads p's fields into fields (pointers, in the order run was
// given them), opens its client with open, plays the part with it,
// writing to standard output, closes the client and exits: 0, or 1 after
// a failure, written to standard error.
func runChild[C any](p childPart, fields []any, open func() (C, func(), error), play func(ctx context.Context, c C, w io.Writer) error) {
	spec := os.Getenv(p.env)
	if spec == "" {
		return
	}
	fail := func(err error) {
		fmt.Fprintf(os.Stderr, "%s: %v\n", p.name, err)
		os.Exit(1)
	}
	if _, err := fmt.Sscan(spec, fields...); err != nil {
		fail(fmt.Errorf("%s=%q: %w", p.env, spec, err))
	}
	c, closeFn, err := open()
	if err != nil {
		fail(err)
	}
	w := bufio.NewWriter(os.Stdout)
	err = play(context.Background(), c, w)
	if ferr := w.Flush(); err == nil {
		err = ferr
	}
	closeFn()
	if err != nil {
		fail(err)
	}
	os.Exit(0)
}
