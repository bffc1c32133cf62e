package httpapi_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/server/httpapi"
)

// TestCancel: a cancel removes a job in any state and says which; the
// holder of a reserved one hears it in its watch, and its later touch,
// release, bury and delete are 404 not_found; the tube counts the cancels.
func TestCancel(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open func(testing.TB) queue.Store) {
		ts := startServer(t, open(t), nil)
		c := ts.c
		keep := c.put(t, "cx", map[string]any{"body": "keeps the tube", "delay_ms": 3600000})
		ready := c.put(t, "cx", map[string]any{"body": "r", "priority": 9})
		var cr httpapi.CancelReply
		c.do(req{method: "POST", path: fmt.Sprintf("/v1/jobs/%d/cancel", ready), json: map[string]any{"reason": "not needed"}}).
			want(t, http.StatusOK, "").decode(t, &cr)
		if cr.ID != ready || cr.Was != "ready" {
			t.Errorf("cancel of a ready job: %+v, want id %d, was ready", cr, ready)
		}
		c.do(req{method: "POST", path: fmt.Sprintf("/v1/jobs/%d/cancel", ready)}).want(t, http.StatusNotFound, httpapi.CodeNotFound)

		id := c.put(t, "cx", map[string]any{"body": "long", "ttr_ms": 60000})
		r := c.reserve(t, []string{"cx"}, 1000)
		if r.Job.ID != id {
			t.Fatalf("reserved job %d, want %d", r.Job.ID, id)
		}
		path := fmt.Sprintf("/v1/jobs/%d", id)
		// Nothing yet: a watch that checks once says the job is still held.
		c.do(req{method: "POST", path: path + "/watch", header: lease(r.Lease), json: map[string]any{"timeout_ms": 0}}).want(t, http.StatusNoContent, "")

		watched := make(chan reply, 1)
		go func() {
			watched <- c.do(req{method: "POST", path: path + "/watch", header: lease(r.Lease), json: map[string]any{"timeout_ms": 20000}})
		}()
		waitFor(t, "the watch to wait", func() bool { return inFlight(t, ts, "jobs", "watch") == 1 })
		c.do(req{method: "POST", path: path + "/cancel", json: map[string]any{"reason": "account closed"}}).
			want(t, http.StatusOK, "").decode(t, &cr)
		if cr.Was != "reserved" {
			t.Errorf("cancel of a reserved job: was %q, want reserved", cr.Was)
		}
		select {
		case got := <-watched:
			var w httpapi.WatchReply
			got.want(t, http.StatusOK, "").decode(t, &w)
			if !w.Cancelled || w.Reason != "account closed" {
				t.Errorf("the watch's reply: %+v, want cancelled, %q", w, "account closed")
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the watch did not hear the cancel")
		}
		for _, call := range []req{
			{method: "POST", path: path + "/touch", header: lease(r.Lease)},
			{method: "POST", path: path + "/release", header: lease(r.Lease), json: map[string]any{"reason": "retry"}},
			{method: "POST", path: path + "/bury", header: lease(r.Lease)},
			{method: "DELETE", path: path, header: lease(r.Lease)},
			{method: "POST", path: path + "/watch", header: lease(r.Lease)},
		} {
			c.do(call).want(t, http.StatusNotFound, httpapi.CodeNotFound)
		}
		var st httpapi.TubeStats
		c.do(req{method: "GET", path: "/v1/tubes/cx"}).want(t, http.StatusOK, "").decode(t, &st)
		if st.Cancels != 2 || st.Deletes != 0 || st.Delayed != 1 {
			t.Errorf("tube stats: %d cancels, %d deletes, %d delayed; want 2, 0, 1", st.Cancels, st.Deletes, st.Delayed)
		}
		_ = keep
	})
}
