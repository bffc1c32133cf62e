package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/hourglass-io/hourglass/schedule"
	"github.com/hourglass-io/hourglass/server/httpapi"
)

// maxSchedulesFile bounds the size of --schedules-file.
const maxSchedulesFile = 64 << 20

// schedulesFile is the JSON of --schedules-file.
type schedulesFile struct {
	Schedules []scheduleEntry `json:"schedules"`
}

// scheduleEntry is one schedule of the file: a name and the body of an
// HTTP set (httpapi.ScheduleRequest).
type scheduleEntry struct {
	Name string `json:"name"`
	httpapi.ScheduleRequest
}

// loadSchedulesFile reads and checks every schedule of path; an error names
// the file, the schedule and the field.
func loadSchedulesFile(path string) ([]schedule.Schedule, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--schedules-file: %w", err)
	}
	if len(b) > maxSchedulesFile {
		return nil, fmt.Errorf("--schedules-file %s: %d bytes, at most %d", path, len(b), maxSchedulesFile)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var f schedulesFile
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("--schedules-file %s: %w", path, jsonErr(b, err))
	}
	if dec.More() {
		return nil, fmt.Errorf("--schedules-file %s: more than one JSON value", path)
	}
	seen := map[string]int{}
	out := make([]schedule.Schedule, 0, len(f.Schedules))
	for i, e := range f.Schedules {
		if e.Name == "" {
			return nil, fmt.Errorf("--schedules-file %s: schedule %d (from 1) has no name", path, i+1)
		}
		if j, dup := seen[e.Name]; dup {
			return nil, fmt.Errorf("--schedules-file %s: schedule %q is listed twice (%d and %d, from 1)", path, e.Name, j+1, i+1)
		}
		seen[e.Name] = i
		sc, err := e.Schedule(e.Name)
		if err != nil {
			return nil, fmt.Errorf("--schedules-file %s: schedule %q: %w", path, e.Name, err)
		}
		out = append(out, sc)
	}
	return out, nil
}

// jsonErr adds the line of a syntax or type error to it.
func jsonErr(b []byte, err error) error {
	var off int64 = -1
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
	}
	if off < 0 || off > int64(len(b)) {
		return err
	}
	return fmt.Errorf("line %d: %w", bytes.Count(b[:off], []byte("\n"))+1, err)
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
