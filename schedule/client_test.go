package schedule_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/memstore"
	"github.com/hourglass-io/hourglass/schedule"
)

func TestClientBadInput(t *testing.T) {
	s, err := memstore.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, o := range []schedule.Options{{PollInterval: -1}, {BatchSize: -1}, {BatchSize: 10_001}, {Concurrency: -1}, {Concurrency: 1001}} {
		if _, err := schedule.New(s.Schedules(), &o); !errors.Is(err, schedule.ErrInvalidOption) {
			t.Errorf("New(%+v): %v", o, err)
		}
	}
	c, _ := schedule.New(s.Schedules(), nil)
	ctx := t.Context()
	if _, err := c.List(ctx, "", 0); !errors.Is(err, schedule.ErrInvalidOption) || !strings.Contains(err.Error(), "limit") {
		t.Errorf("List limit 0: %v", err)
	}
	if _, err := c.NextTimes(ctx, "x", 0); !errors.Is(err, schedule.ErrInvalidOption) {
		t.Errorf("NextTimes 0: %v", err)
	}
	if _, err := c.Get(ctx, "bad name"); !errors.Is(err, schedule.ErrInvalidName) {
		t.Errorf("Get of a bad name: %v", err)
	}
	if _, err := c.NextTimes(ctx, "missing", 3); !errors.Is(err, schedule.ErrNotFound) {
		t.Errorf("NextTimes of a missing schedule: %v", err)
	}
	// A cron spec no date matches is refused and stores nothing; one that
	// matches once in four years is taken.
	for spec, never := range map[string]bool{"0 0 30 2 *": true, "0 0 31 4 *": true, "0 0 29 2 *": false} {
		name := "s" + strings.ReplaceAll(spec, " ", "-")
		_, err := c.Set(ctx, schedule.Schedule{Name: name, Spec: spec, Job: schedule.Job{Tube: "t"}})
		if never != errors.Is(err, schedule.ErrInvalidSpec) || never && !strings.Contains(err.Error(), "never fires") {
			t.Errorf("Set %q: %v", spec, err)
		}
		if never {
			if _, err := c.Get(ctx, name); !errors.Is(err, schedule.ErrNotFound) {
				t.Errorf("Get after the refused Set %q: %v", spec, err)
			}
		}
	}
	s.Close()
	if _, err := c.Get(ctx, "x"); !errors.Is(err, schedule.ErrClosed) {
		t.Errorf("Get after Close: %v", err)
	}
}

func TestParseJobKey(t *testing.T) {
	tick := time.Date(2026, 3, 29, 1, 0, 0, 123e6, time.UTC)
	for _, name := range []string{"nightly", "a:b:c", "x"} {
		got, gotTick, ok := schedule.ParseJobKey(schedule.JobKey(name, tick))
		if !ok || got != name || !gotTick.Equal(tick) {
			t.Errorf("ParseJobKey(JobKey(%q, %v)) = %q, %v, %v", name, tick, got, gotTick, ok)
		}
	}
	for _, key := range []string{"", "k", "schedule:", "schedule:x", "schedule::1", "schedule:x:", "schedule:x:1.5", "other:x:1", "schedule:bad name:1"} {
		if name, tick, ok := schedule.ParseJobKey(key); ok {
			t.Errorf("ParseJobKey(%q) = %q, %v, true; want not a schedule's key", key, name, tick)
		}
	}
}
