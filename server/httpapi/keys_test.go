package httpapi_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
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

// TestFinishAndWindows: a tube's retention is set and read over HTTP; a
// reserved job finished with its lease and a result is kept with it; a
// put with unique_kept is a duplicate of the kept job, one with
// unique_for_ms a duplicate within its window after its job was deleted;
// bad input is refused and changes nothing.
func TestFinishAndWindows(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open func(testing.TB) queue.Store) {
		ts := startServer(t, open(t), nil)
		c := ts.c
		var rt httpapi.Retention
		c.do(req{method: "GET", path: "/v1/tubes/fw/retention"}).want(t, http.StatusOK, "").decode(t, &rt)
		if rt.RetentionMS != 0 {
			t.Errorf("retention before any is set: %d", rt.RetentionMS)
		}
		c.do(req{method: "PUT", path: "/v1/tubes/fw/retention", json: map[string]any{"retention_ms": 3600000}}).want(t, http.StatusNoContent, "")
		c.do(req{method: "PUT", path: "/v1/tubes/fw/retention", json: map[string]any{"retention_ms": -1}, offSpec: true}).want(t, http.StatusBadRequest, httpapi.CodeBadRequest)
		c.do(req{method: "GET", path: "/v1/tubes/fw/retention"}).want(t, http.StatusOK, "").decode(t, &rt)
		if rt.RetentionMS != 3600000 {
			t.Errorf("retention: %d ms, want 3600000", rt.RetentionMS)
		}

		id := c.put(t, "fw", map[string]any{"body": "b", "unique_key": "k1", "unique_kept": true})
		r := c.reserve(t, []string{"fw"}, 1000)
		if r.Job.ID != id {
			t.Fatalf("reserved %d, want %d", r.Job.ID, id)
		}
		path := fmt.Sprintf("/v1/jobs/%d", id)
		c.do(req{method: "POST", path: path + "/finish", json: map[string]any{"result": "a", "result_base64": "Yg=="}, header: lease(r.Lease)}).
			want(t, http.StatusBadRequest, httpapi.CodeBadRequest)
		c.do(req{method: "POST", path: path + "/finish", json: map[string]any{"result": "ok"}}).want(t, http.StatusConflict, httpapi.CodeReserved)
		c.do(req{method: "POST", path: path + "/finish", json: map[string]any{"result": "ok"}, header: lease(r.Lease)}).want(t, http.StatusNoContent, "")
		var l httpapi.JobLookup
		c.do(req{method: "GET", path: path + "/lookup"}).want(t, http.StatusOK, "").decode(t, &l)
		if l.State != "finished" || l.ResultBase64 != base64.StdEncoding.EncodeToString([]byte("ok")) {
			t.Errorf("the finished job: state %s, result_base64 %q", l.State, l.ResultBase64)
		}
		var p httpapi.PutReply
		c.do(req{method: "POST", path: "/v1/tubes/fw/jobs", json: map[string]any{"body": "again", "unique_key": "k1", "unique_kept": true}}).
			want(t, http.StatusOK, "").decode(t, &p)
		if !p.Duplicate || p.ID != id || p.State != "finished" || p.ResultBase64 != base64.StdEncoding.EncodeToString([]byte("ok")) {
			t.Errorf("a put with unique_kept of a kept key: %+v, want a duplicate of %d, finished, with its result", p, id)
		}
		p = httpapi.PutReply{}
		c.do(req{method: "POST", path: "/v1/tubes/fw/jobs?unique_key=k1&unique_kept=true", raw: []byte("raw"), contentType: "application/octet-stream"}).
			want(t, http.StatusOK, "").decode(t, &p)
		if !p.Duplicate || p.ID != id || p.State != "finished" || p.ResultBase64 != base64.StdEncoding.EncodeToString([]byte("ok")) {
			t.Errorf("a raw put with unique_kept of a kept key: %+v, want a duplicate of %d, finished, with its result", p, id)
		}
		live := c.put(t, "fw", map[string]any{"body": "l", "unique_key": "live"})
		p = httpapi.PutReply{}
		c.do(req{method: "POST", path: "/v1/tubes/fw/jobs", json: map[string]any{"body": "l2", "unique_key": "live"}}).
			want(t, http.StatusOK, "").decode(t, &p)
		if !p.Duplicate || p.ID != live || p.State != "ready" || p.ResultBase64 != "" {
			t.Errorf("a put with the key of a live job: %+v, want a duplicate of %d, ready, no result", p, live)
		}
		c.do(req{method: "POST", path: "/v1/jobs/999999/finish"}).want(t, http.StatusNotFound, httpapi.CodeNotFound)

		// A window: the job is deleted (in a tube without a retention), and
		// a put with the key within the window is still a duplicate.
		p = httpapi.PutReply{}
		c.do(req{method: "POST", path: "/v1/tubes/win/jobs?unique_key=k2&unique_for_ms=3600000", raw: []byte("raw"), contentType: "application/octet-stream"}).
			want(t, http.StatusCreated, "").decode(t, &p)
		first := p.ID
		c.do(req{method: "DELETE", path: fmt.Sprintf("/v1/jobs/%d", first)}).want(t, http.StatusNoContent, "")
		p = httpapi.PutReply{}
		c.do(req{method: "POST", path: "/v1/tubes/win/jobs", json: map[string]any{"body": "x", "unique_key": "k2"}}).
			want(t, http.StatusOK, "").decode(t, &p)
		if !p.Duplicate || p.ID != first || p.State != "finished" || p.ResultBase64 != "" {
			t.Errorf("a put inside the key's window: %+v, want a duplicate of %d, finished, no result", p, first)
		}
		c.do(req{method: "POST", path: "/v1/tubes/win/jobs", json: map[string]any{"body": "x", "unique_key": "k3", "unique_for_ms": -1}, offSpec: true}).
			want(t, http.StatusBadRequest, httpapi.CodeBadRequest)
		c.do(req{method: "POST", path: "/v1/tubes/win/jobs?unique_key=k3&unique_kept=maybe", raw: []byte("raw"), contentType: "application/octet-stream", offSpec: true}).
			want(t, http.StatusBadRequest, httpapi.CodeBadRequest)
		c.do(req{method: "POST", path: "/v1/tubes/win/jobs", json: map[string]any{"body": "x", "unique_for_ms": 1000}}).
			want(t, http.StatusBadRequest, httpapi.CodeBadRequest)
	})
}

// TestPutDebounce: a put with debounce changes the delayed job holding its
// key (its body, over JSON and as raw bytes with query parameters), and
// bad debounce fields are refused and change nothing.
func TestPutDebounce(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open func(testing.TB) queue.Store) {
		ts := startServer(t, open(t), nil)
		c := ts.c
		var p httpapi.PutReply
		c.do(req{method: "POST", path: "/v1/tubes/db/jobs", json: map[string]any{"body": "1", "unique_key": "k", "delay_ms": 3600000, "debounce": "both", "max_wait_ms": 7200000}}).
			want(t, http.StatusCreated, "").decode(t, &p)
		first := p.ID
		if p.Debounced || p.Duplicate {
			t.Errorf("first put: %+v, want a new job", p)
		}
		c.do(req{method: "POST", path: "/v1/tubes/db/jobs", json: map[string]any{"body": "2", "unique_key": "k", "delay_ms": 3600000, "debounce": "both", "max_wait_ms": 7200000}}).
			want(t, http.StatusOK, "").decode(t, &p)
		if !p.Debounced || !p.Duplicate || p.ID != first {
			t.Errorf("second put: %+v, want a debounce of %d", p, first)
		}
		c.do(req{method: "POST", path: "/v1/tubes/db/jobs?unique_key=k&debounce=replace", raw: []byte("3"), contentType: "application/octet-stream"}).
			want(t, http.StatusOK, "").decode(t, &p)
		if !p.Debounced || p.ID != first {
			t.Errorf("raw put: %+v, want a debounce of %d", p, first)
		}
		body := c.do(req{method: "GET", path: fmt.Sprintf("/v1/jobs/%d/body", first)}).want(t, http.StatusOK, "").body
		if string(body) != "3" {
			t.Errorf("the job's body after the debounces: %q, want 3", body)
		}
		for _, r := range []req{
			{method: "POST", path: "/v1/tubes/db/jobs", json: map[string]any{"body": "x", "unique_key": "k", "debounce": "later"}, offSpec: true},
			{method: "POST", path: "/v1/tubes/db/jobs", json: map[string]any{"body": "x", "debounce": "both"}},
			{method: "POST", path: "/v1/tubes/db/jobs", json: map[string]any{"body": "x", "unique_key": "k", "debounce": "both", "delay_ms": 2000, "max_wait_ms": 1000}},
			{method: "POST", path: "/v1/tubes/db/jobs", json: map[string]any{"body": "x", "unique_key": "k", "max_wait_ms": 1000}},
			{method: "POST", path: "/v1/tubes/db/jobs?unique_key=k&debounce=both&duplicate_live=maybe", raw: []byte("x"), contentType: "application/octet-stream", offSpec: true},
		} {
			c.do(r).want(t, http.StatusBadRequest, httpapi.CodeBadRequest)
		}
		body = c.do(req{method: "GET", path: fmt.Sprintf("/v1/jobs/%d/body", first)}).want(t, http.StatusOK, "").body
		if string(body) != "3" {
			t.Errorf("the job's body after refused puts: %q, want 3", body)
		}
	})
}

// TestListKept: a tube's kept jobs are listed over HTTP in pages, the
// newest finished first (those ended in the same millisecond by ID,
// the higher first: the later put), with their key, how they ended and the first
// bytes of their result; bad input is a 400.
func TestListKept(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open func(testing.TB) queue.Store) {
		ts := startServer(t, open(t), nil)
		c := ts.c
		ctx := context.Background()
		if err := ts.q.SetRetention(ctx, "lk", time.Hour); err != nil {
			t.Fatal(err)
		}
		var ids []uint64
		for i := range 3 {
			id := c.put(t, "lk", map[string]any{"body": "b", "unique_key": fmt.Sprintf("order-%d", i)})
			ids = append(ids, id)
			if err := ts.q.Finish(ctx, queue.ID(id), []byte(fmt.Sprintf(`{"n":%d}`, i))); err != nil {
				t.Fatal(err)
			}
		}
		c.put(t, "lk", map[string]any{"body": "live"})
		var got []httpapi.KeptJob
		cursor := ""
		for pages := 0; ; pages++ {
			var l httpapi.KeptList
			c.do(req{method: "GET", path: "/v1/tubes/lk/kept?limit=2&cursor=" + url.QueryEscape(cursor)}).want(t, http.StatusOK, "").decode(t, &l)
			got = append(got, l.Jobs...)
			if l.Next == "" || pages > 3 {
				break
			}
			cursor = l.Next
		}
		if len(got) != 3 {
			t.Fatalf("listed %d kept jobs, want 3: %+v", len(got), got)
		}
		for i, k := range got {
			n := 2 - i
			res, _ := base64.StdEncoding.DecodeString(k.ResultBase64)
			if k.ID != ids[n] || k.UniqueKey != fmt.Sprintf("order-%d", n) || k.Ended != "finished" ||
				string(res) != fmt.Sprintf(`{"n":%d}`, n) || k.ResultBytes != len(res) || time.Time(k.FinishedAt).IsZero() {
				t.Errorf("kept job %d of the list: %+v, want job %d, key order-%d, finished, result {\"n\":%d}", i, k, ids[n], n, n)
			}
		}
		var empty httpapi.KeptList
		c.do(req{method: "GET", path: "/v1/tubes/nothing/kept"}).want(t, http.StatusOK, "").decode(t, &empty)
		if len(empty.Jobs) != 0 || empty.Next != "" {
			t.Errorf("a tube that keeps nothing lists %+v", empty)
		}
		c.do(req{method: "GET", path: "/v1/tubes/lk/kept?limit=0", offSpec: true}).want(t, http.StatusBadRequest, httpapi.CodeBadRequest)
		c.do(req{method: "GET", path: "/v1/tubes/lk/kept?limit=1001", offSpec: true}).want(t, http.StatusBadRequest, httpapi.CodeBadRequest)
		c.do(req{method: "GET", path: "/v1/tubes/lk/kept?cursor=x"}).want(t, http.StatusBadRequest, httpapi.CodeBadRequest)
		c.do(req{method: "GET", path: "/v1/tubes/-bad/kept"}).want(t, http.StatusBadRequest, httpapi.CodeBadTube)
	})
}
