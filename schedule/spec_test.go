package schedule

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func mustZone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := LoadZone(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func TestDailyBerlinAcrossDST(t *testing.T) {
	berlin := mustZone(t, "Europe/Berlin")
	spec, err := ParseSpec("30 2 * * *", berlin)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		after time.Time
		want  []string // RFC 3339 instants
	}{
		{"spring forward: 02:30 skipped, fires at 03:00 CEST",
			time.Date(2026, 3, 28, 12, 0, 0, 0, berlin),
			[]string{"2026-03-29T03:00:00+02:00", "2026-03-30T02:30:00+02:00"}},
		{"fall back: 02:30 twice, fires once at the first",
			time.Date(2026, 10, 24, 12, 0, 0, 0, berlin),
			[]string{"2026-10-25T02:30:00+02:00", "2026-10-26T02:30:00+01:00"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := spec.Next(c.after, time.Time{}, len(c.want))
			if len(got) != len(c.want) {
				t.Fatalf("got %v", got)
			}
			for i, g := range got {
				w, _ := time.Parse(time.RFC3339, c.want[i])
				if !g.Equal(w) {
					t.Errorf("tick %d = %v, want %v", i, g.In(berlin), w)
				}
			}
		})
	}
	// From inside the repeated hour's second pass, the next tick is the next day's.
	secondPass := time.Date(2026, 10, 25, 1, 10, 0, 0, time.UTC) // 02:10 CET
	if got, want := spec.NextAfter(secondPass, time.Time{}), time.Date(2026, 10, 26, 1, 30, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("from the second 02:10: %v, want %v", got, want)
	}
}

func TestHourlyAcrossGap(t *testing.T) {
	berlin := mustZone(t, "Europe/Berlin")
	spec, err := ParseSpec("*/30 * * * *", berlin)
	if err != nil {
		t.Fatal(err)
	}
	got := spec.Next(time.Date(2026, 3, 29, 1, 15, 0, 0, berlin), time.Time{}, 3)
	want := []time.Time{
		time.Date(2026, 3, 29, 1, 30, 0, 0, berlin),
		time.Date(2026, 3, 29, 3, 0, 0, 0, berlin), // 02:00 and 02:30 collapse into 03:00
		time.Date(2026, 3, 29, 3, 30, 0, 0, berlin),
	}
	for i := range want {
		if !got[i].Equal(want[i]) {
			t.Errorf("tick %d = %v, want %v", i, got[i].In(berlin), want[i])
		}
	}
}

func TestParseSpecForms(t *testing.T) {
	utc := time.UTC
	from := time.Date(2026, 1, 1, 0, 0, 0, 0, utc)
	cases := []struct {
		spec string
		want time.Time
	}{
		{"*/5 * * * *", from.Add(5 * time.Minute)},
		{"15 * * * * *", from.Add(15 * time.Second)},
		{"@hourly", from.Add(time.Hour)},
		{"@daily", from.Add(24 * time.Hour)},
		{"@every 90s", time.Unix(0, 0).Add((from.Sub(time.Unix(0, 0))/(90*time.Second) + 1) * 90 * time.Second)},
		{"0 9 * * MON", time.Date(2026, 1, 5, 9, 0, 0, 0, utc)},
	}
	for _, c := range cases {
		s, err := ParseSpec(c.spec, utc)
		if err != nil {
			t.Fatalf("%q: %v", c.spec, err)
		}
		if got := s.NextAfter(from, time.Time{}); !got.Equal(c.want) {
			t.Errorf("%q: next = %v, want %v", c.spec, got, c.want)
		}
	}
}

func TestParseSpecErrorsNameField(t *testing.T) {
	cases := []struct{ spec, field string }{
		{"61 * * * *", "minute"},
		{"* 25 * * *", "hour"},
		{"* * 32 * *", "day of month"},
		{"* * * 13 *", "month"},
		{"* * * * FUN", "day of week"},
		{"99 * * * * *", "second"},
		{"* * *", "fields"},
		{"@sometimes", "macro"},
		{"@every fast", "interval"},
		{"@every 1ms", "minimum"},
		{"TZ=UTC * * * * *", "Zone"},
	}
	for _, c := range cases {
		_, err := ParseSpec(c.spec, nil)
		if !errors.Is(err, ErrInvalidSpec) {
			t.Errorf("%q: err %v, want ErrInvalidSpec", c.spec, err)
			continue
		}
		if !strings.Contains(err.Error(), c.field) {
			t.Errorf("%q: %v does not name %q", c.spec, err, c.field)
		}
	}
}

func TestEveryAnchoredOnStart(t *testing.T) {
	s, _ := ParseSpec("@every 100ms", nil)
	start := time.UnixMilli(1_000_037)
	if got := s.NextAfter(start.Add(250*time.Millisecond), start); !got.Equal(start.Add(300 * time.Millisecond)) {
		t.Errorf("got %v", got)
	}
	if got := s.NextAfter(start.Add(-time.Hour), start); !got.Equal(start) {
		t.Errorf("before start: got %v", got)
	}
}

func TestPlanFirePolicies(t *testing.T) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	sched := func(p Policy) (*Schedule, *Spec) {
		s := &Schedule{Name: "s", Spec: "@every 1m", Start: base, Job: Job{Tube: "t"}, Misfire: p, Grace: 10 * time.Second}
		spec, err := s.Validate()
		if err != nil {
			t.Fatal(err)
		}
		return s, spec
	}
	now := base.Add(5*time.Minute + 2*time.Second) // ticks 0..5 due, 5 within grace
	cases := []struct {
		p    Policy
		want Plan
	}{
		{Skip(), Plan{Tick: base.Add(5 * time.Minute), Skipped: 5, Next: base.Add(6 * time.Minute)}},
		{FireOnce(), Plan{Tick: base.Add(5 * time.Minute), Skipped: 5, Next: base.Add(6 * time.Minute)}},
		{CatchUp(2), Plan{Tick: base.Add(4 * time.Minute), Skipped: 4, Next: base.Add(5 * time.Minute)}},
		{CatchUp(100), Plan{Tick: base, Skipped: 0, Next: base.Add(time.Minute)}},
	}
	for _, c := range cases {
		s, spec := sched(c.p)
		if got := s.PlanFire(spec, base, now); got != c.want {
			t.Errorf("%v: %+v, want %+v", c.p, got, c.want)
		}
	}
	// Skip past the grace drops everything.
	s, spec := sched(Skip())
	late := base.Add(5*time.Minute + 30*time.Second)
	if got, want := s.PlanFire(spec, base, late), (Plan{Skipped: 6, Next: base.Add(6 * time.Minute)}); got != want {
		t.Errorf("skip late: %+v, want %+v", got, want)
	}
	// FireOnce past the grace fires the latest.
	s, spec = sched(FireOnce())
	if got, want := s.PlanFire(spec, base, late), (Plan{Tick: base.Add(5 * time.Minute), Skipped: 5, Next: base.Add(6 * time.Minute)}); got != want {
		t.Errorf("fire-once late: %+v, want %+v", got, want)
	}
}

func TestValidateNamesField(t *testing.T) {
	ok := Schedule{Name: "n", Spec: "@daily", Job: Job{Tube: "t"}}
	cases := []struct {
		mut  func(*Schedule)
		want error
		word string
	}{
		{func(s *Schedule) { s.Name = "" }, ErrInvalidName, "Name"},
		{func(s *Schedule) { s.Zone = "Mars/Base" }, ErrInvalidZone, "Zone"},
		{func(s *Schedule) { s.Spec = "x" }, ErrInvalidSpec, "Spec"},
		{func(s *Schedule) { s.Job.Tube = "" }, ErrInvalidOption, "Job.Tube"},
		{func(s *Schedule) { s.Job.TTR = time.Millisecond }, ErrInvalidOption, "Job.TTR"},
		{func(s *Schedule) { s.Misfire = CatchUp(0) }, ErrInvalidOption, "Misfire"},
		{func(s *Schedule) { s.Grace = -1 }, ErrInvalidOption, "Grace"},
		{func(s *Schedule) { s.Start = time.Unix(10, 0); s.End = time.Unix(5, 0) }, ErrInvalidOption, "End"},
	}
	for _, c := range cases {
		s := ok
		c.mut(&s)
		_, err := s.Validate()
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.word) {
			t.Errorf("%v: want %v naming %s", err, c.want, c.word)
		}
	}
	if _, err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
}
