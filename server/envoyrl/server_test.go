package envoyrl_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/hourglass-io/hourglass/internal/testkit/backendtest"
	"github.com/hourglass-io/hourglass/ratelimit"
	"github.com/hourglass-io/hourglass/server/envoyrl"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// backends are the stores the service is tested on.
var backends = []struct {
	name string
	open func(testing.TB) ratelimit.Store
}{
	{"Memory", func(t testing.TB) ratelimit.Store { return backendtest.Memory(t).RateLimits() }},
	{"Redis", func(t testing.TB) ratelimit.Store { return backendtest.Redis(t).RateLimits() }},
	{"Cluster", func(t testing.TB) ratelimit.Store { return backendtest.Cluster(t).RateLimits() }},
}

// fixture is a served Server and a client of it.
type fixture struct {
	srv    *envoyrl.Server
	client rlsv3.RateLimitServiceClient
	conn   *grpc.ClientConn
	reg    *prometheus.Registry
}

func serve(t *testing.T, store ratelimit.Store, cfg *envoyrl.Config, edit func(*envoyrl.Server)) *fixture {
	t.Helper()
	reg := prometheus.NewRegistry()
	srv := &envoyrl.Server{Limiter: backendtest.Limiter(t, store, nil), Config: cfg, Metrics: envoyrl.NewMetrics(reg), ReloadInterval: -1}
	if edit != nil {
		edit(srv)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }()
	conn, err := grpc.NewClient(l.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if err := <-done; !errors.Is(err, envoyrl.ErrServerClosed) {
			t.Errorf("Serve: %v, want ErrServerClosed", err)
		}
	})
	return &fixture{srv: srv, client: rlsv3.NewRateLimitServiceClient(conn), conn: conn, reg: reg}
}

func load(t *testing.T, path string) *envoyrl.Config {
	t.Helper()
	c, err := envoyrl.LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// desc builds a descriptor from key, value pairs.
func desc(kv ...string) *rlv3.RateLimitDescriptor {
	d := &rlv3.RateLimitDescriptor{}
	for i := 0; i < len(kv); i += 2 {
		d.Entries = append(d.Entries, &rlv3.RateLimitDescriptor_Entry{Key: kv[i], Value: kv[i+1]})
	}
	return d
}

func (f *fixture) ask(t *testing.T, domain string, hits uint32, ds ...*rlv3.RateLimitDescriptor) *rlsv3.RateLimitResponse {
	t.Helper()
	resp, err := f.client.ShouldRateLimit(t.Context(), &rlsv3.RateLimitRequest{Domain: domain, Descriptors: ds, HitsAddend: hits})
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// codes of a response: the overall code, then each descriptor's.
func codesOf(r *rlsv3.RateLimitResponse) string {
	s := []string{r.GetOverallCode().String()}
	for _, st := range r.GetStatuses() {
		s = append(s, st.GetCode().String())
	}
	return strings.Join(s, " ")
}

func expect(t *testing.T, what string, r *rlsv3.RateLimitResponse, want string) {
	t.Helper()
	if got := codesOf(r); got != want {
		t.Fatalf("%s: %s, want %s", what, got, want)
	}
}

func TestShouldRateLimit(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			f := serve(t, b.open(t), load(t, "testdata/basic.yaml"), nil)

			// 3 a minute per remote address, each address its own.
			for i := range 3 {
				r := f.ask(t, "edge", 0, desc("remote_address", "192.0.2.7"))
				expect(t, "address hit", r, "OK OK")
				st := r.GetStatuses()[0]
				if st.GetLimitRemaining() != uint32(2-i) || st.GetCurrentLimit().GetRequestsPerUnit() != 3 ||
					st.GetCurrentLimit().GetUnit() != rlsv3.RateLimitResponse_RateLimit_MINUTE || st.GetDurationUntilReset().AsDuration() <= 0 {
					t.Fatalf("hit %d: status %v", i, st)
				}
			}
			r := f.ask(t, "edge", 0, desc("remote_address", "192.0.2.7"))
			expect(t, "fourth hit", r, "OVER_LIMIT OVER_LIMIT")
			if d := r.GetStatuses()[0].GetDurationUntilReset().AsDuration(); d <= 0 || d > 20*time.Second+time.Millisecond {
				t.Fatalf("over the limit: duration_until_reset %v, want (0, 20s]", d)
			}
			expect(t, "another address", f.ask(t, "edge", 0, desc("remote_address", "192.0.2.8")), "OK OK")
			// The unlimited value.
			for range 5 {
				r := f.ask(t, "edge", 0, desc("remote_address", "10.0.0.1"))
				expect(t, "unlimited", r, "OK OK")
				if r.GetStatuses()[0].GetCurrentLimit() != nil {
					t.Fatal("unlimited: a current_limit was given")
				}
			}
			// hits_addend: 3 at once fills a fresh address; one more is over.
			expect(t, "hits_addend 3", f.ask(t, "edge", 3, desc("remote_address", "192.0.2.9")), "OK OK")
			expect(t, "after hits_addend", f.ask(t, "edge", 1, desc("remote_address", "192.0.2.9")), "OVER_LIMIT OVER_LIMIT")
			// More than the limit at once can never pass.
			expect(t, "hits_addend 4", f.ask(t, "edge", 4, desc("remote_address", "192.0.2.10")), "OVER_LIMIT OVER_LIMIT")
			// The descriptor's own hits_addend wins over the request's.
			d := desc("remote_address", "192.0.2.11")
			d.HitsAddend = wrapperspb.UInt64(3)
			expect(t, "descriptor hits_addend", f.ask(t, "edge", 1, d), "OK OK")
			expect(t, "after descriptor hits_addend", f.ask(t, "edge", 0, desc("remote_address", "192.0.2.11")), "OVER_LIMIT OVER_LIMIT")

			// Nested: tenant then path, 2 a second; the tenant alone has its own limit.
			for range 2 {
				expect(t, "nested", f.ask(t, "edge", 0, desc("tenant", "acme", "path", "/upload")), "OK OK")
			}
			expect(t, "nested over", f.ask(t, "edge", 0, desc("tenant", "acme", "path", "/upload")), "OVER_LIMIT OVER_LIMIT")
			expect(t, "tenant alone", f.ask(t, "edge", 0, desc("tenant", "acme")), "OK OK")
			// No limit: an unknown path, an unknown tenant, an unknown domain.
			for _, dd := range []*rlv3.RateLimitDescriptor{desc("tenant", "acme", "path", "/other"), desc("tenant", "other"), desc("nothing", "x")} {
				r := f.ask(t, "edge", 0, dd)
				expect(t, "no limit", r, "OK OK")
				if r.GetStatuses()[0].GetCurrentLimit() != nil {
					t.Fatal("no limit: a current_limit was given")
				}
			}
			expect(t, "unknown domain", f.ask(t, "elsewhere", 0, desc("remote_address", "1")), "OK OK")

			// Wildcard: 1 a day per value that starts with bot-.
			expect(t, "bot-a", f.ask(t, "edge", 0, desc("user_agent", "bot-a")), "OK OK")
			expect(t, "bot-a again", f.ask(t, "edge", 0, desc("user_agent", "bot-a")), "OVER_LIMIT OVER_LIMIT")
			expect(t, "bot-b", f.ask(t, "edge", 0, desc("user_agent", "bot-b")), "OK OK")
			expect(t, "not a bot", f.ask(t, "edge", 0, desc("user_agent", "curl")), "OK OK")
			expect(t, "not a bot again", f.ask(t, "edge", 0, desc("user_agent", "curl")), "OK OK")

			// Shadow mode: over the limit, answered OK, counted.
			for range 3 {
				expect(t, "shadow", f.ask(t, "edge", 0, desc("shadowed", "x")), "OK OK")
			}
			if got := testutil.ToFloat64(counter(t, f.reg, envoyrl.MetricShadowMode, "edge", "shadowed")); got != 2 {
				t.Fatalf("shadow_mode counter %v, want 2", got)
			}

			// replaces: plan_override's limit replaces plan's.
			for range 3 {
				expect(t, "replaced", f.ask(t, "edge", 0, desc("plan", "free"), desc("plan_override", "vip")), "OK OK OK")
			}
			expect(t, "plan alone", f.ask(t, "edge", 0, desc("plan", "free")), "OK OK")
			expect(t, "plan alone again", f.ask(t, "edge", 0, desc("plan", "free")), "OVER_LIMIT OVER_LIMIT")

			// Several descriptors: the overall code is OVER_LIMIT if any is.
			expect(t, "mixed", f.ask(t, "edge", 0, desc("remote_address", "192.0.2.7"), desc("remote_address", "192.0.2.12")), "OVER_LIMIT OVER_LIMIT OK")
			// All or none: the descriptor with room was not charged by the
			// refused request, so all 3 of its minute are left.
			for i := range 3 {
				r := f.ask(t, "edge", 0, desc("remote_address", "192.0.2.12"))
				expect(t, "after a refused request", r, "OK OK")
				if got := r.GetStatuses()[0].GetLimitRemaining(); got != uint32(2-i) {
					t.Fatalf("after a refused request, hit %d: limit_remaining %d, want %d", i, got, 2-i)
				}
			}

			// Extensions: 2 per 90 s, a sliding log.
			for range 2 {
				r := f.ask(t, "edge", 0, desc("report", "q1"))
				expect(t, "per 90s", r, "OK OK")
				cl := r.GetStatuses()[0].GetCurrentLimit()
				if cl.GetUnit() != rlsv3.RateLimitResponse_RateLimit_SECOND || cl.GetUnitMultiplier().GetValue() != 90 {
					t.Fatalf("per 90s: current_limit %v, want 2 per 90 SECOND", cl)
				}
			}
			expect(t, "per 90s over", f.ask(t, "edge", 0, desc("report", "q1")), "OVER_LIMIT OVER_LIMIT")
			// Burst 2 of 60 an hour.
			expect(t, "burst", f.ask(t, "edge", 2, desc("burst", "b")), "OK OK")
			expect(t, "burst over", f.ask(t, "edge", 0, desc("burst", "b")), "OVER_LIMIT OVER_LIMIT")

			// Metrics.
			if got := testutil.ToFloat64(counter(t, f.reg, envoyrl.MetricOverLimit, "edge", "remote_address")); got < 5 {
				t.Fatalf("over_limit of remote_address %v, want at least 5", got)
			}
			if got := testutil.ToFloat64(counter(t, f.reg, envoyrl.MetricTotalHits, "edge", "tenant_acme.path_/upload")); got != 3 {
				t.Fatalf("total_hits of tenant_acme.path_/upload %v, want 3", got)
			}
			if got := testutil.ToFloat64(counter(t, f.reg, envoyrl.MetricTotalHits, "edge", "report_q1")); got != 3 {
				t.Fatalf("total_hits of report_q1 (detailed_metric) %v, want 3", got)
			}
		})
	}
}

// counter finds a counter of the registry by name and labels.
func counter(t *testing.T, reg *prometheus.Registry, name, domain, descriptor string) prometheus.Collector {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			lv := map[string]string{}
			for _, l := range m.GetLabel() {
				lv[l.GetName()] = l.GetValue()
			}
			if lv["domain"] == domain && lv["descriptor"] == descriptor {
				return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "x"}, func() float64 { return m.GetCounter().GetValue() })
			}
		}
	}
	t.Fatalf("no %s{domain=%q,descriptor=%q}", name, domain, descriptor)
	return nil
}

func TestResponseHeaders(t *testing.T) {
	f := serve(t, backendtest.Memory(t).RateLimits(), load(t, "testdata/basic.yaml"), func(s *envoyrl.Server) { s.ResponseHeaders = true })
	r := f.ask(t, "edge", 0, desc("remote_address", "a"), desc("tenant", "acme"))
	got := map[string]string{}
	for _, h := range r.GetResponseHeadersToAdd() {
		got[h.GetKey()] = h.GetValue()
	}
	if got["x-ratelimit-limit"] != "3" || got["x-ratelimit-remaining"] != "2" || got["x-ratelimit-reset"] == "" {
		t.Fatalf("headers %v, want limit 3 remaining 2 and a reset", got)
	}
	f2 := serve(t, backendtest.Memory(t).RateLimits(), load(t, "testdata/basic.yaml"), nil)
	if h := f2.ask(t, "edge", 0, desc("remote_address", "a")).GetResponseHeadersToAdd(); len(h) != 0 {
		t.Fatalf("headers without the option: %v", h)
	}
}

func TestBadRequest(t *testing.T) {
	f := serve(t, backendtest.Memory(t).RateLimits(), load(t, "testdata/basic.yaml"), nil)
	for _, req := range []*rlsv3.RateLimitRequest{{Descriptors: []*rlv3.RateLimitDescriptor{desc("a", "b")}}, {Domain: "edge"}} {
		_, err := f.client.ShouldRateLimit(t.Context(), req)
		if status.Code(err) != codes.InvalidArgument {
			t.Fatalf("%v: %v, want InvalidArgument", req, err)
		}
	}
}

func TestAuthTokenAndHealth(t *testing.T) {
	f := serve(t, backendtest.Memory(t).RateLimits(), load(t, "testdata/basic.yaml"), func(s *envoyrl.Server) { s.AuthToken = "s3cret" })
	req := &rlsv3.RateLimitRequest{Domain: "edge", Descriptors: []*rlv3.RateLimitDescriptor{desc("remote_address", "a")}}
	if _, err := f.client.ShouldRateLimit(t.Context(), req); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("without a token: %v, want Unauthenticated", err)
	}
	bad := metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer wrong")
	if _, err := f.client.ShouldRateLimit(bad, req); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("with a wrong token: %v, want Unauthenticated", err)
	}
	good := metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer s3cret")
	if _, err := f.client.ShouldRateLimit(good, req); err != nil {
		t.Fatalf("with the token: %v", err)
	}
	// Health checks need no token.
	hr, err := healthpb.NewHealthClient(f.conn).Check(t.Context(), &healthpb.HealthCheckRequest{Service: "envoy.service.ratelimit.v3.RateLimitService"})
	if err != nil || hr.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health: %v %v, want SERVING", hr, err)
	}
}

// TestReload: a change is picked up by the server's poll; a bad change is
// refused and the old configuration stays in force, while requests flow.
func TestReload(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "edge.yaml")
	writeAtomic(t, p, "domain: edge\ndescriptors:\n  - key: k\n    rate_limit: {unit: day, requests_per_unit: 1}\n")
	cfg := load(t, dir)
	reloads := make(chan error, 100)
	f := serve(t, backendtest.Memory(t).RateLimits(), cfg, func(s *envoyrl.Server) {
		s.ReloadInterval = 10 * time.Millisecond
		s.OnReload = func(err error) { reloads <- err }
	})

	// Requests flow throughout the reloads, never failing.
	stop := make(chan struct{})
	var flowing sync.WaitGroup
	var calls atomic.Int64
	flowing.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := f.client.ShouldRateLimit(context.Background(), &rlsv3.RateLimitRequest{Domain: "edge", Descriptors: []*rlv3.RateLimitDescriptor{desc("k", "flow")}}); err != nil {
				t.Errorf("a call during reloads: %v", err)
				return
			}
			calls.Add(1)
		}
	})
	defer func() { close(stop); flowing.Wait() }()

	expect(t, "first", f.ask(t, "edge", 0, desc("k", "v")), "OK OK")
	expect(t, "second", f.ask(t, "edge", 0, desc("k", "v")), "OVER_LIMIT OVER_LIMIT")

	writeAtomic(t, p, "domain: edge\ndescriptors:\n  - key: k\n    rate_limit: {unit: day, requests_per_unit: 1}\n  - key: k2\n    rate_limit: {unit: day, requests_per_unit: 1}\n")
	if err := waitReload(t, reloads); err != nil {
		t.Fatalf("reload: %v", err)
	}
	if cfg.Generation() != 2 {
		t.Fatalf("generation %d, want 2", cfg.Generation())
	}
	expect(t, "new descriptor", f.ask(t, "edge", 0, desc("k2", "v")), "OK OK")
	expect(t, "new descriptor again", f.ask(t, "edge", 0, desc("k2", "v")), "OVER_LIMIT OVER_LIMIT")

	// A bad file: refused, the old configuration stays.
	writeAtomic(t, p, "domain: edge\ndescriptors:\n  - key: k2\n    rate_limit: {unit: eon, requests_per_unit: 1}\n")
	if err := waitReload(t, reloads); !errors.Is(err, envoyrl.ErrConfig) || !strings.Contains(err.Error(), "edge.yaml:4") {
		t.Fatalf("Reload: %v, want ErrConfig naming edge.yaml:4", err)
	}
	if cfg.Generation() != 2 {
		t.Fatalf("generation %d after a bad file, want 2", cfg.Generation())
	}
	expect(t, "old config in force", f.ask(t, "edge", 0, desc("k2", "w")), "OK OK")
	expect(t, "old config in force again", f.ask(t, "edge", 0, desc("k2", "w")), "OVER_LIMIT OVER_LIMIT")
	if calls.Load() == 0 {
		t.Fatal("no call went through during the reloads")
	}
}

// writeAtomic replaces a file as deployments do (a new file renamed over
// the old), so that the poll never sees it half written.
func writeAtomic(t *testing.T, path, text string) {
	t.Helper()
	tmp := path + ".tmp"
	writeFile(t, tmp, text)
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func waitReload(t *testing.T, reloads <-chan error) error {
	t.Helper()
	select {
	case err := <-reloads:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("no reload within 10s")
		return nil
	}
}

// TestConcurrentStreams: 64 concurrent client connections hammer one limit
// of 200 a day. GCRA admits at most Burst + d*Events/Per events in any
// interval d (docs/ratelimit.md), so in a run of d seconds at most
// 200 + d/432 pass, and with no refill to speak of, all 200 do. The sliding
// log admits at most 200 in any day: exactly 200.
func TestConcurrentStreams(t *testing.T) {
	for _, alg := range []string{"gcra", "sliding_log"} {
		for _, b := range backends {
			t.Run(alg+"/"+b.name, func(t *testing.T) { concurrentStreams(t, b.open(t), alg) })
		}
	}
}

func concurrentStreams(t *testing.T, store ratelimit.Store, alg string) {
	dir := t.TempDir()
	p := filepath.Join(dir, "c.yaml")
	writeFile(t, p, "domain: c\ndescriptors:\n  - key: k\n    rate_limit: {unit: day, requests_per_unit: 200, algorithm: "+alg+"}\n")
	f := serve(t, store, load(t, p), nil)
	start := time.Now()
	var admitted atomic.Int64
	var wg sync.WaitGroup
	for range 64 {
		conn, err := grpc.NewClient(f.conn.Target(), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		c := rlsv3.NewRateLimitServiceClient(conn)
		wg.Go(func() {
			for range 10 {
				r, err := c.ShouldRateLimit(context.Background(), &rlsv3.RateLimitRequest{Domain: "c", Descriptors: []*rlv3.RateLimitDescriptor{desc("k", "hot")}})
				if err != nil {
					t.Error(err)
					return
				}
				if r.GetOverallCode() == rlsv3.RateLimitResponse_OK {
					admitted.Add(1)
				}
			}
		})
	}
	wg.Wait()
	d := time.Since(start)
	bound := int64(200)
	if alg == "gcra" {
		bound += int64(d / (432 * time.Second))
	}
	if got := admitted.Load(); got < 200 || got > bound {
		t.Fatalf("admitted %d of 640 in %v, want 200 to %d", got, d, bound)
	}
}

// Descriptors lists the configured descriptors with the hits the service
// counted, for the dashboard.
func TestDescriptors(t *testing.T) {
	f := serve(t, backendtest.Memory(t).RateLimits(), load(t, "testdata/basic.yaml"), nil)
	for range 4 {
		f.ask(t, "edge", 0, desc("remote_address", "192.0.2.7"))
	}
	var got *envoyrl.DescriptorStats
	ds := f.srv.Descriptors()
	for i, d := range ds {
		if d.Domain == "edge" && d.Descriptor == "remote_address" {
			got = &ds[i]
		}
		if i > 0 && (ds[i-1].Domain > d.Domain || ds[i-1].Domain == d.Domain && ds[i-1].Descriptor >= d.Descriptor) {
			t.Errorf("not sorted: %s/%s after %s/%s", d.Domain, d.Descriptor, ds[i-1].Domain, ds[i-1].Descriptor)
		}
	}
	if got == nil {
		t.Fatalf("no row for edge/remote_address in %+v", ds)
	}
	if got.TotalHits != 4 || got.OverLimit != 1 || !strings.HasPrefix(got.Limit, "3/1m0s") || got.File == "" || got.Line == 0 {
		t.Fatalf("edge/remote_address: %+v, want 4 hits, 1 over the limit of 3/1m0s, and its file and line", *got)
	}
	var unlimited bool
	for _, d := range ds {
		unlimited = unlimited || d.Limit == "unlimited"
	}
	if !unlimited {
		t.Errorf("the unlimited descriptor is not listed: %+v", ds)
	}
}
