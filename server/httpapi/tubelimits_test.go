package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/ratelimit"
	"github.com/hourglass-io/hourglass/server/httpapi"
)

// TestTubeLimits: limits set over HTTP hold every reserve (here HTTP's),
// show in the tube's stats, list, and clear; bad limits are refused.
func TestTubeLimits(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open func(testing.TB) queue.Store) {
		ts := startServer(t, open(t), nil)
		c := ts.c
		var got httpapi.TubeLimits
		c.do(req{method: "PUT", path: "/v1/tubes/mail/limits", json: map[string]any{"cap": 1, "rate": map[string]any{"events": 100, "per": "1s", "burst": 10}}}).
			want(t, http.StatusOK, "").decode(t, &got)
		if got.Cap != 1 || got.Rate == nil || got.Rate.Events != 100 || got.Rate.Burst != 10 {
			t.Errorf("PUT limits replied %+v", got)
		}
		// The Go view agrees.
		l, err := ts.q.TubeLimits(t.Context(), "mail")
		if err != nil || l != (queue.Limits{Rate: ratelimit.PerSecond(100).WithBurst(10), Cap: 1}) {
			t.Errorf("Queue.TubeLimits = %v, %v", l, err)
		}

		a := c.put(t, "mail", map[string]any{"body": "a"})
		c.put(t, "mail", map[string]any{"body": "b"})
		if r := c.reserve(t, []string{"mail"}, 0); r.Job.ID != a {
			t.Fatalf("reserved job %d, want %d", r.Job.ID, a)
		}
		// The cap holds the second job back.
		c.do(req{method: "POST", path: "/v1/reserve", json: map[string]any{"tubes": []string{"mail"}, "timeout_ms": 0}}).want(t, http.StatusNoContent, "")
		var st httpapi.TubeStats
		c.do(req{method: "GET", path: "/v1/tubes/mail"}).want(t, http.StatusOK, "").decode(t, &st)
		if st.Limits == nil || st.Limits.Cap != 1 || st.LimitHolds != 1 || st.Reserved != 1 {
			t.Errorf("tube stats: limits %+v, limit_holds %d, reserved %d; want cap 1, 1, 1", st.Limits, st.LimitHolds, st.Reserved)
		}

		// And so do the metrics.
		metrics := string(c.do(req{method: "GET", path: "/metrics"}).want(t, http.StatusOK, "").body)
		for _, want := range []string{
			httpapi.MetricTubeLimitHolds + `{tube="mail"} 1`,
			httpapi.MetricTubeLimitCap + `{tube="mail"} 1`,
			httpapi.MetricTubeLimitRate + `{tube="mail"} 100`,
		} {
			if !strings.Contains(metrics, want+"\n") {
				t.Errorf("/metrics has no line %q", want)
			}
		}

		var list httpapi.TubeLimitsList
		c.do(req{method: "GET", path: "/v1/tube-limits"}).want(t, http.StatusOK, "").decode(t, &list)
		if len(list.Limits) != 1 || list.Limits[0].Tube != "mail" || list.Limits[0].Cap != 1 {
			t.Errorf("GET /v1/tube-limits = %+v", list)
		}

		for _, c2 := range []struct {
			name string
			body map[string]any
			code string
		}{
			{"nothing", map[string]any{}, httpapi.CodeBadRequest},
			{"negative cap", map[string]any{"cap": -1}, httpapi.CodeBadRequest},
			{"sliding window", map[string]any{"rate": map[string]any{"events": 1, "per": "1s", "algorithm": "sliding-log"}}, httpapi.CodeBadRequest},
			{"quota", map[string]any{"rate": map[string]any{"events": 10, "per": "1s", "quota": 2}}, httpapi.CodeBadRequest},
			{"no per", map[string]any{"rate": map[string]any{"events": 10}}, httpapi.CodeBadLimit},
			{"other tube", map[string]any{"tube": "other", "cap": 1}, httpapi.CodeBadRequest},
		} {
			c.do(req{method: "PUT", path: "/v1/tubes/mail/limits", json: c2.body, offSpec: true}).want(t, http.StatusBadRequest, c2.code)
		}
		c.do(req{method: "GET", path: "/v1/tubes/mail/limits"}).want(t, http.StatusOK, "").decode(t, &got)
		if got.Cap != 1 {
			t.Errorf("limits after refused changes = %+v, want cap 1 still", got)
		}

		c.do(req{method: "DELETE", path: "/v1/tubes/mail/limits"}).want(t, http.StatusNoContent, "")
		var none httpapi.TubeLimits
		c.do(req{method: "GET", path: "/v1/tubes/mail/limits"}).want(t, http.StatusOK, "").decode(t, &none)
		if diff := cmp.Diff(httpapi.TubeLimits{Tube: "mail"}, none); diff != "" {
			t.Errorf("limits after DELETE (-want +got):\n%s", diff)
		}
		c.reserve(t, []string{"mail"}, 0)
	})
}
