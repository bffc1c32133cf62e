package httpapi_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/server/httpapi"
)

// TestLookup: a job is found by its id and by its unique key while it is
// live and, once finished in a tube with a retention, while it is kept,
// with its result; a kept job is in no reply of stats-job.
func TestLookup(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open func(testing.TB) queue.Store) {
		ts := startServer(t, open(t), nil)
		c := ts.c
		ctx := context.Background()
		if err := ts.q.SetRetention(ctx, "kt", time.Hour); err != nil {
			t.Fatal(err)
		}
		id := c.put(t, "kt", map[string]any{"body": "b", "unique_key": "order-42"})
		var l httpapi.JobLookup
		c.do(req{method: "GET", path: fmt.Sprintf("/v1/jobs/%d/lookup", id)}).want(t, http.StatusOK, "").decode(t, &l)
		if l.ID != id || l.State != "ready" || l.UniqueKey != "order-42" || !time.Time(l.KeptUntil).IsZero() || l.ResultBase64 != "" {
			t.Errorf("lookup of a live job: %+v", l)
		}
		c.do(req{method: "GET", path: "/v1/tubes/kt/keys/order-42"}).want(t, http.StatusOK, "").decode(t, &l)
		if l.ID != id || l.State != "ready" {
			t.Errorf("lookup by key of a live job: id %d state %s, want %d ready", l.ID, l.State, id)
		}

		before := time.Now().Add(-time.Second)
		if err := ts.q.Finish(ctx, queue.ID(id), []byte("done\x00")); err != nil {
			t.Fatal(err)
		}
		c.do(req{method: "GET", path: fmt.Sprintf("/v1/jobs/%d/stats", id)}).want(t, http.StatusNotFound, httpapi.CodeNotFound)
		for _, path := range []string{fmt.Sprintf("/v1/jobs/%d/lookup", id), "/v1/tubes/kt/keys/order-42"} {
			c.do(req{method: "GET", path: path}).want(t, http.StatusOK, "").decode(t, &l)
			if l.ID != id || l.State != "finished" || l.UniqueKey != "order-42" {
				t.Errorf("%s of a kept job: id %d state %s key %q", path, l.ID, l.State, l.UniqueKey)
			}
			if l.ResultBase64 != base64.StdEncoding.EncodeToString([]byte("done\x00")) {
				t.Errorf("%s: result_base64 %q", path, l.ResultBase64)
			}
			fin, until := time.Time(l.FinishedAt), time.Time(l.KeptUntil)
			if fin.Before(before) || until.Sub(fin) < time.Hour-time.Second || until.Sub(fin) > time.Hour+time.Second {
				t.Errorf("%s: finished_at %v, kept_until %v; want kept an hour after it finished, now", path, fin, until)
			}
		}

		c.do(req{method: "GET", path: "/v1/tubes/kt/keys/order-43"}).want(t, http.StatusNotFound, httpapi.CodeNotFound)
		c.do(req{method: "GET", path: "/v1/jobs/999999/lookup"}).want(t, http.StatusNotFound, httpapi.CodeNotFound)
		c.do(req{method: "GET", path: "/v1/tubes/-bad/keys/k"}).want(t, http.StatusBadRequest, httpapi.CodeBadTube)
	})
}
