package envoyrl_test

import (
	"math"
	"path/filepath"
	"testing"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"github.com/hourglass-io/hourglass/internal/testkit/backendtest"
	"github.com/hourglass-io/hourglass/server/envoyrl"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// withHits is d with its own hits_addend.
func withHits(d *rlv3.RateLimitDescriptor, n uint64) *rlv3.RateLimitDescriptor {
	d.HitsAddend = wrapperspb.UInt64(n)
	return d
}

// withLimit is d with a limit override.
func withLimit(d *rlv3.RateLimitDescriptor, rpu uint32, unit typev3.RateLimitUnit) *rlv3.RateLimitDescriptor {
	d.Limit = &rlv3.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: rpu, Unit: unit}
	return d
}

func remaining(t *testing.T, what string, r *rlsv3.RateLimitResponse, i int, want uint32) {
	t.Helper()
	if got := r.GetStatuses()[i].GetLimitRemaining(); got != want {
		t.Fatalf("%s: limit_remaining %d, want %d (status %v)", what, got, want, r.GetStatuses()[i])
	}
}

// TestReferenceAnswers: the answers envoyproxy/ratelimit gives, on every
// back end (bench/cmd/envoydiff compares the two services directly).
func TestReferenceAnswers(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			f := serve(t, b.open(t), load(t, "testdata/compat.yaml"), nil)

			// A billion a second loads and counts.
			r := f.ask(t, "compat", 1000, desc("huge", "x"))
			expect(t, "a billion a second", r, "OK OK")
			remaining(t, "a billion a second", r, 0, 1_000_000_000-1000)

			// requests_per_unit 0: nothing passes; a check of 0 hits does.
			r = f.ask(t, "compat", 0, desc("none", "x"))
			expect(t, "limit 0", r, "OVER_LIMIT OVER_LIMIT")
			if cl := r.GetStatuses()[0].GetCurrentLimit(); cl.GetRequestsPerUnit() != 0 || cl.GetUnit() != rlsv3.RateLimitResponse_RateLimit_MINUTE {
				t.Fatalf("limit 0: current_limit %v", cl)
			}
			expect(t, "limit 0, 0 hits", f.ask(t, "compat", 0, withHits(desc("none", "x"), 0)), "OK OK")

			// Unlimited: OK, 4294967295 remaining, no current_limit.
			r = f.ask(t, "compat", 7, desc("free", "x"))
			expect(t, "unlimited", r, "OK OK")
			remaining(t, "unlimited", r, 0, math.MaxUint32)
			if r.GetStatuses()[0].GetCurrentLimit() != nil || r.GetStatuses()[0].GetDurationUntilReset() != nil {
				t.Fatalf("unlimited: status %v, want no current_limit or duration", r.GetStatuses()[0])
			}

			// hits_addend: the request's 0 counts 1; the descriptor's own 0
			// checks without counting, also once the limit is spent.
			remaining(t, "request hits 0", f.ask(t, "compat", 0, desc("three", "a")), 0, 2)
			for range 3 {
				r := f.ask(t, "compat", 5, withHits(desc("three", "a"), 0))
				expect(t, "descriptor hits 0", r, "OK OK")
				remaining(t, "descriptor hits 0", r, 0, 2)
			}
			remaining(t, "descriptor hits 2", f.ask(t, "compat", 1, withHits(desc("three", "a"), 2)), 0, 0)
			r = f.ask(t, "compat", 0, withHits(desc("three", "a"), 0))
			expect(t, "descriptor hits 0 at the limit", r, "OK OK")
			remaining(t, "descriptor hits 0 at the limit", r, 0, 0)
			expect(t, "one more", f.ask(t, "compat", 0, desc("three", "a")), "OVER_LIMIT OVER_LIMIT")

			// The limit override: in place of the configured limit, and
			// for a descriptor the configuration does not know, when the
			// domain is known.
			for i, want := range []string{"OK OK", "OVER_LIMIT OVER_LIMIT"} {
				r := f.ask(t, "compat", 0, withLimit(desc("ten", "o"), 1, typev3.RateLimitUnit_MINUTE))
				expect(t, "override of a known descriptor", r, want)
				if cl := r.GetStatuses()[0].GetCurrentLimit(); cl.GetRequestsPerUnit() != 1 || cl.GetUnit() != rlsv3.RateLimitResponse_RateLimit_MINUTE {
					t.Fatalf("override %d: current_limit %v, want 1 per MINUTE", i, cl)
				}
			}
			for _, want := range []string{"OK OK", "OK OK", "OVER_LIMIT OVER_LIMIT"} {
				expect(t, "override of an unknown descriptor", f.ask(t, "compat", 0, withLimit(desc("nobody", "x", "deeper", "y"), 2, typev3.RateLimitUnit_DAY)), want)
			}
			r = f.ask(t, "elsewhere", 0, withLimit(desc("nobody", "x"), 0, typev3.RateLimitUnit_DAY))
			expect(t, "override in an unknown domain", r, "OK OK")
			if r.GetStatuses()[0].GetCurrentLimit() != nil {
				t.Fatalf("override in an unknown domain: %v", r.GetStatuses()[0])
			}
			if _, err := f.client.ShouldRateLimit(t.Context(), &rlsv3.RateLimitRequest{Domain: "compat",
				Descriptors: []*rlv3.RateLimitDescriptor{withLimit(desc("x", "y"), 1, typev3.RateLimitUnit_UNKNOWN)}}); status.Code(err) != codes.InvalidArgument {
				t.Fatalf("override of unit UNKNOWN: %v, want InvalidArgument", err)
			}

			// Quota mode: over the limit answers OK, with the limit and 0
			// remaining, and leaves the overall code alone.
			expect(t, "quota", f.ask(t, "compat", 0, desc("quota", "q")), "OK OK")
			r = f.ask(t, "compat", 0, desc("quota", "q"), desc("ten", "q"))
			expect(t, "quota over", r, "OK OK OK")
			if st := r.GetStatuses()[0]; st.GetCurrentLimit().GetRequestsPerUnit() != 1 || st.GetLimitRemaining() != 0 || st.GetDurationUntilReset() != nil {
				t.Fatalf("quota over: status %v", st)
			}

			// Wildcards: the first that matches in the file's order; with
			// share_threshold every value shares one counter, else each
			// has its own.
			expect(t, "shared a", f.ask(t, "compat", 0, desc("files", "shared-a")), "OK OK")
			expect(t, "shared b", f.ask(t, "compat", 0, desc("files", "shared-b")), "OK OK")
			expect(t, "shared c", f.ask(t, "compat", 0, desc("files", "shared-c")), "OVER_LIMIT OVER_LIMIT")
			r = f.ask(t, "compat", 0, desc("files", "own-a"))
			if r.GetStatuses()[0].GetCurrentLimit().GetRequestsPerUnit() != 2 {
				t.Fatalf("own-a: the first wildcard in the file (own*, 2) must win over o*: %v", r.GetStatuses()[0])
			}
			f.ask(t, "compat", 0, desc("files", "own-a"))
			expect(t, "own b", f.ask(t, "compat", 0, desc("files", "own-b")), "OK OK")

			// Several descriptors, each with its status; unknown keys OK.
			r = f.ask(t, "compat", 0, desc("week", "w"), desc("unknown", "u"), desc("free", "f"), desc("none", "n"))
			expect(t, "several", r, "OVER_LIMIT OK OK OK OVER_LIMIT")
			remaining(t, "several: unknown", r, 1, 0)
			remaining(t, "several: unlimited", r, 2, math.MaxUint32)

			// Metrics, by envoyproxy/ratelimit's arithmetic: 9 then 3 hits
			// on 10 an hour: within 9, over 2, near 1 (the 9th) + 1 (the
			// 10th, of the refused call), total 12.
			f.ask(t, "compat", 9, desc("ten", "m"))
			f.ask(t, "compat", 3, desc("ten", "m"))
			// (The "quota over" call above hit ten once, within.)
			for name, want := range map[string]float64{envoyrl.MetricTotalHits: 13, envoyrl.MetricWithinLimit: 10, envoyrl.MetricOverLimit: 2, envoyrl.MetricNearLimit: 2} {
				if got := testutil.ToFloat64(counter(t, f.reg, name, "compat", "ten")); got != want {
					t.Errorf("%s{descriptor=ten} %v, want %v", name, got, want)
				}
			}
			// value_to_metric names the value; the override, its entries.
			f.ask(t, "compat", 0, desc("user", "alice"))
			if got := testutil.ToFloat64(counter(t, f.reg, envoyrl.MetricTotalHits, "compat", "user_alice")); got != 1 {
				t.Errorf("value_to_metric: total_hits{descriptor=user_alice} %v, want 1", got)
			}
			if got := testutil.ToFloat64(counter(t, f.reg, envoyrl.MetricOverLimit, "compat", "nobody_x.deeper_y")); got != 1 {
				t.Errorf("override: over_limit{descriptor=nobody_x.deeper_y} %v, want 1", got)
			}
			if got := testutil.ToFloat64(counter(t, f.reg, envoyrl.MetricOverLimit, "compat", "files_shared*")); got != 1 {
				t.Errorf("share_threshold: over_limit{descriptor=files_shared*} %v, want 1", got)
			}
		})
	}
}

// The headers describe the descriptor with the least remaining, or the
// last one over its limit, as envoyproxy/ratelimit picks it; the reset is
// that descriptor's duration_until_reset, in whole seconds rounded up.
func TestResponseHeadersPickTheOneOver(t *testing.T) {
	f := serve(t, backendtest.Memory(t).RateLimits(), load(t, "testdata/compat.yaml"), func(s *envoyrl.Server) { s.ResponseHeaders = true })
	headers := func(r *rlsv3.RateLimitResponse) map[string]string {
		got := map[string]string{}
		for _, h := range r.GetResponseHeadersToAdd() {
			got[h.GetKey()] = h.GetValue()
		}
		return got
	}
	r := f.ask(t, "compat", 0, desc("ten", "h"), desc("three", "h"), desc("free", "h"))
	if got := headers(r); got["x-ratelimit-limit"] != "3" || got["x-ratelimit-remaining"] != "2" || got["x-ratelimit-reset"] != "20" {
		t.Fatalf("headers %v, want those of three: limit 3, remaining 2, reset 20 (one event back per 20 s)", got)
	}
	r = f.ask(t, "compat", 0, desc("none", "h"), desc("three", "h"))
	if got := headers(r); got["x-ratelimit-limit"] != "0" || got["x-ratelimit-remaining"] != "0" || got["x-ratelimit-reset"] != "60" {
		t.Fatalf("headers %v, want those of none, over its limit of 0 a minute", got)
	}
}

// A descriptor's hits_addend of 0 checks without counting, whatever the
// algorithm, on every back end.
func TestCheckWithoutCountingEveryAlgorithm(t *testing.T) {
	p := filepath.Join(t.TempDir(), "algs.yaml")
	writeFile(t, p, "domain: a\ndescriptors:\n"+
		"  - key: gcra\n    rate_limit: {unit: minute, requests_per_unit: 2}\n"+
		"  - key: log\n    rate_limit: {unit: minute, requests_per_unit: 2, algorithm: sliding_log}\n"+
		"  - key: window\n    rate_limit: {unit: minute, requests_per_unit: 2, algorithm: sliding_window}\n")
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			f := serve(t, b.open(t), load(t, p), nil)
			for _, alg := range []string{"gcra", "log", "window"} {
				remaining(t, alg+" hit 1", f.ask(t, "a", 0, desc(alg, "x")), 0, 1)
				for range 2 {
					r := f.ask(t, "a", 0, withHits(desc(alg, "x"), 0))
					expect(t, alg+" check", r, "OK OK")
					remaining(t, alg+" check", r, 0, 1)
				}
				remaining(t, alg+" hit 2", f.ask(t, "a", 0, desc(alg, "x")), 0, 0)
				expect(t, alg+" check at the limit", f.ask(t, "a", 0, withHits(desc(alg, "x"), 0)), "OK OK")
				expect(t, alg+" hit 3", f.ask(t, "a", 0, desc(alg, "x")), "OVER_LIMIT OVER_LIMIT")
			}
		})
	}
}
