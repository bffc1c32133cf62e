package schedule_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/internal/testkit/storetest"
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

// Run waits on the Client's clock for the next tick and fires it once
// that clock gets there, however little time the machine's clock has
// moved: the store and the Client are on one manual clock.
func TestRunWaitsOnTheClock(t *testing.T) {
	clk := storetest.NewClock(time.Date(2030, 1, 1, 0, 0, 30, 0, time.UTC))
	s, err := memstore.New(&memstore.Options{Clock: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fired := make(chan time.Time, 10)
	c, err := schedule.New(s.Schedules(), &schedule.Options{Clock: clk, OnFire: func(_ string, f schedule.Fire) { fired <- f.Tick }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, err := c.Set(ctx, schedule.Schedule{Name: "hourly", Spec: "0 * * * *", Job: schedule.Job{Tube: "t"}}); err != nil {
		t.Fatal(err)
	}
	armed := clk.Armed()
	ran := make(chan error, 1)
	go func() { ran <- c.Run(ctx) }()
	if err := clk.WaitArmed(ctx, armed+1); err != nil {
		t.Fatalf("Run did not wait on the clock: %v", err)
	}
	select {
	case tick := <-fired:
		t.Fatalf("a tick of %v fired before its time", tick)
	default:
	}
	clk.Advance(time.Hour)
	select {
	case tick := <-fired:
		if want := time.Date(2030, 1, 1, 1, 0, 0, 0, time.UTC); !tick.Equal(want) {
			t.Fatalf("fired the tick of %v, want %v", tick, want)
		}
	case <-ctx.Done():
		t.Fatal("no tick fired once the clock passed it")
	}
	cancel()
	if err := <-ran; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run: %v, want context.Canceled", err)
	}
}
