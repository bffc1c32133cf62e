package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/hourglass-io/hourglass/internal/beanstalkc"
	"github.com/hourglass-io/hourglass/queue"
)

// What the client commands share: the server address, the output format,
// the connection, and how errors and jobs are shown.

const (
	defaultAddr = "127.0.0.1:11300"
	// dialTimeout bounds the connection to the server.
	dialTimeout = 5 * time.Second
	// commandTimeout bounds the commands that do not wait for a job.
	commandTimeout = 30 * time.Second
)

// clientFlags are the flags of every client command.
type clientFlags struct {
	addr string
	json bool
}

func (f *clientFlags) define(fs *flag.FlagSet) {
	fs.StringVar(&f.addr, "addr", defaultAddr, "`host:port` of the beanstalkd-protocol server")
	fs.BoolVar(&f.json, "json", false, "print one JSON object instead of text")
}

// dial connects to the server.
func dial(ctx context.Context, addr string) (*beanstalkc.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	conn, err := beanstalkc.Dial(ctx, addr)
	if err != nil {
		why := err
		var se *os.SyscallError
		if errors.As(err, &se) {
			why = se.Err
		} else if errors.Is(err, context.DeadlineExceeded) {
			why = fmt.Errorf("no answer within %v", dialTimeout)
		}
		return nil, fmt.Errorf("cannot connect to %s: %v (is the server running? set --addr or HOURGLASS_ADDR)", addr, why)
	}
	return conn, nil
}

// connect starts one client command: it bounds ctx by commandTimeout, dials
// the server and, when tube is not "", uses tube. done closes the connection
// and ends the bound.
func connect(ctx context.Context, cf clientFlags, tube string) (context.Context, *beanstalkc.Conn, func(), error) {
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	conn, err := dial(ctx, cf.addr)
	if err != nil {
		cancel()
		return nil, nil, nil, err
	}
	done := func() {
		conn.Close()
		cancel()
	}
	if tube != "" {
		if err := selectTube(ctx, conn, tube); err != nil {
			done()
			return nil, nil, nil, err
		}
	}
	return ctx, conn, done, nil
}

// selectTube makes tube the connection's used tube (a new connection uses
// "default" already).
func selectTube(ctx context.Context, conn *beanstalkc.Conn, tube string) error {
	if tube == "default" {
		return nil
	}
	return describe(conn.Use(ctx, tube))
}

// describe turns a client error into a message for people. NOT_FOUND is
// the caller's to word, since only it knows what was not found.
func describe(err error) error {
	for _, d := range descriptions {
		switch {
		case !errors.Is(err, d.err):
		case d.err == beanstalkc.ErrBadFormat:
			return refusedError{d.msg, err}
		default:
			return errors.New(d.msg)
		}
	}
	if isConnReset(err) {
		return errors.New(msgConnClosed)
	}
	return err
}

// descriptions are the errors describe words, the first that matches in
// their order.
var descriptions = []struct {
	err error
	msg string
}{
	{beanstalkc.ErrDraining, "the server is draining: it takes no new jobs (DRAINING)"},
	{beanstalkc.ErrOutOfMemory, "the server cannot store the job: it is full (OUT_OF_MEMORY)"},
	{beanstalkc.ErrBuried, "the server ran out of memory and buried the job (BURIED)"},
	{beanstalkc.ErrInternalError, "the server failed (INTERNAL_ERROR); its log says why"},
	{beanstalkc.ErrBadFormat, "the server did not accept the command's arguments (BAD_FORMAT)"},
	{beanstalkc.ErrUnknownCommand, "the server does not know the command (UNKNOWN_COMMAND)"},
	{context.Canceled, "interrupted"},
	{context.DeadlineExceeded, "the server did not answer in time"},
	{io.ErrUnexpectedEOF, msgConnClosed},
	{net.ErrClosed, msgConnClosed},
}

const msgConnClosed = "the server closed the connection"

func isConnReset(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// parseID reads a job ID argument.
func parseID(s string) (uint64, error) {
	id, err := strconv.ParseUint(s, 10, 64)
	if err != nil || id == 0 {
		return 0, usagef("bad job ID %q: want a positive integer", s)
	}
	return id, nil
}

// checkTube refuses a tube name the server would refuse, with the rule.
func checkTube(name string) error {
	if !queue.ValidTube(name) {
		return usagef("bad tube name %q: want 1 to 200 characters of A-Z a-z 0-9 - + / ; . $ _ ( ), not starting with -", name)
	}
	return nil
}

// wholeSeconds checks a duration flag that the protocol sends in whole seconds.
func wholeSeconds(flagName string, d time.Duration, least time.Duration) error {
	switch {
	case d < least:
		return usagef("--%s %v: want at least %v", flagName, d, least)
	case d%time.Second != 0:
		return usagef("--%s %v: the protocol counts whole seconds", flagName, d)
	case d/time.Second > math.MaxUint32:
		return usagef("--%s %v: want at most %d seconds", flagName, d, uint64(math.MaxUint32))
	}
	return nil
}

// tubeList is a flag that may be repeated: --tube a --tube b.
type tubeList []string

func (l *tubeList) String() string { return strings.Join(*l, ",") }

func (l *tubeList) Set(s string) error {
	if !queue.ValidTube(s) {
		return fmt.Errorf("bad tube name %q", s)
	}
	*l = append(*l, s)
	return nil
}

// field is one entry of an ordered JSON object.
type field struct {
	key   string
	value any
}

// object is a JSON object that keeps its keys in order.
type object []field

// MarshalJSON implements json.Marshaler.
func (o object) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for i, f := range o {
		if i > 0 {
			b = append(b, ',')
		}
		k, err := json.Marshal(f.key)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(f.value)
		if err != nil {
			return nil, err
		}
		b = append(append(append(b, k...), ':'), v...)
	}
	return append(b, '}'), nil
}

// writeJSON prints v as one line of JSON.
func writeJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// stringStats are the statistics whose values are strings even when they
// look like numbers (a hostname, a random hex id, a version).
var stringStats = map[string]bool{
	"name": true, "tube": true, "state": true, "version": true,
	"id": true, "hostname": true, "os": true, "platform": true,
}

var jsonNumber = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?$`)

// statValue is the JSON value of a statistic: a number, a boolean or a string.
func statValue(key, v string) any {
	switch {
	case stringStats[key]:
		return v
	case v == "true" || v == "false":
		return v == "true"
	case jsonNumber.MatchString(v):
		return json.Number(v)
	}
	return v
}

// statsObject is a stats document as a JSON object, in the server's order.
func statsObject(s beanstalkc.Stats) object {
	o := make(object, len(s))
	for i, st := range s {
		o[i] = field{st.Key, statValue(st.Key, st.Value)}
	}
	return o
}

// laidOut is a value whose continuation lines are already indented
// (errorFields): writeKV prints it as it is.
type laidOut string

// writeKV prints key: value lines with the values aligned.
func writeKV(w io.Writer, kv []field) error {
	width := 0
	for _, f := range kv {
		width = max(width, len(f.key))
	}
	var b strings.Builder
	for _, f := range kv {
		v := fmt.Sprint(f.value)
		if _, ok := f.value.(laidOut); !ok && strings.Contains(v, "\n") && !strings.HasPrefix(v, "|\n") {
			// A value of several lines (a job's last error) is a block
			// under its key, so that every line of the output is still a
			// key: value or an indented continuation.
			v = "|\n  " + strings.ReplaceAll(strings.TrimRight(v, "\n"), "\n", "\n  ")
		}
		fmt.Fprintf(&b, "%-*s %s\n", width+1, f.key+":", v)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func statsKV(s beanstalkc.Stats) []field {
	kv := make([]field, len(s))
	for i, st := range s {
		kv[i] = field{st.Key, st.Value}
	}
	return kv
}

// secondsStats are the statistics of a job that the protocol gives in
// seconds.
var secondsStats = map[string]bool{"age": true, "delay": true, "ttr": true, "time-left": true}

// jobFields describes a job: its ID, what stats-job says of it (when the
// server still has it), its size and, when readable, its body.
func jobFields(j beanstalkc.Job, st beanstalkc.Stats, asJSON bool) object {
	o := object{{"id", j.ID}}
	for _, s := range st {
		if s.Key == "id" || s.Key == "file" {
			continue // the ID is there already; "file" is beanstalkd's binlog file
		}
		switch {
		case asJSON:
			o = append(o, field{s.Key, statValue(s.Key, s.Value)})
		case secondsStats[s.Key]:
			// The protocol counts these in seconds; text shows the unit,
			// as it does for the HTTP API's milliseconds.
			if n, err := strconv.ParseInt(s.Value, 10, 64); err == nil && n >= 0 {
				o = append(o, field{s.Key, (time.Duration(n) * time.Second).String()})
				continue
			}
			o = append(o, field{s.Key, s.Value})
		default:
			o = append(o, field{s.Key, s.Value})
		}
	}
	o = append(o, field{"bytes", len(j.Body)})
	if asJSON {
		if utf8.Valid(j.Body) {
			o = append(o, field{"body", string(j.Body)})
		}
		return append(o, field{"body_base64", base64.StdEncoding.EncodeToString(j.Body)})
	}
	return append(o, field{"body", readableBody(j.Body)})
}

// readableBody shows a body in text output: as it is on one line, as an
// indented block when it has several, or not at all when it is binary.
func readableBody(b []byte) string {
	if !printable(b) {
		return "(binary; use --raw or --json)"
	}
	s := strings.TrimSuffix(string(b), "\n")
	if !strings.Contains(s, "\n") {
		return s
	}
	return "|\n  " + strings.ReplaceAll(s, "\n", "\n  ")
}

func printable(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	for _, r := range string(b) {
		if !unicode.IsPrint(r) && r != '\n' && r != '\t' && r != '\r' {
			return false
		}
	}
	return true
}

// showJob prints a job: its body alone (raw), JSON, or key: value lines.
func (c *cli) showJob(ctx context.Context, conn *beanstalkc.Conn, j beanstalkc.Job, raw, asJSON bool) error {
	if raw {
		_, err := c.stdout.Write(j.Body)
		return err
	}
	st, err := conn.StatsJob(ctx, j.ID)
	if err != nil && !errors.Is(err, beanstalkc.ErrNotFound) {
		return describe(err)
	}
	o := jobFields(j, st, asJSON)
	if asJSON {
		return writeJSON(c.stdout, o)
	}
	return writeKV(c.stdout, o)
}
