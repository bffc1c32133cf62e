package envoyrl

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/hourglass-io/hourglass/ratelimit"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// match is the rule a request descriptor reached, with its store key and
// its metrics key.
type match struct {
	r       *rule
	key     string
	statKey string
}

// find walks a domain's tree with a descriptor's entries: at each level an
// exact key and value first, then a wildcard value, then the key alone. The
// descriptor has a limit when its last entry reaches a rule with one.
func find(domain string, top []*rule, d *rlv3.RateLimitDescriptor) (match, bool) {
	level := top
	var b strings.Builder
	b.WriteString(strconv.Itoa(len(domain)))
	b.WriteString(":")
	b.WriteString(domain)
	var stat []string
	var at *rule
	for _, e := range d.GetEntries() {
		var exact, wild, any *rule
		for _, r := range level {
			if r.key != e.GetKey() {
				continue
			}
			switch {
			case r.wildcard:
				if strings.HasPrefix(e.GetValue(), r.value) && (wild == nil || len(r.value) > len(wild.value)) {
					wild = r
				}
			case r.value == "":
				any = r
			case r.value == e.GetValue():
				exact = r
			}
		}
		at = exact
		if at == nil {
			at = wild
		}
		if at == nil {
			at = any
		}
		if at == nil {
			return match{}, false
		}
		// The store key holds every entry's key and value, length-prefixed.
		for _, s := range []string{e.GetKey(), e.GetValue()} {
			b.WriteString("|")
			b.WriteString(strconv.Itoa(len(s)))
			b.WriteString(":")
			b.WriteString(s)
		}
		part := at.key
		switch {
		case at.detailed:
			part += "_" + e.GetValue()
		case at.value != "":
			part += "_" + at.value
		}
		stat = append(stat, part)
		level = at.children
	}
	if at == nil || (at.limit == nil && !at.unlimited) {
		return match{}, false
	}
	sk := at.statKey
	if at.detailed {
		sk = strings.Join(stat, ".")
	}
	return match{r: at, key: b.String(), statKey: sk}, true
}

// ShouldRateLimit decides a request: every descriptor that reaches a limit
// is checked and charged hits_addend (default 1) events; the overall code
// is OVER_LIMIT when any descriptor is over its limit and not in shadow
// mode. The descriptors with GCRA limits that are not in shadow mode are
// decided together, in one round trip, and charged all or none
// (ratelimit.Limiter.AllowAll); those in shadow mode or with a window
// algorithm are decided each on its own.
func (s *Server) ShouldRateLimit(ctx context.Context, req *rlsv3.RateLimitRequest) (*rlsv3.RateLimitResponse, error) {
	domain := req.GetDomain()
	if domain == "" {
		return nil, status.Error(codes.InvalidArgument, "rate limit domain must not be empty")
	}
	if len(req.GetDescriptors()) == 0 {
		return nil, status.Error(codes.InvalidArgument, "rate limit descriptor list must not be empty")
	}
	rs := s.Config.cur.Load()
	top := rs.domains[domain]
	resp := &rlsv3.RateLimitResponse{OverallCode: rlsv3.RateLimitResponse_OK,
		Statuses: make([]*rlsv3.RateLimitResponse_DescriptorStatus, len(req.GetDescriptors()))}
	matches := make([]match, len(req.GetDescriptors()))
	found := make([]bool, len(matches))
	replaced := map[string]bool{}
	for i, d := range req.GetDescriptors() {
		matches[i], found[i] = find(domain, top, d)
		if found[i] {
			for _, n := range matches[i].r.replaces {
				replaced[n] = true
			}
		}
	}
	// The descriptors to decide, and those decided together.
	var (
		limited []int
		hits    = make([]int, len(matches))
		group   []int
		reqs    []ratelimit.Request
	)
	for i, d := range req.GetDescriptors() {
		resp.Statuses[i] = &rlsv3.RateLimitResponse_DescriptorStatus{Code: rlsv3.RateLimitResponse_OK}
		m := matches[i]
		if !found[i] || m.r.unlimited || (m.r.name != "" && replaced[m.r.name]) {
			continue
		}
		n := int(req.GetHitsAddend())
		if h := d.GetHitsAddend(); h != nil {
			n = int(min(h.GetValue(), 1<<31-1))
		}
		if n == 0 {
			n = 1
		}
		hits[i] = n
		limited = append(limited, i)
		if !m.r.shadow && m.r.limit.Algorithm == ratelimit.GCRA {
			group = append(group, i)
			reqs = append(reqs, ratelimit.Request{Key: m.key, N: n, Limits: []ratelimit.Limit{*m.r.limit}})
		}
	}
	results := make([]ratelimit.Result, len(matches))
	errs := make([]error, len(matches))
	if len(group) > 0 {
		_, got, err := s.Limiter.AllowAll(ctx, reqs)
		if err != nil && !errors.Is(err, ratelimit.ErrStore) {
			// One bad limit: decide each on its own, so the others are
			// still answered and the bad one reports its error.
			for _, i := range group {
				results[i], errs[i] = s.Limiter.AllowN(ctx, matches[i].key, hits[i], *matches[i].r.limit)
			}
		} else {
			for j, i := range group {
				if err != nil {
					errs[i] = err
				} else {
					results[i] = got[j]
				}
			}
		}
	}
	var tightest *rlsv3.RateLimitResponse_DescriptorStatus
	for _, i := range limited {
		st := resp.Statuses[i]
		m := matches[i]
		n := hits[i]
		lim := *m.r.limit
		st.CurrentLimit = currentLimit(m.r.name, lim)
		res, err := results[i], errs[i]
		if !slices.Contains(group, i) {
			res, err = s.Limiter.AllowN(ctx, m.key, n, lim)
		}
		over := false
		switch {
		case errors.Is(err, ratelimit.ErrImpossible):
			over = true
			res.RetryAfter = lim.Per
		case errors.Is(err, ratelimit.ErrStore):
			s.metrics.storeError(domain, "closed")
			s.logger().Warn("rate limit store failed: answering OVER_LIMIT (fail closed)", "domain", domain, "err", err)
			over = true
		case err != nil:
			return nil, status.Error(codes.Internal, err.Error())
		case res.StoreErr != nil:
			s.metrics.storeError(domain, "open")
		default:
			over = !res.Allowed
		}
		s.metrics.decided(domain, m.statKey, n, over, m.r.shadow, res.Remaining, lim.Events, res.StoreErr != nil)
		st.LimitRemaining = uint32(max(res.Remaining, 0))
		reset := res.ResetAfter
		if over {
			reset = res.RetryAfter
			if !m.r.shadow {
				st.Code = rlsv3.RateLimitResponse_OVER_LIMIT
				resp.OverallCode = rlsv3.RateLimitResponse_OVER_LIMIT
			}
		}
		st.DurationUntilReset = durationpb.New(reset)
		if tightest == nil || st.LimitRemaining < tightest.LimitRemaining {
			tightest = st
		}
	}
	if s.ResponseHeaders && tightest != nil {
		resp.ResponseHeadersToAdd = headers(tightest)
	}
	return resp, nil
}

// currentLimit states a limit as Envoy's RateLimit: its unit when the
// period is one (a week, 30 days, 365 days included), else a unit with a
// multiplier when the period is a whole number of seconds, else UNKNOWN
// with the events per period.
func currentLimit(name string, lim ratelimit.Limit) *rlsv3.RateLimitResponse_RateLimit {
	out := &rlsv3.RateLimitResponse_RateLimit{Name: name, RequestsPerUnit: uint32(lim.Events)}
	switch lim.Per {
	case units["week"]:
		out.Unit = rlsv3.RateLimitResponse_RateLimit_WEEK
		return out
	case units["month"]:
		out.Unit = rlsv3.RateLimitResponse_RateLimit_MONTH
		return out
	case units["year"]:
		out.Unit = rlsv3.RateLimitResponse_RateLimit_YEAR
		return out
	}
	for _, u := range []struct {
		d    time.Duration
		unit rlsv3.RateLimitResponse_RateLimit_Unit
	}{{24 * time.Hour, rlsv3.RateLimitResponse_RateLimit_DAY}, {time.Hour, rlsv3.RateLimitResponse_RateLimit_HOUR},
		{time.Minute, rlsv3.RateLimitResponse_RateLimit_MINUTE}, {time.Second, rlsv3.RateLimitResponse_RateLimit_SECOND}} {
		if lim.Per%u.d == 0 {
			out.Unit = u.unit
			if k := lim.Per / u.d; k > 1 {
				out.UnitMultiplier = wrapUint32(uint32(k))
			}
			return out
		}
	}
	return out
}

// headers are the x-ratelimit-* response headers of the descriptor with the
// least remaining.
func headers(st *rlsv3.RateLimitResponse_DescriptorStatus) []*corev3.HeaderValue {
	secs := int64((st.GetDurationUntilReset().AsDuration() + time.Second - 1) / time.Second)
	return []*corev3.HeaderValue{
		{Key: "x-ratelimit-limit", Value: strconv.FormatUint(uint64(st.GetCurrentLimit().GetRequestsPerUnit()), 10)},
		{Key: "x-ratelimit-remaining", Value: strconv.FormatUint(uint64(st.GetLimitRemaining()), 10)},
		{Key: "x-ratelimit-reset", Value: strconv.FormatInt(secs, 10)},
	}
}

func wrapUint32(v uint32) *wrapperspb.UInt32Value { return wrapperspb.UInt32(v) }
