// Command hourglass runs the hourglass server and talks to it.
//
//	hourglass serve    [flags]              run the server: the beanstalkd protocol and /healthz
//	hourglass put      [flags] [BODY | -]   put a job
//	hourglass reserve  [flags]              reserve a job and print it (--delete: and delete it; --keep: hold it under a lease)
//	hourglass delete   [flags] ID...        delete jobs (--lease: one held by reserve --keep; --result: finish them with a result)
//	hourglass bury     [flags] ID           bury a job held under a lease (--reason, --priority)
//	hourglass release  [flags] ID           release a job held under a lease (--delay, --priority, --reason)
//	hourglass touch    [flags] ID           renew the TTR of a job held under a lease
//	hourglass work     [flags] -- CMD ARGS...   run CMD for each job, the body on its standard input
//	hourglass kick     [flags] N            kick up to N buried (else delayed) jobs of a tube
//	hourglass kick     [flags] --job ID     kick one job
//	hourglass job      [flags] ID | --tube T --key K   look up a job, live or kept after it finished
//	hourglass peek     [flags] ID           show a job
//	hourglass peek     [flags] --ready | --delayed | --buried
//	hourglass stats    [flags]              server, tube (--tube) or job (--job) statistics
//	hourglass tubes    [flags]              list the tubes with their job counts
//	hourglass api      [flags] METHOD PATH [JSON]   call the HTTP API (--http, HOURGLASS_HTTP)
//	hourglass limit    allow|wait [flags] KEY   ask the rate limits over HTTP
//	hourglass tube-limit [flags] set|get|clear|list [TUBE]   a tube's rate and cap over the HTTP API
//	hourglass hash     SUBCOMMAND [flags]   expiring hash fields over the HTTP API (set, get, del, ttl, expire, persist, events, ack)
//	hourglass lock     [flags] obtain|release|refresh|ttl NAME [TOKEN]   locks over the HTTP API
//	hourglass schedule [flags] set|get|list|delete|pause|resume|trigger|next [NAME]   schedules over the HTTP API
//	hourglass bench    [flags]              measure a beanstalkd-protocol server
//	hourglass bench    limits [flags]       measure rate limit decisions/s over the HTTP API
//	hourglass version                       print the version, commit and Go release
//	hourglass help     [COMMAND]            show a command's flags and examples
//
// serve keeps jobs in the store its --store URL names: a directory for the
// embedded engine (the default, ./hourglass-data), mem:// for memory only,
// or redis://, rediss://, redis+sentinel:// or redis+cluster:// for Redis.
// Every serve flag can also be set by an environment variable named
// HOURGLASS_ and the flag's name in capitals with dashes as underscores
// (--max-job-size: HOURGLASS_MAX_JOB_SIZE); the flag wins.
//
// The other commands are clients of any beanstalkd-protocol server, found
// with --addr (default 127.0.0.1:11300, or HOURGLASS_ADDR); peek and stats
// --job read the job over an hourglass server's HTTP API instead when
// --http (or HOURGLASS_HTTP) names it, and then show its history too
// (attempts, last error, the times of its transitions). They print
// readable text, or one JSON object with --json. In JSON, a job's body is
// always in "body_base64", and also in "body" as a string when it is valid
// UTF-8; statistics are numbers, booleans or strings as their values read.
//
// Exit status (one table, exitTable): 0 on success, 1 when the command
// fails (the message is on standard error), 2 for a usage error or a bad
// argument, whether the command or the server finds it (an HTTP 400 or
// 413, the protocol's BAD_FORMAT or JOB_TOO_BIG), 3 when what was asked
// for is not there: a job, tube, key or schedule not found ("job 42 not
// found", an HTTP 404), or a reserve that timed out.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"reflect"
	"slices"
	"strings"
	"syscall"

	"github.com/hourglass-io/hourglass/internal/beanstalkc"
	"github.com/hourglass-io/hourglass/internal/buildinfo"
)

// cli is what a command runs with: its standard streams and environment.
type cli struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	lookupEnv      func(string) (string, bool)
	// stopSignals ends the interception of SIGINT and SIGTERM, so that a
	// second one stops the process at once (serve calls it when it begins
	// to shut down). It may be nil.
	stopSignals func()
}

// subcommand splits the arguments of command name into its subcommand
// and the subcommand's arguments, which must be as many as its form
// says: forms are the command's ("set TUBE", "list"), one a subcommand.
func subcommand(name string, forms, args []string) (sub string, rest []string, err error) {
	subs := make([]string, len(forms))
	for i, f := range forms {
		subs[i], _, _ = strings.Cut(f, " ")
	}
	if len(args) == 0 {
		return "", nil, usagef("%s takes %s", name, orList(subs))
	}
	sub, rest = args[0], args[1:]
	i := slices.Index(subs, sub)
	if i < 0 {
		return "", nil, usagef("%s: unknown subcommand %q: want %s", name, sub, orList(subs))
	}
	_, want, _ := strings.Cut(forms[i], " ")
	if len(rest) != len(strings.Fields(want)) {
		if want == "" {
			return "", nil, usagef("%s %s takes no arguments, got %q", name, sub, rest)
		}
		return "", nil, usagef("%s %s takes %s, got %q", name, sub, want, rest)
	}
	return sub, rest, nil
}

// orList is words as a list: "a, b or c".
func orList(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

// command is a subcommand.
type command struct {
	name string
	args string // the synopsis after the name
	// forms are the positional arguments of each of the command's
	// forms, one synopsis each ("set HASH FIELD VALUE"; "" for none): a
	// word in capitals stands for a value. The tests run every form with
	// every flag after its arguments.
	forms []string
	// subs are subcommands with flags of their own, named by the word
	// after the command's ("bench limits"), which must come first.
	subs    []*command
	summary string // one line, for "hourglass help"
	help    string // description and examples, after the flags
	// envAll: every flag also reads HOURGLASS_<NAME>. Otherwise only
	// --addr does (HOURGLASS_ADDR).
	envAll bool
	// flags defines the command's flags on fs and returns the function
	// that runs it with the arguments left after the flags.
	flags func(fs *flag.FlagSet) func(ctx context.Context, c *cli, args []string) error
}

// commands in the order "hourglass help" lists them.
var commands = []*command{
	serveCommand,
	putCommand,
	reserveCommand,
	deleteCommand,
	buryCommand,
	releaseCommand,
	touchCommand,
	workCommand,
	kickCommand,
	cancelCommand,
	jobCommand,
	peekCommand,
	statsCommand,
	tubesCommand,
	apiCommand,
	limitCommand,
	tubeLimitCommand,
	hashCommand,
	lockCommand,
	scheduleCommand,
	benchCommand,
	migrateCommand,
}

// storeCommands are the commands of each primitive, by the field of
// hourglass.Backend that holds its store: a new primitive adds its line
// here and its command to commands. TestRegistries checks both ways:
// every store of a Backend has a command, every command named here is in
// commands, and every command of commands is named here or in
// storelessCommands.
var storeCommands = map[string][]*command{
	"Queue":     {putCommand, reserveCommand, deleteCommand, buryCommand, releaseCommand, touchCommand, workCommand, kickCommand, cancelCommand, jobCommand, peekCommand, statsCommand, tubesCommand, tubeLimitCommand},
	"Limits":    {limitCommand},
	"Hashes":    {hashCommand},
	"Locks":     {lockCommand},
	"Schedules": {scheduleCommand},
}

// storelessCommands are the commands of commands that serve no one
// primitive's store: the server, the raw API call, the benchmark and the
// migration.
var storelessCommands = []*command{serveCommand, apiCommand, benchCommand, migrateCommand}

// usageError is an error in how the command was called: exit status 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// refusedError is an argument the server refused, in the command's words:
// exit status 2 (exitTable finds the server's error it wraps).
type refusedError struct {
	msg string
	err error
}

func (e refusedError) Error() string { return e.msg }
func (e refusedError) Unwrap() error { return e.err }

// missError is an answer that nothing was there: a job, tube or key not
// found, or a reserve that timed out. Exit status 3.
type missError struct{ msg string }

func (e missError) Error() string { return e.msg }

func missf(format string, args ...any) error { return missError{fmt.Sprintf(format, args...)} }

// Exit statuses.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
	exitMiss    = 3 // timed out or not found
)

// exitTable is the one table of exit statuses of a command that failed:
// the first line that matches the error gives the status, whoever found
// the fault (the command itself, the beanstalkd-protocol server or the
// HTTP API); an error no line matches is a failure, status 1.
var exitTable = []struct {
	status int
	match  func(error) bool
}{
	// A bad argument: refused by the command, or by the server as a
	// 400 or 413 of the HTTP API or BAD_FORMAT or JOB_TOO_BIG of the protocol.
	{exitUsage, func(err error) bool {
		var u usageError
		return errors.As(err, &u) || apiStatus(err) == http.StatusBadRequest ||
			apiStatus(err) == http.StatusRequestEntityTooLarge ||
			errors.Is(err, beanstalkc.ErrBadFormat) || errors.Is(err, beanstalkc.ErrJobTooBig)
	}},
	// Not there, or not within the time given: a job, tube, key, lock or
	// schedule not found (a 404, NOT_FOUND), a reserve that timed out.
	{exitMiss, func(err error) bool {
		var m missError
		return errors.As(err, &m) || apiStatus(err) == http.StatusNotFound ||
			errors.Is(err, beanstalkc.ErrNotFound) || errors.Is(err, beanstalkc.ErrTimedOut)
	}},
}

// apiStatus is the HTTP status of err when it is an error reply of the
// API, else 0.
func apiStatus(err error) int {
	var api *apiError
	if errors.As(err, &api) {
		return api.Status
	}
	return 0
}

// exitCode is the exit status for err, which the command returned.
func exitCode(err error) int {
	for _, e := range exitTable {
		if e.match(err) {
			return e.status
		}
	}
	return exitFailure
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	c := &cli{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, lookupEnv: os.LookupEnv, stopSignals: stop}
	code := c.main(ctx, os.Args[1:])
	stop()
	os.Exit(code)
}

// main runs the command args name and returns the exit status.
func (c *cli) main(ctx context.Context, args []string) int {
	if len(args) == 0 {
		c.usage(c.stderr)
		return 2
	}
	switch args[0] {
	case "version", "-version", "--version":
		fmt.Fprintln(c.stdout, buildinfo.Read())
		return 0
	case "help", "-h", "-help", "--help":
		if len(args) > 1 && args[0] == "help" {
			cmd := lookup(args[1])
			if cmd == nil {
				fmt.Fprintf(c.stderr, "hourglass: unknown command %q; run 'hourglass help'\n", args[1])
				return 2
			}
			if sub := cmd.sub(args[2:]); sub != nil {
				cmd = sub
			}
			fs := flag.NewFlagSet(cmd.name, flag.ContinueOnError)
			cmd.flags(fs)
			cmd.printUsage(c.stdout, fs)
			return 0
		}
		c.usage(c.stdout)
		return 0
	}
	cmd := lookup(args[0])
	if cmd == nil {
		fmt.Fprintf(c.stderr, "hourglass: unknown command %q; run 'hourglass help'\n", args[0])
		return 2
	}
	args = args[1:]
	if sub := cmd.sub(args); sub != nil {
		cmd, args = sub, args[1:]
	}
	fs := flag.NewFlagSet(cmd.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	run := cmd.flags(fs)
	positional, err := parseArgs(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			cmd.printUsage(c.stdout, fs)
			return 0
		}
		return c.usageFailed(cmd, cliWords(err, fs, nil))
	}
	fromEnv, err := cmd.applyEnv(fs, c.lookupEnv)
	if err != nil {
		return c.usageFailed(cmd, cliWords(err, fs, nil))
	}
	if err := run(ctx, c, positional); err != nil {
		msg := cliWords(err, fs, fromEnv)
		var u usageError
		if errors.As(err, &u) {
			return c.usageFailed(cmd, msg)
		}
		fmt.Fprintf(c.stderr, "hourglass %s: %s\n", cmd.name, msg)
		return exitCode(err)
	}
	return 0
}

// valueKey identifies the variable a flag sets, which its aliases share:
// its Value's pointer (a Value of flag.Func is a func), or else its name.
func valueKey(f *flag.Flag) any {
	switch v := reflect.ValueOf(f.Value); v.Kind() {
	case reflect.Pointer, reflect.Func, reflect.Map, reflect.Slice:
		return v.Pointer()
	}
	return f.Name
}

// alias defines the flag name as a second name of the flag target, one
// "hourglass help" does not list: a name kept from an earlier release.
func alias(fs *flag.FlagSet, name, target string) {
	fs.Var(fs.Lookup(target).Value, name, "")
}

func (c *cli) usageFailed(cmd *command, msg string) int {
	fmt.Fprintf(c.stderr, "hourglass %s: %s\nrun 'hourglass %s -h' for usage\n", cmd.name, msg, cmd.name)
	return 2
}

// sub is the subcommand with flags of its own that args, the arguments
// after the command's name, start with, or nil.
func (cmd *command) sub(args []string) *command {
	if len(args) == 0 {
		return nil
	}
	for _, s := range cmd.subs {
		if s.name == cmd.name+" "+args[0] {
			return s
		}
	}
	return nil
}

func lookup(name string) *command {
	i := slices.IndexFunc(commands, func(cmd *command) bool { return cmd.name == name })
	if i < 0 {
		return nil
	}
	return commands[i]
}

// usage prints the list of commands.
func (c *cli) usage(w io.Writer) {
	fmt.Fprint(w, `hourglass runs the hourglass server and talks to any beanstalkd-protocol server.

Usage:

  hourglass COMMAND [flags] [arguments]

Commands:

`)
	width := len("version")
	for _, cmd := range commands {
		width = max(width, len(cmd.name))
	}
	for _, cmd := range commands {
		fmt.Fprintf(w, "  %-*s %s\n", width, cmd.name, cmd.summary)
	}
	fmt.Fprintf(w, "  %-*s %s\n", width, "version", "print the version, commit and Go release (also --version)")
	fmt.Fprint(w, `
Run 'hourglass help COMMAND' or 'hourglass COMMAND -h' for a command's flags
and examples. Flags may come before, between or after the arguments of every
command; -- ends them. A TTL of 0 (hash --ttl, lock --ttl) is the same as no
--ttl. Client commands find the server with --addr (default
127.0.0.1:11300, or $HOURGLASS_ADDR: serve listens on the same --addr) and
its HTTP API with --http (default http://127.0.0.1:7480, or $HOURGLASS_HTTP),
and print JSON with --json.

Examples:

  hourglass serve --store ./data
  echo '{"to":"ada@example.com"}' | hourglass put --tube emails --delay 10s -
  hourglass reserve --tube emails --timeout 30s --delete
  hourglass reserve --keep --tube emails          # then bury, release, touch or delete it
  hourglass work --tube emails -- ./send-email.sh
  hourglass tubes

Exit status:

  0  success
  1  the command failed (the reason is on standard error)
  2  usage error: an unknown command or flag, a bad argument (found by the
     command or refused by the server: an HTTP 400 or 413, BAD_FORMAT)
  3  not there: a job, tube, key or schedule not found, or a reserve that timed out
`)
}

// printUsage prints a command's synopsis, flags and help.
func (cmd *command) printUsage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprintf(w, "Usage: hourglass %s %s\n\n%s%s.\n\nFlags:\n\n", cmd.name, cmd.args, strings.ToUpper(cmd.summary[:1]), cmd.summary[1:])
	fs.VisitAll(func(f *flag.Flag) {
		if f.Usage == "" {
			return // an alias
		}
		name, usage := flag.UnquoteUsage(f)
		head := "  --" + f.Name
		if name != "" {
			head += " " + name
		}
		fmt.Fprintf(w, "%s\n    \t%s", head, strings.ReplaceAll(usage, "\n", "\n    \t"))
		var notes []string
		if g, ok := f.Value.(flag.Getter); ok {
			if _, isString := g.Get().(string); isString && f.DefValue != "" {
				notes = append(notes, fmt.Sprintf("default %q", f.DefValue))
			} else if !isString && f.DefValue != "false" && f.DefValue != "0" && f.DefValue != "0s" {
				notes = append(notes, "default "+f.DefValue)
			}
		}
		if cmd.readsEnv(f.Name) {
			notes = append(notes, "env "+envName(f.Name))
		}
		if len(notes) > 0 {
			fmt.Fprintf(w, " (%s)", strings.Join(notes, "; "))
		}
		fmt.Fprintln(w)
	})
	if cmd.help != "" {
		fmt.Fprintf(w, "\n%s", cmd.help)
	}
}

// readsEnv reports whether flag name also reads an environment variable.
func (cmd *command) readsEnv(name string) bool {
	return cmd.envAll || name == "addr" || name == "http" || name == "auth-token" || name == "lease"
}

// envName is the environment variable of a flag: HOURGLASS_MAX_JOB_SIZE
// for max-job-size.
func envName(flagName string) string {
	return "HOURGLASS_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// applyEnv sets, from the environment, the flags the command line did not
// set, and returns the names of the variables it used.
func (cmd *command) applyEnv(fs *flag.FlagSet, lookupEnv func(string) (string, bool)) ([]string, error) {
	// A flag given under any of its names (an alias shares its Value) is
	// set.
	set := map[any]bool{}
	fs.Visit(func(f *flag.Flag) { set[valueKey(f)] = true })
	var used []string
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if err != nil || set[valueKey(f)] || !cmd.readsEnv(f.Name) {
			return
		}
		v, ok := lookupEnv(envName(f.Name))
		if !ok {
			return
		}
		if e := fs.Set(f.Name, v); e != nil {
			err = fmt.Errorf("invalid value %q for %s: %v", v, envName(f.Name), e)
			return
		}
		set[valueKey(f)] = true
		used = append(used, envName(f.Name))
	})
	return used, err
}
