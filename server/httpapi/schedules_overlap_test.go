package httpapi_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/internal/testkit/storetest"
	"github.com/hourglass-io/hourglass/memstore"
	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/schedule"
	"github.com/hourglass-io/hourglass/server/httpapi"
)

// A schedule's overlap policy and pause on failure over HTTP: set, shown
// in a get with its skips and why it paused itself, refused when unknown;
// the skips, the self-pauses and the cancels of the previous job counted
// on /metrics.
func TestScheduleOverlapHTTPAndMetrics(t *testing.T) {
	clock := storetest.NewClock(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC))
	ms, err := memstore.New(&memstore.Options{Clock: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ms.Close() })
	m := httpapi.NewMetrics(nil)
	c, err := schedule.New(m.WatchSchedules(ms.Schedules()), nil)
	if err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, ms, func(s *httpapi.Server) { s.Schedules = c; s.Metrics = m })
	ctx := context.Background()
	fire := func() {
		t.Helper()
		clock.Advance(time.Minute)
		if _, err := c.FireDue(ctx); err != nil {
			t.Fatal(err)
		}
	}
	set := func(name, overlap string, pof bool) httpapi.ScheduleState {
		return ts.c.setSchedule(t, name, map[string]any{"spec": "@every 1m",
			"job": map[string]any{"tube": name, "ttr_ms": 600000}, "overlap": overlap, "pause_on_failure": pof})
	}
	if st := set("s", "skip", true); st.Overlap != "skip" || !st.PauseOnFailure {
		t.Fatalf("set: overlap %q pause_on_failure %v", st.Overlap, st.PauseOnFailure)
	}
	set("c", "cancel_previous", false)
	fire() // both put a job
	fire() // s: skipped (its job is ready); c: cancels its job, puts another
	st := ts.c.getSchedule(t, "s")
	if st.Fires != 1 || st.Skips != 1 || st.LastJobID == 0 {
		t.Fatalf("s after a skipped tick: fires %d skips %d last job %d", st.Fires, st.Skips, st.LastJobID)
	}
	// s's job buried: the next tick pauses it, and says why.
	job, err := ts.q.Reserve(ctx, queue.ReserveOptions{Tubes: []string{"s"}, Timeout: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := ts.q.BuryWithReason(ctx, job.ID, 0, "disk full"); err != nil {
		t.Fatal(err)
	}
	fire()
	st = ts.c.getSchedule(t, "s")
	if !st.Paused || st.PauseReason != schedule.PauseReasonBuried(uint64(job.ID), "disk full") || st.Skips != 2 {
		t.Fatalf("s after its job was buried: paused %v reason %q skips %d", st.Paused, st.PauseReason, st.Skips)
	}
	if n := counter(t, m, httpapi.MetricScheduleSkips, nil); n != 2 {
		t.Errorf("skips: %v, want 2", n)
	}
	if n := counter(t, m, httpapi.MetricScheduleSelfPauses, nil); n != 1 {
		t.Errorf("self-pauses: %v, want 1", n)
	}
	if n := counter(t, m, httpapi.MetricScheduleCancels, nil); n != 2 {
		t.Errorf("previous jobs cancelled: %v, want 2", n)
	}
	var resumed httpapi.ScheduleState
	ts.c.do(req{method: "POST", path: schedPath("s", "resume")}).want(t, http.StatusOK, "").decode(t, &resumed)
	if resumed.Paused || resumed.PauseReason != "" {
		t.Errorf("after a resume: paused %v reason %q", resumed.Paused, resumed.PauseReason)
	}
}
