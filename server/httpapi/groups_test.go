package httpapi_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/ratelimit"
	"github.com/hourglass-io/hourglass/server/httpapi"
)

// TestTubeGroups: jobs put over HTTP with a group (in the JSON body or the
// query of a raw put) go to the tube's groups, a reserve of the tube
// serves the groups in turn under the group template set over HTTP, and
// the tube's stats describe its groups.
func TestTubeGroups(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open func(testing.TB) queue.Store) {
		store := open(t)
		if _, ok := store.(queue.LimitStore); !ok {
			t.Fatalf("%T limits no tubes, so it serves no groups", store)
		}
		ts := startServer(t, store, nil)
		c := ts.c
		var got httpapi.TubeLimits
		c.do(req{method: "PUT", path: "/v1/tubes/mail/limits", json: map[string]any{"cap": 10, "group": map[string]any{"cap": 1}}}).
			want(t, http.StatusOK, "").decode(t, &got)
		if got.Cap != 10 || got.Group == nil || got.Group.Cap != 1 {
			t.Fatalf("PUT limits with a group template replied %+v", got)
		}
		if l, _ := ts.q.TubeLimits(t.Context(), "mail"); l != (queue.Limits{Cap: 10, Group: queue.GroupLimits{Cap: 1}}) {
			t.Errorf("Queue.TubeLimits = %v", l)
		}
		a1 := c.put(t, "mail", map[string]any{"body": "a1", "group": "a"})
		c.put(t, "mail", map[string]any{"body": "a2", "group": "a"})
		var p struct{ ID uint64 }
		c.do(req{method: "POST", path: "/v1/tubes/mail/jobs?group=b", raw: []byte("b1"), contentType: "application/octet-stream"}).
			want(t, http.StatusCreated, "").decode(t, &p)
		if r := c.reserve(t, []string{"mail"}, 0); r.Job.ID != a1 || r.Job.Tube != "mail;a" {
			t.Fatalf("first reserve: job %d of %q, want %d of \"mail;a\"", r.Job.ID, r.Job.Tube, a1)
		}
		if r := c.reserve(t, []string{"mail"}, 0); r.Job.ID != p.ID {
			t.Fatalf("second reserve: job %d, want group b's %d", r.Job.ID, p.ID)
		}
		// Each group is at its cap of 1.
		c.do(req{method: "POST", path: "/v1/reserve", json: map[string]any{"tubes": []string{"mail"}, "timeout_ms": 0}}).want(t, http.StatusNoContent, "")
		var st httpapi.TubeStats
		c.do(req{method: "GET", path: "/v1/tubes/mail"}).want(t, http.StatusOK, "").decode(t, &st)
		if st.Groups != 2 || st.GroupReady != 1 || st.GroupReserved != 2 || st.LimitHolds != 1 {
			t.Errorf("tube stats: groups %d, group_ready %d, group_reserved %d, limit_holds %d; want 2, 1, 2, 1", st.Groups, st.GroupReady, st.GroupReserved, st.LimitHolds)
		}
		// A group's tube takes no limits of its own; a bad group is refused.
		c.do(req{method: "PUT", path: "/v1/tubes/mail;a/limits", json: map[string]any{"cap": 1}, offSpec: true}).want(t, http.StatusBadRequest, "")
		c.do(req{method: "POST", path: "/v1/tubes/mail/jobs", json: map[string]any{"body": "x", "group": "no spaces"}, offSpec: true}).want(t, http.StatusBadRequest, "")
	})
}

// TestParseTubeLimitsGroups: the text form of a tube's limits reads and
// writes the group template (group:RATE, group:cap=N), and refuses what is
// given twice.
func TestParseTubeLimitsGroups(t *testing.T) {
	for spec, want := range map[string]queue.Limits{
		"cap=50;group:cap=2": {Cap: 50, Group: queue.GroupLimits{Cap: 2}},
		"100/1s,burst=10;group:1/1s;group:cap=3": {Rate: ratelimit.Limit{Events: 100, Per: time.Second, Burst: 10},
			Group: queue.GroupLimits{Rate: ratelimit.Limit{Events: 1, Per: time.Second}, Cap: 3}},
		"group:5/1m,burst=2": {Group: queue.GroupLimits{Rate: ratelimit.Limit{Events: 5, Per: time.Minute, Burst: 2}}},
	} {
		got, err := httpapi.ParseTubeLimits(spec)
		if err != nil || got != want {
			t.Errorf("ParseTubeLimits(%q) = %v, %v; want %v", spec, got, err, want)
			continue
		}
		back, err := httpapi.ParseTubeLimits(httpapi.TubeLimitsSpec(got))
		if err != nil || back.Group.Cap != want.Group.Cap || back.Group.Rate.Events != want.Group.Rate.Events {
			t.Errorf("ParseTubeLimits(TubeLimitsSpec(%v)) = %v, %v", got, back, err)
		}
	}
	for _, bad := range []string{"group:cap=1;group:cap=2", "group:1/1s;group:2/1s", "group:cap=-1", "group:", "group:cap=x"} {
		if _, err := httpapi.ParseTubeLimits(bad); err == nil {
			t.Errorf("ParseTubeLimits(%q) took it", bad)
		}
	}
}
