package memstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hourglass-io/hourglass/internal/testkit/storetest"
	"github.com/hourglass-io/hourglass/memstore"
	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/schedule"
)

func TestScheduleConformance(t *testing.T) {
	for _, disk := range []bool{false, true} {
		t.Run(map[bool]string{false: "memory", true: "disk"}[disk], func(t *testing.T) {
			storetest.Schedule(t, func(t *testing.T, clock *storetest.Clock) (schedule.Store, queue.Store) {
				var s *memstore.Store
				var err error
				if disk {
					s, err = memstore.Open(t.TempDir(), &memstore.Options{Clock: clock.Now})
				} else {
					s, err = memstore.New(&memstore.Options{Clock: clock.Now})
				}
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close() })
				return s.Schedules(), s
			})
		})
	}
}

// TestScheduleOverlapRestart: a restart keeps the schedules' overlap
// fields (policy, PauseOnFailure, skips, the pause's reason, the last
// job) and a buffer_one job held behind its running job, from the log
// alone and from a snapshot: the running job comes back ready (a
// reservation is not durable), the held job still held, and the held job
// becomes ready when the running job is deleted.
func TestScheduleOverlapRestart(t *testing.T) {
	for _, snapshot := range []bool{false, true} {
		t.Run(map[bool]string{false: "log", true: "snapshot"}[snapshot], func(t *testing.T) {
			base := time.Date(2026, 1, 5, 12, 0, 0, 0, time.UTC)
			clock := storetest.NewClock(base)
			dir := t.TempDir()
			open := func() (*memstore.Store, *schedule.Client) {
				s, err := memstore.Open(dir, &memstore.Options{Clock: clock.Now})
				if err != nil {
					t.Fatal(err)
				}
				c, _ := schedule.New(s.Schedules(), nil)
				return s, c
			}
			s, c := open()
			ctx := t.Context()
			set := func(name string, o schedule.Overlap, pof bool) {
				if _, err := c.Set(ctx, schedule.Schedule{Name: name, Spec: "@every 1m", Overlap: o, PauseOnFailure: pof, Job: schedule.Job{Tube: name, TTR: time.Hour}}); err != nil {
					t.Fatal(err)
				}
			}
			set("buf", schedule.OverlapBufferOne, false)
			set("pof", schedule.OverlapSkip, true)
			tick := func() {
				clock.Advance(time.Minute)
				if _, err := c.FireDue(ctx); err != nil {
					t.Fatal(err)
				}
			}
			reserve := func(tube string) queue.ID {
				res, err := s.Reserve(ctx, queue.ReserveRequest{Owner: "w", Tubes: []string{tube}, Max: 1})
				if err != nil || len(res.Jobs) != 1 {
					t.Fatalf("Reserve %s: %+v %v", tube, res.Jobs, err)
				}
				return res.Jobs[0].ID
			}
			tick() // both put their first job
			tick() // both skip: the previous job is ready
			a := reserve("buf")
			p := reserve("pof")
			if err := s.Bury(ctx, "w", p, 0, "boom"); err != nil {
				t.Fatal(err)
			}
			tick() // buf: a job held behind a; pof: pauses itself
			if snapshot {
				if err := memstore.Compact(s); err != nil {
					t.Fatal(err)
				}
			}
			want := map[string]schedule.State{}
			for _, n := range []string{"buf", "pof"} {
				st, err := c.Get(ctx, n)
				if err != nil {
					t.Fatal(err)
				}
				want[n] = st
			}
			b := queue.ID(want["buf"].LastJob)
			if b == a || want["buf"].Skips != 1 || want["buf"].Overlap != schedule.OverlapBufferOne {
				t.Fatalf("before the restart: %+v", want["buf"])
			}
			if !want["pof"].Paused || want["pof"].PauseReason == "" || want["pof"].Skips != 2 || !want["pof"].PauseOnFailure {
				t.Fatalf("before the restart: %+v", want["pof"])
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s, c = open()
			defer s.Close()
			for n, w := range want {
				st, err := c.Get(ctx, n)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(w, st); diff != "" {
					t.Errorf("%s after the restart (-want +got):\n%s", n, diff)
				}
			}
			if js, err := s.StatsJob(ctx, b); err != nil || js.State != queue.Delayed || js.TimeLeft != 0 {
				t.Fatalf("held job after the restart: %v %v %v", js.State, js.TimeLeft, err)
			}
			if got := reserve("buf"); got != a {
				t.Fatalf("reserved %d after the restart, want the running job %d back", got, a)
			}
			if errs, err := s.Delete(ctx, "w", []queue.ID{a}); err != nil || errs[0] != nil {
				t.Fatal(errs, err)
			}
			if got := reserve("buf"); got != b {
				t.Fatalf("reserved %d after the running job's delete, want the held job %d", got, b)
			}
		})
	}
}

// A restart with ticks missed applies each schedule's misfire policy, from
// the log alone and from a snapshot.
func TestScheduleRestartMisfire(t *testing.T) {
	for _, snapshot := range []bool{false, true} {
		t.Run(map[bool]string{false: "log", true: "snapshot"}[snapshot], func(t *testing.T) {
			base := time.Date(2026, 1, 5, 12, 0, 0, 0, time.UTC)
			clock := storetest.NewClock(base)
			dir := t.TempDir()
			open := func() (*memstore.Store, *schedule.Client) {
				s, err := memstore.Open(dir, &memstore.Options{Clock: clock.Now})
				if err != nil {
					t.Fatal(err)
				}
				c, _ := schedule.New(s.Schedules(), nil)
				return s, c
			}
			s, c := open()
			ctx := t.Context()
			policies := map[string]schedule.Policy{"skip": schedule.Skip(), "once": schedule.FireOnce(), "catchup": schedule.CatchUp(3)}
			for name, p := range policies {
				if _, err := c.Set(ctx, schedule.Schedule{Name: name, Spec: "@every 1m", Misfire: p, Grace: 10 * time.Second, Job: schedule.Job{Tube: name}}); err != nil {
					t.Fatal(err)
				}
			}
			clock.Advance(time.Minute)
			if _, err := c.FireDue(ctx); err != nil {
				t.Fatal(err)
			}
			if snapshot {
				if err := memstore.Compact(s); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			clock.Advance(10*time.Minute + 30*time.Second) // ticks 2..11 missed, the last 30 s late
			s, c = open()
			defer s.Close()
			if _, err := c.FireDue(ctx); err != nil {
				t.Fatal(err)
			}
			want := map[string]struct{ jobs, fires, misfires int }{
				"skip": {1, 1, 10}, "once": {2, 2, 9}, "catchup": {4, 4, 7},
			}
			for name, w := range want {
				st, err := c.Get(ctx, name)
				if err != nil {
					t.Fatal(err)
				}
				res, err := s.Reserve(ctx, queue.ReserveRequest{Owner: "t", Tubes: []string{name}, Max: 100})
				if err != nil {
					t.Fatal(err)
				}
				if len(res.Jobs) != w.jobs || int(st.Fires) != w.fires || int(st.Misfires) != w.misfires {
					t.Errorf("%s: %d jobs, %d fires, %d misfires; want %+v", name, len(res.Jobs), st.Fires, st.Misfires, w)
				}
				if !st.Next.Equal(base.Add(12 * time.Minute)) {
					t.Errorf("%s: next %v", name, st.Next)
				}
			}
		})
	}
}

// Run fires a schedule set while it waits, woken by the store, with one
// timer to the tick.
func TestScheduleRunWakes(t *testing.T) {
	s, err := memstore.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fired := make(chan schedule.Fire, 10)
	c, _ := schedule.New(s.Schedules(), &schedule.Options{OnFire: func(_ string, f schedule.Fire) { fired <- f }})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	// Another client declares the schedule; the running one is woken.
	other, _ := schedule.New(s.Schedules(), nil)
	if _, err := other.Set(ctx, schedule.Schedule{Name: "w", Spec: "@every 20ms", Job: schedule.Job{Tube: "w"}}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		select {
		case f := <-fired:
			if f.Lateness > time.Second {
				t.Errorf("lateness %v", f.Lateness)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("no fire within 5 s")
		}
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run: %v", err)
	}
}

// A fire into a store at its job cap is refused with queue.ErrFull and
// puts nothing.
func TestScheduleFireFull(t *testing.T) {
	s, err := memstore.New(&memstore.Options{MaxJobs: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ctx := t.Context()
	if _, err := s.Put(ctx, "full", []queue.NewJob{{Body: []byte("x")}}); err != nil {
		t.Fatal(err)
	}
	c, _ := schedule.New(s.Schedules(), nil)
	if _, err := c.Set(ctx, schedule.Schedule{Name: "f", Spec: "@hourly", Job: schedule.Job{Tube: "full"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Trigger(ctx, "f"); !errors.Is(err, queue.ErrFull) {
		t.Fatalf("a trigger into a full store: %v, want queue.ErrFull", err)
	}
	if st, err := s.StatsTube(ctx, "full"); err != nil || st.Ready != 1 {
		t.Fatalf("the tube holds %d ready jobs (%v), want 1", st.Ready, err)
	}
}
