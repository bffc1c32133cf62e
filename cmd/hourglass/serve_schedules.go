package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/hourglass-io/hourglass/schedule"
	"github.com/hourglass-io/hourglass/server/httpapi"
)

// maxSchedulesFile bounds the size of --schedules-file.
const maxSchedulesFile = 64 << 20

// scheduleEntry is one schedule of the file: a name and the body of an
// HTTP set (httpapi.ScheduleRequest).
type scheduleEntry struct {
	Name string `json:"name"`
	httpapi.ScheduleRequest
}

// loadSchedulesFile reads and checks every schedule of path: one JSON
// object whose only member, "schedules", lists the entries. An error names
// the file, the line, the schedule (its name, or its place when it has
// none) and the field, for every kind of mistake.
func loadSchedulesFile(path string) ([]schedule.Schedule, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--schedules-file: %w", err)
	}
	if len(b) > maxSchedulesFile {
		return nil, fmt.Errorf("--schedules-file %s: %d bytes, at most %d", path, len(b), maxSchedulesFile)
	}
	fail := func(off int64, format string, a ...any) error {
		return fmt.Errorf("--schedules-file %s: line %d: %s", path, lineAt(b, off), fmt.Sprintf(format, a...))
	}
	raws, offs, err := scheduleEntries(b)
	if err != nil {
		var le lineError
		if errors.As(err, &le) {
			return nil, fail(le.off, "%v", le.err)
		}
		return nil, fmt.Errorf("--schedules-file %s: %w", path, err)
	}
	seen := map[string]int{}
	out := make([]schedule.Schedule, 0, len(raws))
	for i, raw := range raws {
		off := offs[i]
		var id struct {
			Name json.RawMessage `json:"name"`
		}
		_ = json.Unmarshal(raw, &id) // what the entry calls itself, if it can be read
		var name string
		who := fmt.Sprintf("schedule %d (from 1)", i+1)
		if json.Unmarshal(id.Name, &name) == nil && name != "" {
			who = fmt.Sprintf("schedule %q", name)
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		var e scheduleEntry
		if err := dec.Decode(&e); err != nil {
			at, msg := entryErr(raw, err)
			return nil, fail(off+at, "%s: %s", who, msg)
		}
		if e.Name == "" {
			return nil, fail(off, "%s has no name", who)
		}
		if j, dup := seen[e.Name]; dup {
			return nil, fail(off, "schedule %q is listed twice (%d and %d, from 1)", e.Name, j+1, i+1)
		}
		seen[e.Name] = i
		sc, err := e.Schedule(e.Name)
		if err != nil {
			return nil, fail(off+fieldAt(raw, err.Error()), "%s: %v", who, err)
		}
		out = append(out, sc)
	}
	return out, nil
}

// lineError is an error at a byte offset of the file.
type lineError struct {
	off int64
	err error
}

func (e lineError) Error() string { return e.err.Error() }

// scheduleEntries reads the file's one object and returns its schedules as
// they are written, with the offset each starts at.
func scheduleEntries(b []byte) ([]json.RawMessage, []int64, error) {
	// Bad JSON first, with the offset of the whole file.
	var any json.RawMessage
	if err := json.Unmarshal(b, &any); err != nil {
		var se *json.SyntaxError
		switch {
		case errors.As(err, &se) && strings.Contains(se.Error(), "unexpected end"):
			return nil, nil, lineError{int64(len(b)), errors.New("the file ends early")}
		case errors.As(err, &se):
			return nil, nil, lineError{se.Offset, err}
		}
		return nil, nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	// at is where the next token starts: past the space and the separator
	// before it.
	at := func() int64 {
		off := dec.InputOffset()
		for off < int64(len(b)) && strings.IndexByte(" \t\r\n,:", b[off]) >= 0 {
			off++
		}
		return off
	}
	syntax := func(err error) error {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return lineError{int64(len(b)), errors.New("the file ends early")}
		}
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return lineError{se.Offset, err}
		}
		return lineError{at(), err}
	}
	delim := func(want json.Delim, what string) error {
		off := at()
		tok, err := dec.Token()
		if err != nil {
			return syntax(err)
		}
		if d, ok := tok.(json.Delim); !ok || d != want {
			return lineError{off, fmt.Errorf("%s: want %q, got %s", what, string(want), tokenText(tok))}
		}
		return nil
	}
	if err := delim('{', "the file"); err != nil {
		return nil, nil, err
	}
	var (
		raws []json.RawMessage
		offs []int64
		got  bool
	)
	for dec.More() {
		off := at()
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, syntax(err)
		}
		key, _ := tok.(string)
		switch {
		case key != "schedules":
			return nil, nil, lineError{off, fmt.Errorf("unknown field %q: the file holds only \"schedules\"", key)}
		case got:
			return nil, nil, lineError{off, errors.New(`"schedules" is given twice`)}
		}
		got = true
		if err := delim('[', `"schedules"`); err != nil {
			return nil, nil, err
		}
		for dec.More() {
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return nil, nil, syntax(err)
			}
			// The entry starts after the separator and the space before it.
			start := dec.InputOffset() - int64(len(raw))
			raws, offs = append(raws, raw), append(offs, start)
		}
		if err := delim(']', `"schedules"`); err != nil {
			return nil, nil, err
		}
	}
	if err := delim('}', "the file"); err != nil {
		return nil, nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, nil, lineError{at(), errors.New("more than one JSON value")}
	}
	return raws, offs, nil
}

// tokenText writes a JSON token for an error.
func tokenText(tok json.Token) string {
	switch t := tok.(type) {
	case json.Delim:
		return strconv.Quote(string(t))
	case string:
		return strconv.Quote(t)
	case nil:
		return "null"
	}
	return fmt.Sprint(tok)
}

// entryErr returns the offset within an entry of a decoding error and its
// message, naming the field: an unknown field is found where the entry
// names it.
func entryErr(raw []byte, err error) (int64, string) {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := strings.TrimPrefix(te.Field, "ScheduleRequest.")
		if field == "" {
			field = "the schedule"
		}
		return te.Offset, fmt.Sprintf("%s: want %v, got a JSON %s", field, te.Type, te.Value)
	}
	msg := strings.TrimPrefix(err.Error(), "json: ")
	if f, ok := strings.CutPrefix(msg, "unknown field "); ok {
		if name, uerr := strconv.Unquote(f); uerr == nil {
			if loc := keyPattern(name).FindIndex(raw); loc != nil {
				return int64(loc[0]), msg
			}
		}
	}
	return 0, msg
}

// fieldKeys map the field an error of a schedule's definition names (as
// httpapi and schedule name them) to its key in the file, to find its line.
var fieldKeys = []struct{ named, key string }{
	{"Spec", "spec"}, {"Zone", "zone"}, {"start ", "start"}, {"end ", "end"},
	{"End ", "end"}, {"Job.Tube", "tube"}, {"Job.TTR", "ttr_ms"}, {"job.ttr_ms", "ttr_ms"},
	{"job.body_base64", "body_base64"}, {"Job.Body", "body"}, {"job:", "job"},
	{"misfire.n", "n"}, {"misfire.policy", "policy"}, {"Misfire", "misfire"},
	{"Grace", "grace_ms"}, {"grace_ms", "grace_ms"}, {"Name", "name"},
}

// fieldAt is the offset within an entry of the field an error of its
// definition names, or 0 (the entry's start) when the entry does not give it.
func fieldAt(raw []byte, msg string) int64 {
	for _, f := range fieldKeys {
		if !strings.Contains(msg, f.named) {
			continue
		}
		if loc := keyPattern(f.key).FindIndex(raw); loc != nil {
			return int64(loc[0])
		}
		return 0
	}
	return 0
}

// keyPattern matches an object member named key.
func keyPattern(key string) *regexp.Regexp {
	return regexp.MustCompile(regexp.QuoteMeta(strconv.Quote(key)) + `\s*:`)
}

// lineAt is the line (from 1) of byte offset off of b.
func lineAt(b []byte, off int64) int {
	off = max(min(off, int64(len(b))), 0)
	return bytes.Count(b[:off], []byte("\n")) + 1
}

// applySchedules sets every schedule of the file with c (an unchanged
// one changes nothing) and, with prune, deletes the store's schedules the
// file does not list. It checks first that no schedule of the file moves
// an existing schedule to another tube, which the store refuses, so that
// a file refused for that changes nothing.
func applySchedules(ctx context.Context, c *schedule.Client, path string, scs []schedule.Schedule, prune bool, log *slog.Logger) error {
	old := make(map[string]schedule.State, len(scs))
	for _, sc := range scs {
		st, err := c.Get(ctx, sc.Name)
		switch {
		case errors.Is(err, schedule.ErrNotFound):
			continue
		case err != nil:
			return fmt.Errorf("--schedules-file: reading schedule %q: %w", sc.Name, err)
		}
		if st.Job.Tube != sc.Job.Tube {
			return fmt.Errorf("--schedules-file %s: schedule %q: job.tube %q: the stored schedule puts into tube %q, which cannot change (delete the schedule first)", path, sc.Name, sc.Job.Tube, st.Job.Tube)
		}
		old[sc.Name] = st
	}
	var created, changed, unchanged, deleted int
	for _, sc := range scs {
		st, err := c.Set(ctx, sc)
		if err != nil {
			return fmt.Errorf("--schedules-file %s: schedule %q: %w", path, sc.Name, err)
		}
		prev, existed := old[sc.Name]
		switch {
		case !existed:
			created++
		case prev.Version == st.Version:
			unchanged++
		default:
			changed++
			log.Info("schedules file: updated", "schedule", sc.Name)
		}
	}
	if prune {
		keep := make(map[string]bool, len(scs))
		for _, sc := range scs {
			keep[sc.Name] = true
		}
		var drop []string
		after := ""
		for {
			page, err := c.List(ctx, after, 1000)
			if err != nil {
				return fmt.Errorf("--schedules-prune: listing the schedules: %w", err)
			}
			for _, st := range page {
				if !keep[st.Name] {
					drop = append(drop, st.Name)
				}
			}
			if len(page) < 1000 {
				break
			}
			after = page[len(page)-1].Name
		}
		for _, name := range drop {
			if err := c.Delete(ctx, name); err != nil && !errors.Is(err, schedule.ErrNotFound) {
				return fmt.Errorf("--schedules-prune: deleting schedule %q: %w", name, err)
			}
			deleted++
			log.Info("schedules file: deleted a schedule the file does not list", "schedule", name)
		}
	}
	log.Info("schedules file applied", "file", path, "created", created, "updated", changed, "unchanged", unchanged, "deleted", deleted)
	return nil
}
