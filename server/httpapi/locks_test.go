package httpapi_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/internal/testkit/redistest"
	"github.com/hourglass-io/hourglass/lock"
	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/redisstore"
	"github.com/hourglass-io/hourglass/server/httpapi"
	"github.com/redis/go-redis/v9"
)

// startLockServer serves the queue and the locks of store.
func startLockServer(t testing.TB, store queue.Store, configure func(*httpapi.Server)) *testServer {
	t.Helper()
	ls := lockClient(t, storesOf(t, store).locks)
	return startServer(t, store, func(s *httpapi.Server) {
		s.Locks = ls
		if configure != nil {
			configure(s)
		}
	})
}

type lockGrant struct {
	Name     string `json:"name"`
	Token    string `json:"token"`
	Fence    uint64 `json:"fence"`
	Limit    int    `json:"limit"`
	TTLMS    int64  `json:"ttl_ms"`
	WaitedMS int64  `json:"waited_ms"`
}

func lockPath(name, op string) string { return "/v1/locks/" + url.PathEscape(name) + "/" + op }

func lockToken(tok string) map[string]string { return map[string]string{httpapi.LockTokenHeader: tok} }

func (c *client) obtain(t testing.TB, name string, body map[string]any) lockGrant {
	t.Helper()
	var g lockGrant
	r := req{method: "POST", path: lockPath(name, "obtain")}
	if body != nil {
		r.json = body
	}
	c.do(r).want(t, http.StatusOK, "").decode(t, &g)
	if g.Name != name || g.Token == "" || g.Fence == 0 {
		t.Fatalf("grant %+v: want name %q, a token and a fence", g, name)
	}
	return g
}

func (c *client) lockTTL(t testing.TB, name, token string) int64 {
	t.Helper()
	var r struct {
		TTLMS int64 `json:"ttl_ms"`
	}
	c.do(req{method: "GET", path: lockPath(name, "ttl"), header: lockToken(token)}).want(t, http.StatusOK, "").decode(t, &r)
	return r.TTLMS
}

func TestLockLifecycle(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open func(testing.TB) queue.Store) {
		c := startLockServer(t, open(t), nil).c
		name := "nightly {eu} ünï" // braces, a space, UTF-8: percent-encoded in the path
		g := c.obtain(t, name, map[string]any{"ttl_ms": 30000})
		if g.Limit != 1 || g.TTLMS != 30000 {
			t.Fatalf("grant %+v: want a lock with a 30 s lease", g)
		}
		// Held: a try by anyone else is refused at once.
		c.do(req{method: "POST", path: lockPath(name, "obtain")}).want(t, http.StatusConflict, httpapi.CodeNotObtained)

		if left := c.lockTTL(t, name, g.Token); left <= 0 || left > 30000 {
			t.Fatalf("ttl %d ms, want in (0, 30000]", left)
		}
		// Only the owner token acts on the grant; another changes nothing.
		other := "not-the-owner"
		c.do(req{method: "GET", path: lockPath(name, "ttl"), header: lockToken(other)}).want(t, http.StatusConflict, httpapi.CodeNotHeld)
		c.do(req{method: "POST", path: lockPath(name, "release"), header: lockToken(other)}).want(t, http.StatusConflict, httpapi.CodeNotHeld)
		c.do(req{method: "POST", path: lockPath(name, "refresh"), header: lockToken(other), json: map[string]any{"ttl_ms": 1000}}).want(t, http.StatusConflict, httpapi.CodeNotHeld)
		c.lockTTL(t, name, g.Token) // still held

		// Refresh extends the lease beyond the first one.
		c.do(req{method: "POST", path: lockPath(name, "refresh"), header: lockToken(g.Token), json: map[string]any{"ttl_ms": 600000}}).want(t, http.StatusNoContent, "")
		if left := c.lockTTL(t, name, g.Token); left <= 30000 || left > 600000 {
			t.Fatalf("ttl %d ms after a refresh to 600 s", left)
		}

		c.do(req{method: "POST", path: lockPath(name, "release"), header: lockToken(g.Token)}).want(t, http.StatusNoContent, "")
		c.do(req{method: "POST", path: lockPath(name, "release"), header: lockToken(g.Token)}).want(t, http.StatusConflict, httpapi.CodeNotHeld)
		c.do(req{method: "GET", path: lockPath(name, "ttl"), header: lockToken(g.Token)}).want(t, http.StatusConflict, httpapi.CodeNotHeld)

		// The next grant has a larger fence and another token.
		g2 := c.obtain(t, name, nil)
		if g2.Fence <= g.Fence || g2.Token == g.Token || g2.TTLMS != lock.DefaultTTL.Milliseconds() {
			t.Fatalf("second grant %+v after %+v: want a larger fence, a new token, the default lease", g2, g)
		}

		// A name with a slash is one path segment, as %2F. (The document's
		// router in the tests decodes it first: these requests are checked
		// by hand.)
		var gs lockGrant
		c.do(req{method: "POST", path: lockPath("reports/eu", "obtain"), offSpec: true}).want(t, http.StatusOK, "").decode(t, &gs)
		if gs.Name != "reports/eu" {
			t.Fatalf("grant of %q, want reports/eu", gs.Name)
		}
		c.do(req{method: "POST", path: lockPath("reports", "obtain")}).want(t, http.StatusOK, "")
		c.do(req{method: "POST", path: lockPath("reports/eu", "release"), header: lockToken(gs.Token), offSpec: true}).want(t, http.StatusNoContent, "")
	})
}

func TestLockLeaseRunsOut(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open func(testing.TB) queue.Store) {
		c := startLockServer(t, open(t), nil).c
		g := c.obtain(t, "short", map[string]any{"ttl_ms": 50})
		// No one renews an HTTP lease: it ends, and another obtain gets the lock.
		waitFor(t, "the lease to run out", func() bool {
			r := c.do(req{method: "GET", path: lockPath("short", "ttl"), header: lockToken(g.Token)})
			return r.status == http.StatusConflict && r.errCode() == httpapi.CodeNotHeld
		})
		g2 := c.obtain(t, "short", nil)
		if g2.Fence <= g.Fence {
			t.Fatalf("fence %d after an expired grant's %d", g2.Fence, g.Fence)
		}
		c.do(req{method: "POST", path: lockPath("short", "refresh"), header: lockToken(g.Token), json: map[string]any{"ttl_ms": 1000}}).want(t, http.StatusConflict, httpapi.CodeNotHeld)
	})
}

func TestSemaphore(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open func(testing.TB) queue.Store) {
		c := startLockServer(t, open(t), nil).c
		a := c.obtain(t, "pool", map[string]any{"limit": 2})
		b := c.obtain(t, "pool", map[string]any{"limit": 2})
		if a.Limit != 2 || a.Token == b.Token || b.Fence <= a.Fence {
			t.Fatalf("grants %+v and %+v: want two slots with their own tokens and increasing fences", a, b)
		}
		c.do(req{method: "POST", path: lockPath("pool", "obtain"), json: map[string]any{"limit": 2}}).want(t, http.StatusConflict, httpapi.CodeNotObtained)
		c.do(req{method: "POST", path: lockPath("pool", "release"), header: lockToken(a.Token)}).want(t, http.StatusNoContent, "")
		c.obtain(t, "pool", map[string]any{"limit": 2})
		c.lockTTL(t, "pool", b.Token)
	})
}

func TestLockObtainLongPoll(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open func(testing.TB) queue.Store) {
		store := open(t)
		ts := startLockServer(t, store, func(s *httpapi.Server) { s.MaxWait = 200 * time.Millisecond })
		c := ts.c
		g := c.obtain(t, "lp", nil)
		// Held: a wait of a minute is cut to MaxWait.
		start := time.Now()
		c.do(req{method: "POST", path: lockPath("lp", "obtain"), json: map[string]any{"wait_ms": 60000}}).want(t, http.StatusConflict, httpapi.CodeNotObtained)
		if waited := time.Since(start); waited < 200*time.Millisecond {
			t.Fatalf("a refused wait returned after %v, before MaxWait", waited)
		}

		// A waiter on a second server of the same store gets the lock when
		// the holder releases it through the first; in fair mode too.
		for _, fair := range []bool{false, true} {
			ts2 := startLockServer(t, store, nil)
			got := make(chan reply, 1)
			go func() {
				got <- ts2.c.do(req{method: "POST", path: lockPath("lp", "obtain"), json: map[string]any{"wait_ms": 20000, "fair": fair}})
			}()
			waitFor(t, "the obtain to be in flight", func() bool { return inFlight(t, ts2, "locks", "obtain") > 0 })
			c.do(req{method: "POST", path: lockPath("lp", "release"), header: lockToken(g.Token)}).want(t, http.StatusNoContent, "")
			var g2 lockGrant
			select {
			case r := <-got:
				r.want(t, http.StatusOK, "").decode(t, &g2)
			case <-time.After(15 * time.Second):
				t.Fatal("the waiting obtain did not get the released lock")
			}
			if g2.Fence <= g.Fence {
				t.Fatalf("the waiter's fence %d, want above %d", g2.Fence, g.Fence)
			}
			g = g2
		}
	})
}

func TestLockShutdownEndsLongPoll(t *testing.T) {
	ts := startLockServer(t, memStore(t), nil)
	ts.c.obtain(t, "busy", nil)
	// The waiter reports what it got rather than failing the test from its
	// goroutine.
	hc := &http.Client{Transport: &http.Transport{}, Timeout: time.Minute}
	type result struct {
		status int
		body   string
		err    error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := hc.Post(ts.url+lockPath("busy", "obtain"), "application/json", strings.NewReader(`{"wait_ms":25000}`))
		if err != nil {
			done <- result{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		done <- result{resp.StatusCode, string(b), err}
	}()
	waitFor(t, "the obtain to be in flight", func() bool { return inFlight(t, ts, "locks", "obtain") > 0 })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := ts.srv.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	select {
	case r := <-done:
		if r.err != nil || r.status != http.StatusServiceUnavailable || !strings.Contains(r.body, `"`+httpapi.CodeShuttingDown+`"`) {
			t.Fatalf("the waiting obtain got %d %s (%v), want 503 %s", r.status, r.body, r.err, httpapi.CodeShuttingDown)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the waiting obtain did not end")
	}
}

func TestLockBadInput(t *testing.T) {
	c := startLockServer(t, memStore(t), nil).c
	g := c.obtain(t, "held", nil)
	for _, tc := range []struct {
		r    req
		code string
	}{
		{req{method: "POST", path: lockPath("x", "obtain"), json: map[string]any{"ttl_ms": -1}, offSpec: true}, httpapi.CodeBadRequest},
		{req{method: "POST", path: lockPath("x", "obtain"), json: map[string]any{"ttl_ms": lock.MaxTTL.Milliseconds() + 1}, offSpec: true}, httpapi.CodeBadRequest},
		{req{method: "POST", path: lockPath("x", "obtain"), json: map[string]any{"wait_ms": -1}, offSpec: true}, httpapi.CodeBadRequest},
		{req{method: "POST", path: lockPath("x", "obtain"), json: map[string]any{"limit": -1}, offSpec: true}, httpapi.CodeBadRequest},
		{req{method: "POST", path: lockPath("x", "obtain"), json: map[string]any{"limit": lock.MaxLimit + 1}, offSpec: true}, httpapi.CodeBadRequest},
		{req{method: "POST", path: lockPath("x", "obtain"), json: map[string]any{"ttl": 5}, offSpec: true}, httpapi.CodeBadRequest},
		{req{method: "POST", path: lockPath("x", "obtain"), raw: []byte("{"), contentType: "application/json", offSpec: true}, httpapi.CodeBadRequest},
		{req{method: "POST", path: lockPath(strings.Repeat("n", lock.MaxNameLen+1), "obtain"), offSpec: true}, httpapi.CodeBadRequest},
		{req{method: "POST", path: lockPath("held", "release"), offSpec: true}, httpapi.CodeBadRequest},
		{req{method: "GET", path: lockPath("held", "ttl"), header: lockToken(strings.Repeat("t", 129)), offSpec: true}, httpapi.CodeBadRequest},
		{req{method: "POST", path: lockPath("held", "refresh"), header: lockToken(g.Token), offSpec: true}, httpapi.CodeBadRequest},
		{req{method: "POST", path: lockPath("held", "refresh"), header: lockToken(g.Token), json: map[string]any{"ttl_ms": 0}, offSpec: true}, httpapi.CodeBadRequest},
	} {
		c.do(tc.r).want(t, http.StatusBadRequest, tc.code)
	}
	c.do(req{method: "POST", path: lockPath("x", "obtain"), raw: []byte("x"), contentType: "text/plain", offSpec: true}).want(t, http.StatusUnsupportedMediaType, httpapi.CodeUnsupported)
	// Nothing changed: the lock is still held by its owner, x is free.
	c.lockTTL(t, "held", g.Token)
	c.obtain(t, "x", nil)
}

func TestLockStoreUnavailable(t *testing.T) {
	rs := redistest.Standalone(t)
	rc := redis.NewClient(&redis.Options{Addr: rs.Addr, MaxRetries: -1, DialTimeout: time.Second})
	t.Cleanup(func() { rc.Close() })
	store, err := redisstore.New(context.Background(), rc, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	ts := startLockServer(t, store, nil)
	g := ts.c.obtain(t, "gone", nil)
	rs.Stop()
	ts.c.do(req{method: "POST", path: lockPath("other", "obtain")}).want(t, http.StatusServiceUnavailable, httpapi.CodeUnavailable)
	ts.c.do(req{method: "POST", path: lockPath("gone", "release"), header: lockToken(g.Token)}).want(t, http.StatusServiceUnavailable, httpapi.CodeUnavailable)
	m := ts.srv.Metrics
	if n := counter(t, m, httpapi.MetricLockGrants, map[string]string{"result": "error"}); n != 1 {
		t.Errorf("obtains counted as errors: %v, want 1", n)
	}
	if n := counter(t, m, httpapi.MetricLockReleases, map[string]string{"result": "error"}); n != 1 {
		t.Errorf("releases counted as errors: %v, want 1", n)
	}
	if n := counter(t, m, "hourglass_store_errors_total", map[string]string{"protocol": "http", "primitive": "locks"}); n != 2 {
		t.Errorf("store errors of the locks: %v, want 2", n)
	}
}

func TestLockMetrics(t *testing.T) {
	ts := startLockServer(t, memStore(t), nil)
	c := ts.c
	g := c.obtain(t, "m", nil)
	c.do(req{method: "POST", path: lockPath("m", "obtain")}).want(t, http.StatusConflict, httpapi.CodeNotObtained)
	c.do(req{method: "POST", path: lockPath("m", "obtain"), json: map[string]any{"wait_ms": 20, "fair": true}}).want(t, http.StatusConflict, httpapi.CodeNotObtained)
	c.do(req{method: "POST", path: lockPath("m", "release"), header: lockToken("someone-else")}).want(t, http.StatusConflict, httpapi.CodeNotHeld)
	c.do(req{method: "POST", path: lockPath("m", "release"), header: lockToken(g.Token)}).want(t, http.StatusNoContent, "")
	m := ts.srv.Metrics
	for _, w := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{httpapi.MetricLockGrants, map[string]string{"mode": "try", "result": "granted"}, 1},
		{httpapi.MetricLockGrants, map[string]string{"mode": "try", "result": "refused"}, 1},
		{httpapi.MetricLockGrants, map[string]string{"mode": "fair", "result": "refused"}, 1},
		{httpapi.MetricLockReleases, map[string]string{"result": "released"}, 1},
		{httpapi.MetricLockReleases, map[string]string{"result": "not_held"}, 1},
		{"hourglass_requests_total", map[string]string{"primitive": "locks", "command": "obtain", "result": httpapi.CodeNotObtained}, 2},
	} {
		if got := counter(t, m, w.name, w.labels); got != w.want {
			t.Errorf("%s%v = %v, want %v", w.name, w.labels, got, w.want)
		}
	}
	hs := find(t, m, httpapi.MetricLockWait, map[string]string{"mode": "fair", "result": "refused"})
	if len(hs) != 1 || hs[0].GetHistogram().GetSampleCount() != 1 || hs[0].GetHistogram().GetSampleSum() < 0.02 {
		t.Errorf("wait histogram of the fair refusal: %v, want one sample of at least 20 ms", hs)
	}
}

func TestDashboardListsLocks(t *testing.T) {
	ts := startLockServer(t, memStore(t), nil)
	c := ts.c
	a := c.obtain(t, "db-migration", map[string]any{"ttl_ms": 600000})
	c.obtain(t, "workers", map[string]any{"limit": 3})
	gone := c.obtain(t, "released-one", nil)
	c.do(req{method: "POST", path: lockPath("released-one", "release"), header: lockToken(gone.Token)}).want(t, http.StatusNoContent, "")

	page := string(c.do(req{method: "GET", path: "/dashboard/panels?view=locks"}).want(t, http.StatusOK, "").body)
	for _, want := range []string{`id="panel-locks"`, `data-lock="db-migration"`, a.Token[:6] + "…", ">" + strconv.FormatUint(a.Fence, 10) + "<", "semaphore of 3", "this server granted over HTTP"} {
		if !strings.Contains(page, want) {
			t.Errorf("the locks panel lacks %q", want)
		}
	}
	if strings.Contains(page, "released-one") {
		t.Error("the locks panel lists a released lock")
	}
	if strings.Contains(page, a.Token) {
		t.Error("the locks panel shows a whole owner token")
	}
}
