package httpapi_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hourglass-io/hourglass/internal/testkit/redistest"
	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/redisstore"
	"github.com/hourglass-io/hourglass/server/httpapi"
	"github.com/redis/go-redis/v9"
)

type putReply struct {
	ID        uint64 `json:"id"`
	Duplicate bool   `json:"duplicate"`
}

type jobReply struct {
	ID         uint64  `json:"id"`
	Tube       string  `json:"tube"`
	Priority   uint32  `json:"priority"`
	TTRMS      int64   `json:"ttr_ms"`
	Reserves   uint32  `json:"reserves"`
	BodyBase64 string  `json:"body_base64"`
	Body       *string `json:"body"`
}

type reserveReply struct {
	Lease string   `json:"lease"`
	Job   jobReply `json:"job"`
}

func (c *client) put(t testing.TB, tube string, body any) uint64 {
	t.Helper()
	var p putReply
	c.do(req{method: "POST", path: "/v1/tubes/" + tube + "/jobs", json: body}).want(t, http.StatusCreated, "").decode(t, &p)
	return p.ID
}

func (c *client) reserve(t testing.TB, tubes []string, timeoutMS int64) reserveReply {
	t.Helper()
	var r reserveReply
	c.do(req{method: "POST", path: "/v1/reserve", json: map[string]any{"tubes": tubes, "timeout_ms": timeoutMS}}).want(t, http.StatusOK, "").decode(t, &r)
	return r
}

func lease(l string) map[string]string { return map[string]string{httpapi.LeaseHeader: l} }

func TestJobLifecycle(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open func(testing.TB) queue.Store) {
		ts := startServer(t, open(t), nil)
		c := ts.c
		id := c.put(t, "emails", map[string]any{"body": "hello", "priority": 7, "ttr_ms": 30000})

		r := c.reserve(t, []string{"emails"}, 1000)
		if r.Job.ID != id || r.Job.Tube != "emails" || r.Job.Priority != 7 || r.Job.TTRMS != 30000 || r.Job.Reserves != 1 || r.Job.Body == nil || *r.Job.Body != "hello" {
			t.Fatalf("reserved %+v, want job %d of emails, priority 7, TTR 30 s, body hello", r.Job, id)
		}
		path := fmt.Sprintf("/v1/jobs/%d", id)
		other := "hgl_" + strings.Repeat("0", 32)

		// Only the lease's holder acts on the reservation.
		c.do(req{method: "POST", path: path + "/touch", header: lease(r.Lease)}).want(t, http.StatusNoContent, "")
		c.do(req{method: "POST", path: path + "/touch", header: lease(other)}).want(t, http.StatusConflict, httpapi.CodeNotReserved)
		c.do(req{method: "POST", path: path + "/bury", header: lease(other)}).want(t, http.StatusConflict, httpapi.CodeNotReserved)
		c.do(req{method: "DELETE", path: path}).want(t, http.StatusConflict, httpapi.CodeReserved)
		c.do(req{method: "DELETE", path: path, header: lease(other)}).want(t, http.StatusConflict, httpapi.CodeReserved)

		var st struct {
			State    string `json:"state"`
			Reserves int    `json:"reserves"`
			Releases int    `json:"releases"`
		}
		c.do(req{method: "GET", path: path + "/stats"}).want(t, http.StatusOK, "").decode(t, &st)
		if st.State != "reserved" {
			t.Fatalf("state %q after the refused calls, want reserved", st.State)
		}

		// Release with a delay: delayed, then kicked back to ready.
		c.do(req{method: "POST", path: path + "/release", header: lease(r.Lease), json: map[string]any{"priority": 3, "delay_ms": 60000}}).want(t, http.StatusNoContent, "")
		c.do(req{method: "POST", path: path + "/touch", header: lease(r.Lease)}).want(t, http.StatusConflict, httpapi.CodeNotReserved)
		var peek jobReply
		c.do(req{method: "GET", path: "/v1/tubes/emails/peek/delayed"}).want(t, http.StatusOK, "").decode(t, &peek)
		if peek.ID != id || peek.Priority != 3 {
			t.Fatalf("peek delayed: %+v, want job %d, priority 3", peek, id)
		}
		c.do(req{method: "GET", path: "/v1/tubes/emails/peek/ready"}).want(t, http.StatusNotFound, httpapi.CodeNotFound)
		c.do(req{method: "POST", path: path + "/kick"}).want(t, http.StatusNoContent, "")
		c.do(req{method: "POST", path: path + "/kick"}).want(t, http.StatusConflict, httpapi.CodeNotKickable)

		// Reserve again (a new lease), bury, kick the tube.
		r2 := c.reserve(t, []string{"other", "emails"}, 0)
		if r2.Job.ID != id || r2.Lease == r.Lease || r2.Job.Reserves != 2 {
			t.Fatalf("second reserve: %+v lease %q, want job %d reserved twice under a new lease", r2.Job, r2.Lease, id)
		}
		c.do(req{method: "POST", path: path + "/bury", header: lease(r.Lease)}).want(t, http.StatusConflict, httpapi.CodeNotReserved)
		c.do(req{method: "POST", path: path + "/bury", header: lease(r2.Lease), json: map[string]any{"priority": 9}}).want(t, http.StatusNoContent, "")
		c.do(req{method: "GET", path: "/v1/tubes/emails/peek/buried"}).want(t, http.StatusOK, "").decode(t, &peek)
		if peek.ID != id || peek.Priority != 9 {
			t.Fatalf("peek buried: %+v, want job %d, priority 9", peek, id)
		}
		var tube struct {
			Name   string `json:"name"`
			Buried int    `json:"buried"`
		}
		c.do(req{method: "GET", path: "/v1/tubes/emails"}).want(t, http.StatusOK, "").decode(t, &tube)
		if tube.Name != "emails" || tube.Buried != 1 {
			t.Fatalf("tube stats %+v, want one buried job", tube)
		}
		var kicked struct{ Kicked int }
		c.do(req{method: "POST", path: "/v1/tubes/emails/kick", json: map[string]any{"bound": 10}}).want(t, http.StatusOK, "").decode(t, &kicked)
		if kicked.Kicked != 1 {
			t.Fatalf("kicked %d, want 1", kicked.Kicked)
		}

		// Pause: a reserve skips the tube.
		c.do(req{method: "POST", path: "/v1/tubes/emails/pause", json: map[string]any{"delay_ms": 60000}}).want(t, http.StatusNoContent, "")
		c.do(req{method: "POST", path: "/v1/reserve", json: map[string]any{"tubes": []string{"emails"}}}).want(t, http.StatusNoContent, "")
		c.do(req{method: "POST", path: "/v1/tubes/emails/pause", json: map[string]any{"delay_ms": 0}}).want(t, http.StatusNoContent, "")

		var tubes struct{ Tubes []string }
		c.do(req{method: "GET", path: "/v1/tubes"}).want(t, http.StatusOK, "").decode(t, &tubes)
		if len(tubes.Tubes) != 1 || tubes.Tubes[0] != "emails" {
			t.Fatalf("tubes %v, want [emails]", tubes.Tubes)
		}
		var stats struct {
			Ready     int `json:"ready"`
			TotalJobs int `json:"total_jobs"`
		}
		c.do(req{method: "GET", path: "/v1/stats"}).want(t, http.StatusOK, "").decode(t, &stats)
		if stats.Ready != 1 || stats.TotalJobs != 1 {
			t.Fatalf("stats %+v, want one ready job of one put", stats)
		}

		// Delete under a lease, then the job is gone.
		r3 := c.reserve(t, []string{"emails"}, 0)
		c.do(req{method: "DELETE", path: path, header: lease(r3.Lease)}).want(t, http.StatusNoContent, "")
		c.do(req{method: "GET", path: path}).want(t, http.StatusNotFound, httpapi.CodeNotFound)
		c.do(req{method: "DELETE", path: path}).want(t, http.StatusNotFound, httpapi.CodeNotFound)
		if held, err := ts.q.WithOwner(r3.Lease).Held(context.Background()); err != nil || len(held) != 0 {
			t.Fatalf("the store still lists %v, %v for the lease of a deleted job", held, err)
		}
	})
}

// allBytes is every byte value, twice, in an order that is not sorted.
func allBytes() []byte {
	b := make([]byte, 512)
	for i := range b {
		b[i] = byte(i*7 + i/256)
	}
	return b
}

func TestBinaryBodiesRoundTrip(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open func(testing.TB) queue.Store) {
		ts := startServer(t, open(t), nil)
		c := ts.c
		body := allBytes()

		// Raw in, base64 out.
		var p putReply
		c.do(req{method: "POST", path: "/v1/tubes/bin/jobs?priority=5&ttr_ms=2000", raw: body, contentType: "application/octet-stream"}).
			want(t, http.StatusCreated, "").decode(t, &p)
		r := c.reserve(t, []string{"bin"}, 1000)
		got, err := base64.StdEncoding.DecodeString(r.Job.BodyBase64)
		if err != nil || !bytes.Equal(got, body) || r.Job.Priority != 5 || r.Job.TTRMS != 2000 {
			t.Fatalf("reserved body %x (err %v), priority %d, TTR %d; want the 512 bytes put, priority 5, TTR 2000", got, err, r.Job.Priority, r.Job.TTRMS)
		}
		if r.Job.Body != nil {
			t.Fatalf("a binary body came back as text too: %q", *r.Job.Body)
		}

		// Base64 in, raw out.
		id := c.put(t, "bin", map[string]any{"body_base64": base64.StdEncoding.EncodeToString(body)})
		raw := c.do(req{method: "GET", path: fmt.Sprintf("/v1/jobs/%d/body", id)}).want(t, http.StatusOK, "")
		if !bytes.Equal(raw.body, body) || raw.header.Get("Content-Type") != "application/octet-stream" {
			t.Fatalf("raw body %x (%s), want the 512 bytes put", raw.body, raw.header.Get("Content-Type"))
		}

		// An empty body is a body too.
		id = c.put(t, "bin", map[string]any{})
		raw = c.do(req{method: "GET", path: fmt.Sprintf("/v1/jobs/%d/body", id)}).want(t, http.StatusOK, "")
		if len(raw.body) != 0 {
			t.Fatalf("empty body came back as %q", raw.body)
		}
	})
}

func TestBadInput(t *testing.T) {
	ts := startServer(t, memStore(t), nil)
	c := ts.c
	id := c.put(t, "t", map[string]any{"body": "x"})
	job := fmt.Sprintf("/v1/jobs/%d", id)
	big := bytes.Repeat([]byte("a"), 4097) // the test queue's MaxJobSize is 4096
	cases := []struct {
		name   string
		r      req
		status int
		code   string
	}{
		{"id not a number", req{method: "GET", path: "/v1/jobs/abc", offSpec: true}, 400, httpapi.CodeBadRequest},
		{"id zero", req{method: "GET", path: "/v1/jobs/0", offSpec: true}, 400, httpapi.CodeBadRequest},
		{"id beyond 2^53", req{method: "GET", path: "/v1/jobs/9007199254740992", offSpec: true}, 400, httpapi.CodeBadRequest},
		{"no such job", req{method: "GET", path: "/v1/jobs/123456"}, 404, httpapi.CodeNotFound},
		{"bad tube name", req{method: "POST", path: "/v1/tubes/-bad/jobs", json: map[string]any{"body": "x"}}, 400, httpapi.CodeBadTube},
		{"unknown tube", req{method: "GET", path: "/v1/tubes/nosuch"}, 404, httpapi.CodeNotFound},
		{"body too large, raw", req{method: "POST", path: "/v1/tubes/t/jobs", raw: big, contentType: "application/octet-stream"}, 413, httpapi.CodeTooLarge},
		{"body too large, JSON", req{method: "POST", path: "/v1/tubes/t/jobs", json: map[string]any{"body": string(big)}}, 413, httpapi.CodeTooLarge},
		{"JSON not JSON", req{method: "POST", path: "/v1/tubes/t/jobs", raw: []byte("{"), contentType: "application/json", offSpec: true}, 400, httpapi.CodeBadRequest},
		{"unknown field", req{method: "POST", path: "/v1/tubes/t/jobs", json: map[string]any{"bodyy": "x"}, offSpec: true}, 400, httpapi.CodeBadRequest},
		{"body and body_base64", req{method: "POST", path: "/v1/tubes/t/jobs", json: map[string]any{"body": "x", "body_base64": "eA=="}}, 400, httpapi.CodeBadRequest},
		{"bad base64", req{method: "POST", path: "/v1/tubes/t/jobs", json: map[string]any{"body_base64": "!!"}, offSpec: true}, 400, httpapi.CodeBadRequest},
		{"TTR below a second", req{method: "POST", path: "/v1/tubes/t/jobs", json: map[string]any{"ttr_ms": 10}}, 400, httpapi.CodeBadRequest},
		{"negative delay", req{method: "POST", path: "/v1/tubes/t/jobs", json: map[string]any{"delay_ms": -1}, offSpec: true}, 400, httpapi.CodeBadRequest},
		{"delay beyond the limit", req{method: "POST", path: "/v1/tubes/t/jobs", json: map[string]any{"delay_ms": int64(1) << 50}}, 400, httpapi.CodeBadRequest},
		{"bad priority query", req{method: "POST", path: "/v1/tubes/t/jobs?priority=x", raw: []byte("x"), contentType: "application/octet-stream", offSpec: true}, 400, httpapi.CodeBadRequest},
		{"unsupported media type", req{method: "POST", path: "/v1/tubes/t/jobs", raw: []byte("x"), contentType: "text/plain", offSpec: true}, 415, httpapi.CodeUnsupported},
		{"release without lease", req{method: "POST", path: job + "/release", offSpec: true}, 400, httpapi.CodeBadLease},
		{"touch with a forged lease", req{method: "POST", path: job + "/touch", header: lease("abc/1")}, 400, httpapi.CodeBadLease},
		{"delete with a forged lease", req{method: "DELETE", path: job, header: lease("hgl_XYZ")}, 400, httpapi.CodeBadLease},
		{"release of a job not reserved", req{method: "POST", path: job + "/release", header: lease("hgl_" + strings.Repeat("a", 32))}, 409, httpapi.CodeNotReserved},
		{"negative timeout", req{method: "POST", path: "/v1/reserve", json: map[string]any{"timeout_ms": -5}, offSpec: true}, 400, httpapi.CodeBadRequest},
		{"bad state", req{method: "GET", path: "/v1/tubes/t/peek/sleeping", offSpec: true}, 400, httpapi.CodeBadRequest},
		{"negative kick", req{method: "POST", path: "/v1/tubes/t/kick", json: map[string]any{"bound": -1}, offSpec: true}, 400, httpapi.CodeBadRequest},
		{"unknown route", req{method: "GET", path: "/v1/nothing", offSpec: true}, 404, httpapi.CodeNotFound},
		{"wrong method", req{method: "PUT", path: job, offSpec: true}, 405, httpapi.CodeNotAllowed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c.do(tc.r).want(t, tc.status, tc.code)
		})
	}
	// Nothing changed: the one job is there, ready, as it was.
	var st struct {
		Ready     int `json:"ready"`
		TotalJobs int `json:"total_jobs"`
	}
	c.do(req{method: "GET", path: "/v1/stats"}).want(t, http.StatusOK, "").decode(t, &st)
	if st.Ready != 1 || st.TotalJobs != 1 {
		t.Fatalf("after the bad calls: %+v, want the one job put", st)
	}
}

func TestReserveLongPoll(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open func(testing.TB) queue.Store) {
		ts := startServer(t, open(t), func(s *httpapi.Server) { s.MaxWait = 200 * time.Millisecond })
		c := ts.c
		// Nothing ready: 204 at once with no timeout, and after MaxWait
		// (not the minute asked for) with one.
		c.do(req{method: "POST", path: "/v1/reserve", json: map[string]any{"tubes": []string{"lp"}}}).want(t, http.StatusNoContent, "")
		c.do(req{method: "POST", path: "/v1/reserve", json: map[string]any{"tubes": []string{"lp"}, "timeout_ms": 60000}}).want(t, http.StatusNoContent, "")

		// A waiting reserve gets a job put meanwhile.
		ts2 := startServer(t, open(t), nil)
		got := make(chan reserveReply, 1)
		go func() {
			var r reserveReply
			defer func() { got <- r }() // also when do fails the test
			rep := ts2.c.do(req{method: "POST", path: "/v1/reserve", json: map[string]any{"tubes": []string{"lp"}, "timeout_ms": 20000}})
			if rep.status == http.StatusOK {
				rep.decode(t, &r)
			}
		}()
		// Once the reserve is waiting (its connection is open), put.
		waitFor(t, "the reserve to be in flight", func() bool { return inFlight(t, ts2, "jobs", "reserve") > 0 })
		id := ts2.c.put(t, "lp", map[string]any{"body": "late"})
		select {
		case r := <-got:
			if r.Job.ID != id {
				t.Fatalf("the long poll got %+v, want job %d", r.Job, id)
			}
		case <-time.After(15 * time.Second):
			t.Fatal("the long poll did not return the job put")
		}
	})
}

func TestShutdownEndsLongPoll(t *testing.T) {
	ts := startServer(t, memStore(t), nil)
	done := make(chan reply, 1)
	go func() {
		var r reply
		defer func() { done <- r }() // also when do fails the test
		r = ts.c.do(req{method: "POST", path: "/v1/reserve", json: map[string]any{"timeout_ms": 25000}})
	}()
	// Shutdown waits for the request in flight, which it ends.
	waitFor(t, "the reserve to be in flight", func() bool { return inFlight(t, ts, "jobs", "reserve") > 0 })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := ts.srv.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	r := <-done
	r.want(t, http.StatusServiceUnavailable, httpapi.CodeShuttingDown)
}

// inFlight reads how many requests of a route the server is serving: one
// counted there has entered its handler.
func inFlight(t testing.TB, ts *testServer, primitive, command string) float64 {
	return gauge(t, ts.srv.Metrics, "hourglass_http_requests_in_flight", map[string]string{"primitive": primitive, "command": command})
}

// waitFor polls cond until it holds, failing the test after 10 s.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestStoreUnavailable(t *testing.T) {
	rs := redistest.Standalone(t)
	rc := redis.NewClient(&redis.Options{Addr: rs.Addr, MaxRetries: -1, DialTimeout: time.Second})
	t.Cleanup(func() { rc.Close() })
	store, err := redisstore.New(context.Background(), rc, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	ts := startServer(t, store, nil)
	ts.c.put(t, "t", map[string]any{"body": "x"})
	rs.Stop() // the Redis goes away
	ts.c.do(req{method: "GET", path: "/v1/stats"}).want(t, http.StatusServiceUnavailable, httpapi.CodeUnavailable)
	ts.c.do(req{method: "POST", path: "/v1/tubes/t/jobs", json: map[string]any{"body": "x"}}).want(t, http.StatusServiceUnavailable, httpapi.CodeUnavailable)
	if r := ts.c.do(req{method: "GET", path: "/healthz"}); r.status != http.StatusServiceUnavailable {
		t.Fatalf("/healthz: %d, want 503", r.status)
	}
	var errs float64
	for _, cmd := range []string{"stats", "put"} {
		errs += counter(t, ts.srv.Metrics, "hourglass_requests_total", map[string]string{"command": cmd, "result": httpapi.CodeUnavailable})
	}
	if got := counter(t, ts.srv.Metrics, "hourglass_store_errors_total", map[string]string{"protocol": "http", "primitive": "jobs"}); got != 2 || errs != 2 {
		t.Fatalf("store errors counted %v, unavailable replies %v; want 2 and 2", got, errs)
	}
}

// An absent priority is queue.DefaultPriority in a put (JSON and raw body);
// a release or a bury without one keeps the job's (here the 0 an earlier
// release gave it), so a retried urgent job stays urgent.
func TestPriorityDefaultAndKept(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open func(testing.TB) queue.Store) {
		ts := startServer(t, open(t), nil)
		c := ts.c
		c.put(t, "d", map[string]any{"body": "json"})
		c.do(req{method: "POST", path: "/v1/tubes/d/jobs", raw: []byte("raw"), contentType: "application/octet-stream"}).want(t, http.StatusCreated, "")
		for _, body := range []string{"json", "raw"} {
			r := c.reserve(t, []string{"d"}, 1000)
			if r.Job.Priority != queue.DefaultPriority || r.Job.Body == nil || *r.Job.Body != body {
				t.Fatalf("reserved %+v, want the %s job with priority %d", r.Job, body, queue.DefaultPriority)
			}
			path := fmt.Sprintf("/v1/jobs/%d", r.Job.ID)
			c.do(req{method: "POST", path: path + "/release", header: lease(r.Lease), json: map[string]any{"priority": 0}}).want(t, http.StatusNoContent, "")
			r = c.reserve(t, []string{"d"}, 1000)
			if r.Job.Priority != 0 {
				t.Fatalf("after a release with priority 0: %+v", r.Job)
			}
			action := "/release"
			if body == "raw" {
				action = "/bury"
			}
			c.do(req{method: "POST", path: path + action, header: lease(r.Lease), json: map[string]any{}}).want(t, http.StatusNoContent, "")
			var st struct {
				Priority uint32 `json:"priority"`
			}
			c.do(req{method: "GET", path: path + "/stats"}).want(t, http.StatusOK, "").decode(t, &st)
			if st.Priority != 0 {
				t.Fatalf("after %s without a priority: priority %d, want the job's 0 kept", action, st.Priority)
			}
			if action == "/release" {
				c.do(req{method: "DELETE", path: path}).want(t, http.StatusNoContent, "")
			}
		}
	})
}

// jobHistory is the history part of GET /v1/jobs/{id} and its stats.
type jobHistory struct {
	State       string  `json:"state"`
	Attempts    uint32  `json:"attempts"`
	LastError   string  `json:"last_error"`
	LastErrorAt *string `json:"last_error_at"`
	PutAt       *string `json:"put_at"`
	ReservedAt  *string `json:"reserved_at"`
	ReleasedAt  *string `json:"released_at"`
	BuriedAt    *string `json:"buried_at"`
	KickedAt    *string `json:"kicked_at"`
	TimedOutAt  *string `json:"timed_out_at"`
}

// TestJobHistory: a release's and a bury's reason is the job's last_error
// in its view and its stats, with the times of its transitions as RFC 3339
// with milliseconds (null for never).
func TestJobHistory(t *testing.T) {
	stamp := regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`)
	forEachBackend(t, func(t *testing.T, open func(testing.TB) queue.Store) {
		ts := startServer(t, open(t), nil)
		c := ts.c
		id := c.put(t, "mail", map[string]any{"body": "to bob"})
		path := fmt.Sprintf("/v1/jobs/%d", id)
		look := func(step string) (view, stats jobHistory) {
			t.Helper()
			c.do(req{method: "GET", path: path}).want(t, http.StatusOK, "").decode(t, &view)
			c.do(req{method: "GET", path: path + "/stats"}).want(t, http.StatusOK, "").decode(t, &stats)
			if diff := cmp.Diff(view, stats); diff != "" {
				t.Fatalf("%s: the job's view and its stats differ (-view +stats):\n%s", step, diff)
			}
			for _, at := range []*string{view.LastErrorAt, view.PutAt, view.ReservedAt, view.ReleasedAt, view.BuriedAt, view.KickedAt, view.TimedOutAt} {
				if at != nil && !stamp.MatchString(*at) {
					t.Fatalf("%s: time %q, want RFC 3339 in UTC with milliseconds", step, *at)
				}
			}
			return view, stats
		}
		h, _ := look("put")
		if h.State != "ready" || h.Attempts != 0 || h.LastError != "" || h.PutAt == nil ||
			h.ReservedAt != nil || h.ReleasedAt != nil || h.BuriedAt != nil || h.KickedAt != nil || h.TimedOutAt != nil || h.LastErrorAt != nil {
			t.Fatalf("a job just put: %+v, want only put_at", h)
		}

		r := c.reserve(t, []string{"mail"}, 0)
		c.do(req{method: "POST", path: path + "/release", header: lease(r.Lease), json: map[string]any{"reason": "smtp: 421 try again later"}}).want(t, http.StatusNoContent, "")
		h, _ = look("released")
		if h.State != "ready" || h.Attempts != 1 || h.LastError != "smtp: 421 try again later" || h.ReservedAt == nil ||
			h.ReleasedAt == nil || h.LastErrorAt == nil || *h.LastErrorAt != *h.ReleasedAt || h.BuriedAt != nil {
			t.Fatalf("released with a reason: %+v", h)
		}

		// A reason of the wrong type is refused and changes nothing.
		r = c.reserve(t, []string{"mail"}, 0)
		c.do(req{method: "POST", path: path + "/bury", header: lease(r.Lease), json: map[string]any{"reason": 42}, offSpec: true}).want(t, http.StatusBadRequest, httpapi.CodeBadRequest)
		if h, _ = look("a bad bury"); h.State != "reserved" || h.BuriedAt != nil {
			t.Fatalf("after a refused bury: %+v, want still reserved", h)
		}
		long := strings.Repeat("é", 700) // 1400 bytes
		c.do(req{method: "POST", path: path + "/bury", header: lease(r.Lease), json: map[string]any{"reason": long}}).want(t, http.StatusNoContent, "")
		h, _ = look("buried")
		if h.State != "buried" || h.Attempts != 2 || h.LastError != long[:queue.MaxReasonLen] || h.BuriedAt == nil || *h.LastErrorAt != *h.BuriedAt {
			t.Fatalf("buried with a long reason: state %s, %d attempts, last_error of %d bytes at %v, buried at %v; want the reason cut to %d bytes",
				h.State, h.Attempts, len(h.LastError), h.LastErrorAt, h.BuriedAt, queue.MaxReasonLen)
		}

		// Kicked, reserved, released without a reason: the last error stays.
		c.do(req{method: "POST", path: path + "/kick"}).want(t, http.StatusNoContent, "")
		r = c.reserve(t, []string{"mail"}, 0)
		c.do(req{method: "POST", path: path + "/release", header: lease(r.Lease)}).want(t, http.StatusNoContent, "")
		h, _ = look("released without a reason")
		if h.Attempts != 3 || h.KickedAt == nil || h.LastError != long[:queue.MaxReasonLen] || *h.ReleasedAt < *h.LastErrorAt {
			t.Fatalf("released without a reason: %+v", h)
		}
	})
}
