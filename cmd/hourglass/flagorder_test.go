package main

import (
	"bytes"
	"context"
	"flag"
	"io"
	"strings"
	"testing"
)

// sampleArgs are values for the words in capitals of a command's forms.
var sampleArgs = map[string]string{
	"ID": "1", "N": "1", "TOKEN": "tok", "BODY": "hello", "VALUE": "v",
}

// formArgs turns a form's synopsis into arguments: each word in capitals
// is a sample value ("x" where sampleArgs has none), other words stay.
func formArgs(form string) []string {
	var args []string
	for _, w := range strings.Fields(form) {
		if w == strings.ToUpper(w) && strings.ToLower(w) != w {
			v, ok := sampleArgs[w]
			if !ok {
				v = "x"
			}
			w = v
		}
		args = append(args, w)
	}
	return args
}

// everyCommand is every command of the table and its subcommands with
// flags of their own.
func everyCommand() []*command {
	var all []*command
	for _, cmd := range commands {
		all = append(all, cmd)
		all = append(all, cmd.subs...)
	}
	return all
}

// runInProcess runs the command line args as main does, with no
// environment, and returns its exit status and standard error.
func runInProcess(t *testing.T, env map[string]string, args ...string) (int, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	c := &cli{
		stdin:  strings.NewReader(""),
		stdout: &stdout, stderr: &stderr,
		lookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok },
	}
	code := c.main(context.Background(), args)
	return code, stderr.String()
}

// nowhere points the client commands at addresses nothing listens on, so
// that a command which misreads its flags cannot reach a server.
var nowhere = map[string]string{"HOURGLASS_ADDR": "127.0.0.1:1", "HOURGLASS_HTTP": "http://127.0.0.1:1"}

// TestEveryFlagAfterTheArguments runs every form of every command of the
// table with each of its flags after the arguments, and checks that the
// flag is read as a flag, not as an argument: given without its value (or
// a bool flag with a value that is not one), the command must refuse it as
// a usage error naming the flag, before it does anything.
func TestEveryFlagAfterTheArguments(t *testing.T) {
	runs := 0
	for _, cmd := range everyCommand() {
		if len(cmd.forms) == 0 {
			t.Errorf("command %q lists no forms", cmd.name)
			continue
		}
		fs := flag.NewFlagSet(cmd.name, flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		cmd.flags(fs)
		for _, form := range cmd.forms {
			fs.VisitAll(func(f *flag.Flag) {
				args := append(strings.Fields(cmd.name), formArgs(form)...)
				want := "--" + f.Name + " needs a value"
				if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
					args = append(args, "--"+f.Name+"=maybe")
					want = `--` + f.Name + ` "maybe": want true or false`
				} else {
					args = append(args, "--"+f.Name)
				}
				runs++
				code, stderr := runInProcess(t, nowhere, args...)
				if code != exitUsage || !strings.Contains(stderr, want) {
					t.Errorf("hourglass %s: exit %d, want %d with %q; stderr:\n%s", strings.Join(args, " "), code, exitUsage, want, stderr)
				}
			})
		}
	}
	t.Logf("%d command lines", runs)
}

// TestDoubleDashEndsFlags: after "--" a word that looks like a flag is an
// argument, for the parser every command goes through.
func TestDoubleDashEndsFlags(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	ttl := fs.Duration("ttl", 0, "")
	json := fs.Bool("json", false, "")
	got, err := parseArgs(fs, []string{"set", "h", "--ttl", "1m", "g", "v", "--", "--json", "-3", "--ttl"})
	if err != nil || strings.Join(got, " ") != "set h g v --json -3 --ttl" || ttl.String() != "1m0s" || *json {
		t.Errorf("args %q ttl %v json %v err %v", got, *ttl, *json, err)
	}
	// A negative number is an argument, not a flag.
	got, err = parseArgs(fs, []string{"-3", "--json", "-0.5"})
	if err != nil || strings.Join(got, " ") != "-3 -0.5" || !*json {
		t.Errorf("negative numbers: args %q err %v", got, err)
	}
	for _, bad := range []string{"---ttl", "-=x", "--nosuch"} {
		if _, err := parseArgs(fs, []string{"a", bad}); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// serve's beanstalkd address is --addr, as the clients', so HOURGLASS_ADDR
// names it on both sides; --beanstalk-addr and HOURGLASS_BEANSTALK_ADDR
// stay as another name of it, and a flag given under either name is not
// overridden by the environment of the other.
func TestServeAddrIsTheClientsAddr(t *testing.T) {
	for _, tt := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{nil, map[string]string{"HOURGLASS_ADDR": "127.0.0.1:3"}, "127.0.0.1:3"},
		{nil, map[string]string{"HOURGLASS_BEANSTALK_ADDR": "127.0.0.1:4"}, "127.0.0.1:4"},
		{[]string{"--addr", "127.0.0.1:1"}, map[string]string{"HOURGLASS_BEANSTALK_ADDR": "127.0.0.1:4"}, "127.0.0.1:1"},
		{[]string{"--beanstalk-addr", "127.0.0.1:2"}, map[string]string{"HOURGLASS_ADDR": "127.0.0.1:3"}, "127.0.0.1:2"},
	} {
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		serveCommand.flags(fs)
		if _, err := parseArgs(fs, tt.args); err != nil {
			t.Fatal(err)
		}
		if _, err := serveCommand.applyEnv(fs, func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok }); err != nil {
			t.Fatal(err)
		}
		if got := fs.Lookup("addr").Value.String(); got != tt.want {
			t.Errorf("%q with %v: --addr %s, want %s", tt.args, tt.env, got, tt.want)
		}
	}
}
