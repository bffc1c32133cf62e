package httpapi_test

import (
	"context"
	"errors"
	"github.com/hourglass-io/hourglass/internal/testkit/backendtest"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/internal/testkit/redistest"
	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/ratelimit"
	"github.com/hourglass-io/hourglass/redisstore"
	"github.com/hourglass-io/hourglass/server/httpapi"
	"github.com/redis/go-redis/v9"
)

// startLimitServer serves the rate limits of store, with the named limits
// given as serve --limit takes them.
func startLimitServer(t testing.TB, store queue.Store, named []string, configure func(*httpapi.Server)) *testServer {
	t.Helper()
	nl := map[string][]ratelimit.Limit{}
	for _, s := range named {
		name, ls, err := httpapi.ParseNamedLimit(s)
		if err != nil {
			t.Fatal(err)
		}
		nl[name] = ls
	}
	return startServer(t, store, func(srv *httpapi.Server) {
		srv.Limiter = backendtest.Limiter(t, storesOf(t, store).limits, nil)
		srv.NamedLimits = nl
		if configure != nil {
			configure(srv)
		}
	})
}

type limitReply struct {
	Allowed      bool   `json:"allowed"`
	Remaining    int    `json:"remaining"`
	RetryAfterMS int64  `json:"retry_after_ms"`
	ResetAfterMS int64  `json:"reset_after_ms"`
	WaitedMS     *int64 `json:"waited_ms"`
}

func (c *client) allow(t testing.TB, body map[string]any) (limitReply, reply) {
	t.Helper()
	r := c.do(req{method: "POST", path: "/v1/limits/allow", json: body})
	var lr limitReply
	if r.status == http.StatusOK || r.status == http.StatusTooManyRequests {
		r.decode(t, &lr)
	}
	return lr, r
}

func TestLimitAllow(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open func(testing.TB) queue.Store) {
		ts := startLimitServer(t, open(t), []string{"sms=1/30m", "daily=2/1s;3/24h"}, nil)
		c := ts.c

		// Two per hour given in the request: two pass, the third is a 429
		// saying when to retry.
		hourly := map[string]any{"key": "user:1", "limits": []any{map[string]any{"events": 2, "per": "1h"}}}
		for want := 1; want >= 0; want-- {
			lr, r := c.allow(t, hourly)
			r.want(t, http.StatusOK, "")
			if !lr.Allowed || lr.Remaining != want || lr.RetryAfterMS != 0 || lr.ResetAfterMS <= 0 {
				t.Fatalf("allow: %+v, want allowed with %d remaining", lr, want)
			}
		}
		lr, r := c.allow(t, hourly)
		r.want(t, http.StatusTooManyRequests, httpapi.CodeRateLimited)
		// One event per 30 minutes comes back first: about 30 minutes.
		if lr.Allowed || lr.RetryAfterMS < 29*60*1000 || lr.RetryAfterMS > 30*60*1000 {
			t.Fatalf("limited allow: %+v, want a retry after about 30 minutes", lr)
		}
		if ra, _ := strconv.Atoi(r.header.Get("Retry-After")); ra != int((lr.RetryAfterMS+999)/1000) {
			t.Fatalf("Retry-After %q, want %d s (retry_after_ms %d rounded up)", r.header.Get("Retry-After"), (lr.RetryAfterMS+999)/1000, lr.RetryAfterMS)
		}
		// Another key has a limit of its own; per in milliseconds.
		c.allow(t, map[string]any{"key": "user:2", "limits": []any{map[string]any{"events": 2, "per": 3600000}}})

		// A named limit: one SMS per 30 minutes per number.
		sms := map[string]any{"key": "+15550100", "name": "sms"}
		c.allow(t, sms)
		c.do(req{method: "POST", path: "/v1/limits/allow", json: sms}).want(t, http.StatusTooManyRequests, httpapi.CodeRateLimited)
		c.allow(t, map[string]any{"key": "+15550101", "name": "sms"})
		// Several limits per name: the tighter one decides.
		daily := map[string]any{"key": "k", "name": "daily"}
		c.allow(t, daily)
		c.allow(t, daily)
		c.do(req{method: "POST", path: "/v1/limits/allow", json: daily}).want(t, http.StatusTooManyRequests, httpapi.CodeRateLimited)

		// A funnel of 10 units draining in a minute, 4 per call: two pass.
		funnel := map[string]any{"key": "up", "n": 1, "limits": []any{map[string]any{"capacity": 10, "drain": "1m", "quota": 4}}}
		c.allow(t, funnel)
		c.allow(t, funnel)
		c.do(req{method: "POST", path: "/v1/limits/allow", json: funnel}).want(t, http.StatusTooManyRequests, httpapi.CodeRateLimited)
		// A sliding log, a cost of several events.
		logLimit := map[string]any{"key": "s", "n": 3, "limits": []any{map[string]any{"events": 5, "per": "1m", "algorithm": "sliding-log"}}}
		if lr, r := c.allow(t, logLimit); r.status != http.StatusOK || lr.Remaining != 2 {
			t.Fatalf("sliding log: %d %+v, want allowed with 2 remaining", r.status, lr)
		}
		c.do(req{method: "POST", path: "/v1/limits/allow", json: logLimit}).want(t, http.StatusTooManyRequests, httpapi.CodeRateLimited)

		// Bad input changes nothing and says why.
		for _, tc := range []struct {
			body    map[string]any
			status  int
			code    string
			offSpec bool
			what    string
		}{
			{map[string]any{"key": "x", "name": "nope"}, 404, httpapi.CodeUnknownLimit, false, "unknown name"},
			{map[string]any{"key": "x"}, 400, httpapi.CodeBadRequest, false, "neither name nor limits"},
			{map[string]any{"key": "x", "name": "sms", "limits": []any{map[string]any{"events": 1, "per": "1s"}}}, 400, httpapi.CodeBadRequest, false, "both"},
			{map[string]any{"key": "x", "limits": []any{map[string]any{"events": 1, "per": "soon"}}}, 400, httpapi.CodeBadRequest, false, "a bad period"},
			{map[string]any{"key": "x", "limits": []any{map[string]any{"events": 1}}}, 400, httpapi.CodeBadLimit, false, "no period"},
			{map[string]any{"key": "x", "limits": []any{map[string]any{"events": 1, "per": "1s", "burst": 2, "capacity": 3}}}, 400, httpapi.CodeBadLimit, false, "a funnel with a burst"},
			{map[string]any{"key": "x", "limits": []any{map[string]any{"events": 1, "per": "1s"}, map[string]any{"events": 1, "per": "1s", "algorithm": "sliding-window"}}}, 400, httpapi.CodeBadLimit, false, "two algorithms"},
			{map[string]any{"key": "x", "n": 3, "limits": []any{map[string]any{"events": 2, "per": "1s"}}}, 400, httpapi.CodeImpossible, false, "a cost over the burst"},
			{map[string]any{"key": "", "name": "sms"}, 400, httpapi.CodeBadRequest, true, "an empty key"},
			{map[string]any{"key": "x", "name": "sms", "n": 0}, 400, httpapi.CodeBadRequest, true, "n 0"},
			{map[string]any{"key": "x", "name": "sms", "cost": 1}, 400, httpapi.CodeBadRequest, true, "an unknown field"},
		} {
			r := c.do(req{method: "POST", path: "/v1/limits/allow", json: tc.body, offSpec: tc.offSpec})
			if r.status != tc.status || r.errCode() != tc.code {
				t.Errorf("%s: %d %s, want %d %s", tc.what, r.status, r.body, tc.status, tc.code)
			}
		}
		// None of them charged anything: x is still idle under sms.
		c.allow(t, map[string]any{"key": "x", "name": "sms"})

		// The named limits, listed.
		var list struct {
			Limits []struct {
				Name, Spec string
			} `json:"limits"`
		}
		c.do(req{method: "GET", path: "/v1/limits"}).want(t, http.StatusOK, "").decode(t, &list)
		if len(list.Limits) != 2 || list.Limits[0].Name != "daily" || list.Limits[0].Spec != "2/1s;3/24h" || list.Limits[1].Spec != "1/30m" {
			t.Fatalf("GET /v1/limits: %+v", list)
		}
	})
}

func TestLimitWait(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open func(testing.TB) queue.Store) {
		ts := startLimitServer(t, open(t), []string{"slow=1/1h"}, func(s *httpapi.Server) { s.MaxWait = 2 * time.Second })
		c := ts.c
		wait := func(body map[string]any) (limitReply, reply) {
			t.Helper()
			r := c.do(req{method: "POST", path: "/v1/limits/wait", json: body})
			var lr limitReply
			if r.status == http.StatusOK || r.status == http.StatusTooManyRequests {
				r.decode(t, &lr)
			}
			return lr, r
		}
		// One per 300 ms: the first passes at once, the second waits for
		// its slot, about 300 ms later.
		fast := map[string]any{"key": "w", "limits": []any{map[string]any{"events": 1, "per": 300}}, "max_wait_ms": 5000}
		if lr, r := wait(fast); r.status != http.StatusOK || !lr.Allowed || lr.WaitedMS == nil || *lr.WaitedMS != 0 {
			t.Fatalf("first wait: %d %s", r.status, r.body)
		}
		start := time.Now()
		lr, r := wait(fast)
		r.want(t, http.StatusOK, "")
		if !lr.Allowed || lr.WaitedMS == nil || *lr.WaitedMS < 200 || *lr.WaitedMS > 300 {
			t.Fatalf("second wait: %s, want allowed after up to 300 ms", r.body)
		}
		if el := time.Since(start); el < time.Duration(*lr.WaitedMS)*time.Millisecond-time.Millisecond {
			t.Fatalf("the wait answered after %v, before its slot %d ms away", el, *lr.WaitedMS)
		}
		// A slot beyond the wait asked for is a 429 at once, charging
		// nothing.
		c.do(req{method: "POST", path: "/v1/limits/wait", json: map[string]any{"key": "w2", "name": "slow"}}).want(t, http.StatusOK, "")
		lr, r = wait(map[string]any{"key": "w2", "name": "slow", "max_wait_ms": 0})
		r.want(t, http.StatusTooManyRequests, httpapi.CodeRateLimited)
		if lr.RetryAfterMS < 59*60*1000 || r.header.Get("Retry-After") == "" {
			t.Fatalf("wait beyond the slot: %s %v", r.body, r.header)
		}
		// The server's MaxWait (2 s) bounds a wait that asks for more.
		lr, r = wait(map[string]any{"key": "w2", "name": "slow", "max_wait_ms": 7200000})
		r.want(t, http.StatusTooManyRequests, httpapi.CodeRateLimited)
		// Window algorithms have no slots to reserve.
		c.do(req{method: "POST", path: "/v1/limits/wait", json: map[string]any{"key": "w3", "limits": []any{map[string]any{"events": 1, "per": "1s", "algorithm": "sliding-window"}}}}).
			want(t, http.StatusBadRequest, httpapi.CodeNotSupported)
		c.do(req{method: "POST", path: "/v1/limits/wait", json: map[string]any{"key": "w3", "name": "slow", "max_wait_ms": -1}, offSpec: true}).
			want(t, http.StatusBadRequest, httpapi.CodeBadRequest)
	})
}

// limitWaits reads how many waits the server is serving.
func limitWaits(t testing.TB, ts *testServer) float64 {
	return gauge(t, ts.srv.Metrics, "hourglass_http_requests_in_flight", map[string]string{"primitive": "limits", "command": "wait"})
}

// A wait abandoned before its slot gives the slot back: the next caller
// gets it.
func TestLimitWaitAbandonedGivesBack(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open func(testing.TB) queue.Store) {
		ts := startLimitServer(t, open(t), []string{"every4s=1/4s"}, nil)
		c := ts.c
		c.allow(t, map[string]any{"key": "a", "name": "every4s"}) // the next slot is 4 s away
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			hr, _ := http.NewRequestWithContext(ctx, "POST", ts.url+"/v1/limits/wait", strings.NewReader(`{"key":"a","name":"every4s","max_wait_ms":20000}`))
			hr.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(hr)
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			done <- err
		}()
		waitFor(t, "the wait to be in flight", func() bool { return limitWaits(t, ts) > 0 })
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("the abandoned wait returned %v, want context.Canceled", err)
		}
		waitFor(t, "the server to end the wait", func() bool { return limitWaits(t, ts) == 0 })
		// Had the slot not been given back, the next would be 8 s away.
		lr, r := c.allow(t, map[string]any{"key": "a", "name": "every4s"})
		r.want(t, http.StatusTooManyRequests, httpapi.CodeRateLimited)
		if lr.RetryAfterMS > 4000 {
			t.Fatalf("after the abandoned wait, retry after %d ms, want at most 4000 (the slot given back)", lr.RetryAfterMS)
		}
	})
}

func TestLimitShutdownEndsWait(t *testing.T) {
	ts := startLimitServer(t, memStore(t), []string{"every4s=1/4s"}, nil)
	ts.c.allow(t, map[string]any{"key": "a", "name": "every4s"})
	done := make(chan reply, 1)
	go func() {
		var r reply
		defer func() { done <- r }()
		r = ts.c.do(req{method: "POST", path: "/v1/limits/wait", json: map[string]any{"key": "a", "name": "every4s"}})
	}()
	waitFor(t, "the wait to be in flight", func() bool { return limitWaits(t, ts) > 0 })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := ts.srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	(<-done).want(t, http.StatusServiceUnavailable, httpapi.CodeShuttingDown)
}

func TestLimitMetricsAndPanel(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open func(testing.TB) queue.Store) {
		ts := startLimitServer(t, open(t), []string{"sms=1/30m", "idle=5/1s"}, nil)
		c := ts.c
		c.allow(t, map[string]any{"key": "+15550100", "name": "sms"})
		c.do(req{method: "POST", path: "/v1/limits/allow", json: map[string]any{"key": "+15550100", "name": "sms"}}).want(t, http.StatusTooManyRequests, "")
		c.do(req{method: "POST", path: "/v1/limits/allow", json: map[string]any{"key": "+15550100", "name": "sms"}}).want(t, http.StatusTooManyRequests, "")
		c.allow(t, map[string]any{"key": "secret-key-7", "limits": []any{map[string]any{"events": 5, "per": "1s", "algorithm": "sliding-window"}}})

		m := ts.srv.Metrics
		for _, tc := range []struct {
			labels map[string]string
			want   float64
		}{
			{map[string]string{"limit": "sms", "algorithm": "gcra", "result": "allowed"}, 1},
			{map[string]string{"limit": "sms", "algorithm": "gcra", "result": "denied"}, 2},
			{map[string]string{"limit": "inline", "algorithm": "sliding-window", "result": "allowed"}, 1},
		} {
			if got := counter(t, m, httpapi.MetricLimiterDecisions, tc.labels); got != tc.want {
				t.Errorf("%s%v = %v, want %v", httpapi.MetricLimiterDecisions, tc.labels, got, tc.want)
			}
		}
		if got := counter(t, m, "hourglass_requests_total", map[string]string{"primitive": "limits", "command": "allow", "result": httpapi.CodeRateLimited}); got != 2 {
			t.Errorf("requests counted as rate_limited: %v, want 2", got)
		}
		r := c.do(req{method: "GET", path: "/metrics"})
		if strings.Contains(string(r.body), "secret-key-7") || strings.Contains(string(r.body), "+15550100") {
			t.Errorf("/metrics shows a key")
		}

		// The panel: the named limits (with and without traffic) and the
		// key called with limits of its own.
		p := c.do(req{method: "GET", path: "/dashboard/panels?view=limits"}).want(t, http.StatusOK, "")
		html := string(p.body)
		for _, want := range []string{
			`id="panel-limits"`,
			`data-limit="idle"`,
			`data-key="secret-key-7"`,
		} {
			if !strings.Contains(html, want) {
				t.Errorf("the panels lack %s", want)
			}
		}
		row := html[strings.Index(html, `data-limit="sms"`):]
		row = row[:strings.Index(row, "</tr>")]
		if !strings.Contains(row, `<td class="n allowed" data-label="allowed">1</td>`) || !strings.Contains(row, `<td class="n denied" data-label="denied">2</td>`) || !strings.Contains(row, "1/30m") {
			t.Errorf("the sms row is %s, want 1 allowed, 2 denied", row)
		}
		// Its remaining capacity now, for the key of its last decision:
		// none left, full again in about 30 minutes.
		if !strings.Contains(row, `data-label="remaining"><span class="n">0</span> <span class="note">for</span> <code>&#43;15550100</code> <span class="note">full in 29m`) {
			t.Errorf("the sms row is %s, want 0 remaining for key +15550100, full in 29m and some seconds", row)
		}
	})
}

func TestLimitStoreUnavailable(t *testing.T) {
	rs := redistest.Standalone(t)
	rc := redis.NewClient(&redis.Options{Addr: rs.Addr, MaxRetries: -1, DialTimeout: time.Second})
	t.Cleanup(func() { rc.Close() })
	store, err := redisstore.New(context.Background(), rc, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	ts := startLimitServer(t, store, []string{"sms=1/30m"}, nil)
	ts.c.allow(t, map[string]any{"key": "a", "name": "sms"})
	rs.Stop()
	ts.c.do(req{method: "POST", path: "/v1/limits/allow", json: map[string]any{"key": "b", "name": "sms"}}).want(t, http.StatusServiceUnavailable, httpapi.CodeUnavailable)
	ts.c.do(req{method: "POST", path: "/v1/limits/wait", json: map[string]any{"key": "b", "name": "sms"}}).want(t, http.StatusServiceUnavailable, httpapi.CodeUnavailable)
	if got := counter(t, ts.srv.Metrics, httpapi.MetricLimiterDecisions, map[string]string{"limit": "sms", "result": "error"}); got != 2 {
		t.Errorf("decisions with result error: %v, want 2", got)
	}
	if got := counter(t, ts.srv.Metrics, "hourglass_store_errors_total", map[string]string{"primitive": "limits"}); got != 2 {
		t.Errorf("store errors: %v, want 2", got)
	}
}

func TestParseLimits(t *testing.T) {
	for _, tc := range []struct {
		spec string
		want []ratelimit.Limit
	}{
		{"1/30m", []ratelimit.Limit{{Events: 1, Per: 30 * time.Minute}}},
		{"100/1s,burst=10", []ratelimit.Limit{{Events: 100, Per: time.Second, Burst: 10}}},
		{"100/s, burst=10 ,quota=2", []ratelimit.Limit{{Events: 100, Per: time.Second, Burst: 10, Quota: 2}}},
		{"funnel:capacity=100,drain=1m,quota=1", []ratelimit.Limit{ratelimit.Funnel(100, time.Minute, 1)}},
		{"1/1s;100/24h", []ratelimit.Limit{{Events: 1, Per: time.Second}, {Events: 100, Per: 24 * time.Hour}}},
		{"50/1m,algorithm=sliding-log", []ratelimit.Limit{{Events: 50, Per: time.Minute, Algorithm: ratelimit.SlidingLog}}},
	} {
		got, err := httpapi.ParseLimits(tc.spec)
		if err != nil {
			t.Errorf("ParseLimits(%q): %v", tc.spec, err)
			continue
		}
		if len(got) != len(tc.want) {
			t.Errorf("ParseLimits(%q) = %v, want %v", tc.spec, got, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("ParseLimits(%q)[%d] = %+v, want %+v", tc.spec, i, got[i], tc.want[i])
			}
		}
		// FormatLimits writes what ParseLimits reads back.
		again, err := httpapi.ParseLimits(httpapi.FormatLimits(got))
		if err != nil || len(again) != len(got) {
			t.Errorf("ParseLimits(FormatLimits(%q) = %q): %v", tc.spec, httpapi.FormatLimits(got), err)
		}
	}
	for _, bad := range []string{"", "100", "x/1s", "1/soon", "0/1s", "1/1s,burst=-1", "1/1s,size=3", "1/1s,algorithm=leaky",
		"funnel:capacity=10", "funnel:drain=1m", "funnel:capacity=10,drain=1m,depth=3", "1/1s;1/1s,algorithm=sliding-log", "1/0s"} {
		if _, err := httpapi.ParseLimits(bad); !errors.Is(err, ratelimit.ErrInvalidLimit) {
			t.Errorf("ParseLimits(%q): %v, want ErrInvalidLimit", bad, err)
		}
	}
	for _, bad := range []string{"sms", "=1/1s", "a b=1/1s", "sms=", strings.Repeat("n", 65) + "=1/1s"} {
		if _, _, err := httpapi.ParseNamedLimit(bad); !errors.Is(err, ratelimit.ErrInvalidLimit) {
			t.Errorf("ParseNamedLimit(%q): %v, want ErrInvalidLimit", bad, err)
		}
	}
}

// With the Envoy rate limit service on, the rate limit panel lists its
// descriptors and their hits; without it, it says nothing of Envoy.
func TestLimitPanelEnvoyDescriptors(t *testing.T) {
	rows := []httpapi.EnvoyDescriptor{
		{Domain: "edge", Descriptor: "remote_address", Limit: "3/1m0s burst 3 GCRA", TotalHits: 4, OverLimit: 1},
		{Domain: "edge", Descriptor: "shadowed", Limit: "1/1m0s burst 1 GCRA", Shadow: true, TotalHits: 3, OverLimit: 2, ShadowMode: 2},
		{Domain: "edge", Descriptor: "gone_x", TotalHits: 1},
	}
	ts := startLimitServer(t, memStore(t), nil, func(s *httpapi.Server) {
		s.EnvoyDescriptors = func() []httpapi.EnvoyDescriptor { return rows }
	})
	html := string(ts.c.do(req{method: "GET", path: "/dashboard/panels?view=limits"}).want(t, http.StatusOK, "").body)
	for _, want := range []string{
		"Envoy descriptors",
		`data-domain="edge" data-descriptor="remote_address"`,
		`<td class="n total" data-label="hits">4</td>`,
		"shadow mode",
		"(2 answered OK)",
		"no longer configured",
	} {
		if !strings.Contains(html, want) {
			t.Errorf("the rate limit panel lacks %q", want)
		}
	}
	plain := startLimitServer(t, memStore(t), nil, nil)
	if html := string(plain.c.do(req{method: "GET", path: "/dashboard/panels?view=limits"}).want(t, http.StatusOK, "").body); strings.Contains(html, "Envoy") {
		t.Error("the panel speaks of Envoy without the service")
	}
}
