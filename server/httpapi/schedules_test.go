package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/internal/testkit/backendtest"
	"github.com/hourglass-io/hourglass/internal/testkit/storetest"
	"github.com/hourglass-io/hourglass/memstore"
	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/schedule"
	"github.com/hourglass-io/hourglass/server/httpapi"
)

// startScheduleServer serves the queue and the schedules of store.
func startScheduleServer(t testing.TB, store queue.Store, configure func(*httpapi.Server)) *testServer {
	t.Helper()
	sc := scheduleClient(t, storesOf(t, store).schedules)
	return startServer(t, store, func(s *httpapi.Server) {
		s.Schedules = sc
		if configure != nil {
			configure(s)
		}
	})
}

func schedPath(name string, op ...string) string {
	p := "/v1/schedules/" + url.PathEscape(name)
	for _, o := range op {
		p += "/" + o
	}
	return p
}

func (c *client) setSchedule(t testing.TB, name string, body map[string]any) httpapi.ScheduleState {
	t.Helper()
	var st httpapi.ScheduleState
	c.do(req{method: "PUT", path: schedPath(name), json: body}).want(t, http.StatusOK, "").decode(t, &st)
	return st
}

func (c *client) getSchedule(t testing.TB, name string) httpapi.ScheduleState {
	t.Helper()
	var st httpapi.ScheduleState
	c.do(req{method: "GET", path: schedPath(name)}).want(t, http.StatusOK, "").decode(t, &st)
	return st
}

func nightly(tube string) map[string]any {
	return map[string]any{
		"spec": "30 2 * * *", "zone": "Europe/Berlin",
		"job":     map[string]any{"tube": tube, "body": `{"kind":"nightly"}`, "ttr_ms": 60000},
		"misfire": map[string]any{"policy": "catch_up", "n": 3},
	}
}

// A schedule set, read, listed, triggered, paused, resumed and deleted
// over HTTP, on each back end.
func TestScheduleLifecycle(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open func(testing.TB) queue.Store) {
		ts := startScheduleServer(t, open(t), nil)
		c := ts.c
		ctx := context.Background()

		st := c.setSchedule(t, "nightly-report", nightly("reports"))
		if st.Name != "nightly-report" || st.Spec != "30 2 * * *" || st.Zone != "Europe/Berlin" || st.Job.Tube != "reports" ||
			st.Job.Body == nil || *st.Job.Body != `{"kind":"nightly"}` || st.Job.Priority != queue.DefaultPriority || st.Job.TTRMS != 60000 ||
			st.Misfire != (httpapi.ScheduleMisfire{Policy: "catch_up", N: 3}) || st.Paused || st.Fires != 0 || len(st.Last) != 0 {
			t.Fatalf("set returned %+v", st)
		}
		next, err := time.Parse(time.RFC3339, st.Next)
		berlin, _ := time.LoadLocation("Europe/Berlin")
		if err != nil || !next.After(time.Now()) || next.Sub(time.Now()) > 25*time.Hour || next.In(berlin).Minute() != 30 && next.In(berlin).Hour() != 3 {
			t.Fatalf("next %q (%v): want the next 02:30 in Berlin", st.Next, err)
		}
		// Idempotent: the same definition again changes nothing.
		if again := c.setSchedule(t, "nightly-report", nightly("reports")); again.Version != st.Version || again.Next != st.Next {
			t.Fatalf("setting the same definition again: version %d → %d, next %s → %s", st.Version, again.Version, st.Next, again.Next)
		}
		if got := c.getSchedule(t, "nightly-report"); got.Version != st.Version || got.Spec != st.Spec {
			t.Fatalf("get: %+v, want %+v", got, st)
		}

		// The next fire times, in the schedule's zone, a day apart.
		var times httpapi.ScheduleTimes
		c.do(req{method: "GET", path: schedPath("nightly-report", "next") + "?n=3"}).want(t, http.StatusOK, "").decode(t, &times)
		if len(times.Times) != 3 || times.Times[0] != st.Next {
			t.Fatalf("next?n=3: %v, want 3 times starting at %s", times.Times, st.Next)
		}
		for i := 1; i < 3; i++ {
			a, _ := time.Parse(time.RFC3339, times.Times[i-1])
			b, _ := time.Parse(time.RFC3339, times.Times[i])
			if d := b.Sub(a); d < 23*time.Hour || d > 25*time.Hour {
				t.Errorf("next times %v are not a day apart", times.Times)
			}
		}
		c.do(req{method: "GET", path: schedPath("nightly-report", "next")}).want(t, http.StatusOK, "").decode(t, &times)
		if len(times.Times) != httpapi.DefaultScheduleNext {
			t.Errorf("next without n: %d times, want %d", len(times.Times), httpapi.DefaultScheduleNext)
		}

		// Trigger: the job is in the tube now, the next tick unchanged.
		var f httpapi.ScheduleFire
		c.do(req{method: "POST", path: schedPath("nightly-report", "trigger")}).want(t, http.StatusOK, "").decode(t, &f)
		if f.JobID == 0 || !f.Manual || f.Tick == "" {
			t.Fatalf("trigger: %+v", f)
		}
		j, err := ts.q.Peek(ctx, queue.ID(f.JobID))
		if err != nil || j.Tube != "reports" || string(j.Body) != `{"kind":"nightly"}` || j.TTR != time.Minute {
			t.Fatalf("the triggered job: %+v, %v", j, err)
		}
		// The job's view carries its tick in its unique key.
		var view httpapi.JobView
		c.do(req{method: "GET", path: fmt.Sprintf("/v1/jobs/%d", f.JobID)}).want(t, http.StatusOK, "").decode(t, &view)
		fireTick, _ := time.Parse(time.RFC3339Nano, f.Tick)
		if name, tick, ok := schedule.ParseJobKey(view.UniqueKey); !ok || name != "nightly-report" || !tick.Equal(fireTick.Truncate(time.Millisecond)) {
			t.Errorf("the triggered job's unique_key %q reads as (%q, %v, %v), want the fire's tick %s", view.UniqueKey, name, tick, ok, f.Tick)
		}
		got := c.getSchedule(t, "nightly-report")
		if got.Fires != 1 || len(got.Last) != 1 || got.Last[0] != f || got.Next != st.Next {
			t.Fatalf("after a trigger: %+v, want one manual fire %+v and next %s", got, f, st.Next)
		}

		// Pause and resume.
		var p httpapi.ScheduleState
		c.do(req{method: "POST", path: schedPath("nightly-report", "pause")}).want(t, http.StatusOK, "").decode(t, &p)
		if !p.Paused || !c.getSchedule(t, "nightly-report").Paused {
			t.Fatalf("pause: %+v", p)
		}
		c.do(req{method: "POST", path: schedPath("nightly-report", "resume")}).want(t, http.StatusOK, "").decode(t, &p)
		if p.Paused || p.Next != st.Next {
			t.Fatalf("resume: %+v, want unpaused with next %s", p, st.Next)
		}

		// An update: a new version, the counts kept; the tube may not change.
		upd := nightly("reports")
		upd["spec"] = "@every 1h"
		upd["start"] = "2026-01-01T00:15:00Z"
		u := c.setSchedule(t, "nightly-report", upd)
		if u.Version <= p.Version || u.Spec != "@every 1h" || u.Fires != 1 || !strings.HasPrefix(u.Start, "2026-01-01T01:15:00+01:00") {
			t.Fatalf("update: %+v", u)
		}
		if nt, _ := time.Parse(time.RFC3339, u.Next); nt.Minute() != 15 {
			t.Errorf("an @every 1h anchored at :15 next ticks at %s", u.Next)
		}
		c.do(req{method: "PUT", path: schedPath("nightly-report"), json: nightly("elsewhere")}).want(t, http.StatusBadRequest, httpapi.CodeBadRequest)
		if g := c.getSchedule(t, "nightly-report"); g.Version != u.Version || g.Job.Tube != "reports" {
			t.Fatalf("a refused change of tube changed the schedule: %+v", g)
		}

		// List, a page at a time, in name order.
		for _, n := range []string{"a-1", "a-2", "a-3"} {
			c.setSchedule(t, n, map[string]any{"spec": "@hourly", "job": map[string]any{"tube": "t", "body_base64": "/w=="}})
		}
		var l httpapi.ScheduleList
		c.do(req{method: "GET", path: "/v1/schedules?limit=2"}).want(t, http.StatusOK, "").decode(t, &l)
		if len(l.Schedules) != 2 || l.Schedules[0].Name != "a-1" || l.Schedules[1].Name != "a-2" || l.NextAfter != "a-2" {
			t.Fatalf("first page: %+v", l)
		}
		if l.Schedules[0].Job.Body != nil || l.Schedules[0].Job.BodyBase64 != "/w==" || l.Schedules[0].Misfire.Policy != "skip" || l.Schedules[0].Zone != "" {
			t.Errorf("a schedule with a binary body and defaults lists as %+v", l.Schedules[0])
		}
		l = httpapi.ScheduleList{}
		c.do(req{method: "GET", path: "/v1/schedules?after=a-2"}).want(t, http.StatusOK, "").decode(t, &l)
		if len(l.Schedules) != 2 || l.Schedules[0].Name != "a-3" || l.Schedules[1].Name != "nightly-report" || l.NextAfter != "" {
			t.Fatalf("second page: %+v", l)
		}

		// Delete; then every call on the name is 404.
		c.do(req{method: "DELETE", path: schedPath("a-2")}).want(t, http.StatusNoContent, "")
		for _, r := range []req{
			{method: "GET", path: schedPath("a-2")},
			{method: "DELETE", path: schedPath("a-2")},
			{method: "POST", path: schedPath("a-2", "pause")},
			{method: "POST", path: schedPath("a-2", "resume")},
			{method: "POST", path: schedPath("a-2", "trigger")},
			{method: "GET", path: schedPath("a-2", "next")},
		} {
			c.do(r).want(t, http.StatusNotFound, httpapi.CodeNotFound)
		}
		c.do(req{method: "GET", path: "/v1/schedules"}).want(t, http.StatusOK, "").decode(t, &l)
		if len(l.Schedules) != 3 {
			t.Fatalf("after a delete the list holds %d schedules, want 3", len(l.Schedules))
		}
	})
}

// Bad input is 400 bad_request naming the field, and changes nothing: no
// schedule, no job, no new version.
func TestScheduleBadInput(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open func(testing.TB) queue.Store) {
		ts := startScheduleServer(t, open(t), nil)
		c := ts.c
		before := c.setSchedule(t, "kept", nightly("reports"))
		jobs := countJobs(t, ts.q)

		with := func(change func(m map[string]any)) map[string]any {
			m := nightly("reports")
			change(m)
			return m
		}
		job := func(m map[string]any) map[string]any { return m["job"].(map[string]any) }
		for _, tc := range []struct {
			name  string
			path  string
			body  any
			field string
		}{
			{"bad cron", "", with(func(m map[string]any) { m["spec"] = "61 * * * *" }), "spec"},
			{"empty spec", "", with(func(m map[string]any) { m["spec"] = "" }), "spec"},
			{"every too short", "", with(func(m map[string]any) { m["spec"] = "@every 1ms" }), "interval"},
			{"zone", "", with(func(m map[string]any) { m["zone"] = "Mars/Olympus" }), "zone"},
			{"local zone", "", with(func(m map[string]any) { m["zone"] = "Local" }), "zone"},
			{"start", "", with(func(m map[string]any) { m["start"] = "yesterday" }), "start"},
			{"end before start", "", with(func(m map[string]any) { m["start"] = "2026-02-01T00:00:00Z"; m["end"] = "2026-01-01T00:00:00Z" }), "end"},
			{"tube", "", with(func(m map[string]any) { job(m)["tube"] = "-bad" }), "job.tube"},
			{"no tube", "", with(func(m map[string]any) { delete(job(m), "tube") }), "job.tube"},
			{"both bodies", "", with(func(m map[string]any) { job(m)["body_base64"] = "AA==" }), "body_base64"},
			{"bad base64", "", with(func(m map[string]any) { delete(job(m), "body"); job(m)["body_base64"] = "!!" }), "body_base64"},
			{"body too big", "", with(func(m map[string]any) { job(m)["body"] = strings.Repeat("x", 64<<10+1) }), "job.body"},
			{"short ttr", "", with(func(m map[string]any) { job(m)["ttr_ms"] = 500 }), "job.ttr_ms"},
			{"negative ttr", "", with(func(m map[string]any) { job(m)["ttr_ms"] = -1 }), "ttr_ms"},
			{"priority", "", with(func(m map[string]any) { job(m)["priority"] = 1 << 32 }), "priority"},
			{"policy", "", with(func(m map[string]any) { m["misfire"] = map[string]any{"policy": "sometimes"} }), "misfire.policy"},
			{"catch-up n", "", with(func(m map[string]any) { m["misfire"] = map[string]any{"policy": "catch_up"} }), "misfire"},
			{"n without catch-up", "", with(func(m map[string]any) { m["misfire"] = map[string]any{"policy": "skip", "n": 2} }), "misfire.n"},
			{"grace", "", with(func(m map[string]any) { m["grace_ms"] = -5 }), "grace_ms"},
			{"overlap", "", with(func(m map[string]any) { m["overlap"] = "sometimes" }), "overlap"},
			{"pause on failure", "", with(func(m map[string]any) { m["pause_on_failure"] = "yes" }), "pause_on_failure"},
			{"unknown field", "", with(func(m map[string]any) { m["cron"] = "x" }), "cron"},
			{"name with a space", schedPath("a b"), nightly("reports"), "name"},
			{"long name", schedPath(strings.Repeat("n", 201)), nightly("reports"), "name"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				path := tc.path
				if path == "" {
					path = schedPath("kept")
				}
				r := c.do(req{method: "PUT", path: path, json: tc.body, offSpec: true}).want(t, http.StatusBadRequest, httpapi.CodeBadRequest)
				if !strings.Contains(string(r.body), tc.field) {
					t.Errorf("%s does not name %s", r.body, tc.field)
				}
				if strings.Contains(string(r.body), "schedule: ") || strings.Contains(string(r.body), "Go struct") {
					t.Errorf("%s speaks of Go", r.body)
				}
			})
		}
		for _, r := range []req{
			{method: "PUT", path: schedPath("kept"), raw: []byte("{"), contentType: "application/json", offSpec: true},
			{method: "GET", path: "/v1/schedules?limit=0", offSpec: true},
			{method: "GET", path: "/v1/schedules?limit=1001", offSpec: true},
			{method: "GET", path: "/v1/schedules?limit=x", offSpec: true},
			{method: "GET", path: schedPath("kept", "next") + "?n=0", offSpec: true},
			{method: "GET", path: schedPath("kept", "next") + "?n=1001", offSpec: true},
			{method: "POST", path: schedPath("a b", "trigger"), offSpec: true},
		} {
			c.do(r).want(t, http.StatusBadRequest, httpapi.CodeBadRequest)
		}
		if after := c.getSchedule(t, "kept"); after.Version != before.Version || after.Next != before.Next || after.Fires != 0 {
			t.Fatalf("bad input changed the schedule: %+v, was %+v", after, before)
		}
		var l httpapi.ScheduleList
		c.do(req{method: "GET", path: "/v1/schedules"}).want(t, http.StatusOK, "").decode(t, &l)
		if len(l.Schedules) != 1 {
			t.Fatalf("bad input left %d schedules, want 1", len(l.Schedules))
		}
		if got := countJobs(t, ts.q); got != jobs {
			t.Fatalf("bad input changed the jobs: %+v → %+v", jobs, got)
		}
		// A method the route does not serve names the ones it does.
		r := c.do(req{method: "POST", path: schedPath("kept"), offSpec: true}).want(t, http.StatusMethodNotAllowed, httpapi.CodeNotAllowed)
		if a := r.header.Get("Allow"); a != "GET, HEAD, PUT, DELETE" {
			t.Errorf("Allow: %q", a)
		}
	})
}

// Without a schedule store the routes are not there.
func TestSchedulesOff(t *testing.T) {
	c := startServer(t, memStore(t), nil).c
	c.do(req{method: "GET", path: "/v1/schedules", offSpec: true}).want(t, http.StatusNotFound, httpapi.CodeNotFound)
}

// A trigger into a store at its job cap is 507 store_full, as a put is, and
// records no fire.
func TestScheduleTriggerFull(t *testing.T) {
	ms := backendtest.MemoryWith(t, &memstore.Options{MaxJobs: 1})
	ts := startScheduleServer(t, ms, nil)
	ts.c.setSchedule(t, "nightly", nightly("full"))
	ts.c.do(req{method: "POST", path: "/v1/tubes/full/jobs", json: map[string]any{"body": "x"}}).want(t, http.StatusCreated, "")
	ts.c.do(req{method: "POST", path: schedPath("nightly", "trigger")}).want(t, http.StatusInsufficientStorage, httpapi.CodeStoreFull)
	if st := ts.c.getSchedule(t, "nightly"); st.Fires != 0 || len(st.Last) != 0 {
		t.Errorf("after a refused trigger: %d fires, last %+v; want none", st.Fires, st.Last)
	}
}

// The fires of a Client over a store WatchSchedules returned are counted:
// ticks of the spec with their lateness, the ticks the misfire policy
// dropped, and triggers over HTTP, apart.
func TestScheduleMetrics(t *testing.T) {
	clock := storetest.NewClock(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC))
	ms, err := memstore.New(&memstore.Options{Clock: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ms.Close() })
	m := httpapi.NewMetrics(nil)
	watched := m.WatchSchedules(ms.Schedules())
	if _, ok := watched.(schedule.Notifier); !ok {
		t.Fatal("the watched store of a Notifier is not a Notifier")
	}
	c, err := schedule.New(watched, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := c.Set(ctx, schedule.Schedule{Name: "minutely", Spec: "@every 1m", Job: schedule.Job{Tube: "m"}}); err != nil {
		t.Fatal(err)
	}
	// Ten ticks pass unfired; the last is 30 s late, within the grace:
	// the skip policy fires it and drops the nine before.
	clock.Advance(10*time.Minute + 30*time.Second)
	if _, err := c.FireDue(ctx); err != nil {
		t.Fatal(err)
	}
	if n := counter(t, m, httpapi.MetricScheduleFires, map[string]string{"manual": "false"}); n != 1 {
		t.Errorf("fires of ticks: %v, want 1", n)
	}
	if n := counter(t, m, httpapi.MetricScheduleMisfires, nil); n != 9 {
		t.Errorf("misfires: %v, want 9", n)
	}
	h := find(t, m, httpapi.MetricScheduleLateness, nil)
	if len(h) != 1 || h[0].GetHistogram().GetSampleCount() != 1 || h[0].GetHistogram().GetSampleSum() != 30 {
		t.Errorf("lateness: %v, want one fire 30 s late", h)
	}
	// On time: the next tick fires with no lateness and drops nothing.
	clock.Advance(30 * time.Second)
	if _, err := c.FireDue(ctx); err != nil {
		t.Fatal(err)
	}
	if n := counter(t, m, httpapi.MetricScheduleFires, map[string]string{"manual": "false"}); n != 2 {
		t.Errorf("fires of ticks: %v, want 2", n)
	}
	if n := counter(t, m, httpapi.MetricScheduleMisfires, nil); n != 9 {
		t.Errorf("misfires after an on-time tick: %v, want 9", n)
	}

	// A trigger over HTTP counts as manual, on the same Metrics.
	ts := startServer(t, ms, func(s *httpapi.Server) { s.Schedules = c; s.Metrics = m })
	ts.c.do(req{method: "POST", path: schedPath("minutely", "trigger")}).want(t, http.StatusOK, "")
	if n := counter(t, m, httpapi.MetricScheduleFires, map[string]string{"manual": "true"}); n != 1 {
		t.Errorf("manual fires: %v, want 1", n)
	}
	if n := counter(t, m, httpapi.MetricScheduleFires, map[string]string{"manual": "false"}); n != 2 {
		t.Errorf("fires of ticks after a trigger: %v, want 2", n)
	}
}

// The schedules' routes, the dashboard's buttons among them, need the
// token and refuse cross-site requests, changing nothing.
func TestScheduleGuarded(t *testing.T) {
	ts := startScheduleServer(t, memStore(t), func(s *httpapi.Server) { s.AuthToken = "secret" })
	c := ts.c
	before := c.setSchedule(t, "guarded", nightly("reports"))
	anon := newClient(t, ts.url, "")
	for _, op := range []string{"pause", "trigger"} {
		anon.do(req{method: "POST", path: schedPath("guarded", op)}).want(t, http.StatusUnauthorized, httpapi.CodeUnauthorized)
		c.do(req{method: "POST", path: schedPath("guarded", op), header: map[string]string{"Sec-Fetch-Site": "cross-site"}}).want(t, http.StatusForbidden, httpapi.CodeCrossSite)
		c.do(req{method: "POST", path: schedPath("guarded", op), header: map[string]string{"Origin": "http://evil.example"}}).want(t, http.StatusForbidden, httpapi.CodeCrossSite)
	}
	anon.do(req{method: "PUT", path: schedPath("guarded"), json: nightly("reports")}).want(t, http.StatusUnauthorized, httpapi.CodeUnauthorized)
	anon.do(req{method: "GET", path: "/v1/schedules"}).want(t, http.StatusUnauthorized, httpapi.CodeUnauthorized)
	if after := c.getSchedule(t, "guarded"); after.Version != before.Version || after.Paused || after.Fires != 0 {
		t.Fatalf("refused requests changed the schedule: %+v", after)
	}
}
