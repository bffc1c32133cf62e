package envoyrl

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"github.com/hourglass-io/hourglass/ratelimit"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// match is the limit a request descriptor reached: a rule of the
// configuration, or the descriptor's own limit override; with its store
// key and its metrics key.
type match struct {
	r       *rule
	key     string
	statKey string
}

// find walks a domain's tree with a descriptor's entries, as
// envoyproxy/ratelimit does: at each level the exact key and value first,
// then the first wildcard value (in the file's order) that is a prefix of
// the value, then the key alone. The descriptor has a limit when its last
// entry reaches a rule with one.
func find(domain string, top []*rule, d *rlv3.RateLimitDescriptor) (match, bool) {
	level := top
	var key strings.Builder
	writeKeyPrefix(&key, domain)
	entries := d.GetEntries()
	var at *rule
	var path [8]*rule
	matched := path[:0]
	dynamic := false // the metrics key holds the request's values
	for i, e := range entries {
		var exact, wild, any *rule
		for _, r := range level {
			if r.key != e.GetKey() {
				continue
			}
			switch {
			case r.wildcard:
				if wild == nil && strings.HasPrefix(e.GetValue(), r.value) {
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
		// The store key holds every entry's key and value (a shared
		// wildcard's pattern in place of the value), length-prefixed.
		v := e.GetValue()
		if at.wildcard && at.shareThreshold {
			v = at.value + "*"
		}
		writeEntry(&key, e.GetKey(), v)
		matched = append(matched, at)
		dynamic = dynamic || at.valueToMetric
		if i < len(entries)-1 {
			level = at.children
		}
	}
	if at == nil || (!at.limited && !at.unlimited) {
		return match{}, false
	}
	m := match{r: at, key: key.String(), statKey: at.statKey}
	if dynamic || at.detailed {
		m.statKey = statKey(entries, matched)
	}
	return m, true
}

// statKey is the metrics key of a descriptor whose rules name the
// request's values, as envoyproxy/ratelimit forms it. When the last rule
// has detailed_metric: every level's key_value (a shared wildcard's
// pattern in place of its value). Otherwise per level: at a wildcard its
// pattern, or with value_to_metric (and no share_threshold) the value; at
// an exact value the value; at the key alone, with value_to_metric the
// value, else nothing.
func statKey(entries []*rlv3.RateLimitDescriptor_Entry, matched []*rule) string {
	leaf := matched[len(matched)-1]
	shared := false
	for _, r := range matched {
		shared = shared || (r.wildcard && r.shareThreshold)
	}
	var stat strings.Builder
	for i, e := range entries {
		at := matched[i]
		if i > 0 {
			stat.WriteByte('.')
		}
		stat.WriteString(e.GetKey())
		switch {
		case leaf.detailed && at.wildcard && at.shareThreshold:
			stat.WriteString("_" + at.value + "*")
		case leaf.detailed && (!shared || e.GetValue() != ""):
			stat.WriteString("_" + e.GetValue())
		case leaf.detailed:
		case at.wildcard && (at.shareThreshold || !at.valueToMetric):
			stat.WriteString("_" + at.value + "*")
		case at.wildcard || at.value != "" || (at.valueToMetric && e.GetValue() != ""):
			stat.WriteString("_" + e.GetValue())
		}
	}
	return stat.String()
}

func writeKeyPrefix(b *strings.Builder, domain string) {
	b.WriteString(strconv.Itoa(len(domain)))
	b.WriteString(":")
	b.WriteString(domain)
}

func writeEntry(b *strings.Builder, k, v string) {
	for _, s := range []string{k, v} {
		b.WriteString("|")
		b.WriteString(strconv.Itoa(len(s)))
		b.WriteString(":")
		b.WriteString(s)
	}
}

// overrideUnits are the names of the units a limit override may give.
var overrideUnits = map[typev3.RateLimitUnit]string{
	typev3.RateLimitUnit_SECOND:                                  "second",
	typev3.RateLimitUnit_MINUTE:                                  "minute",
	typev3.RateLimitUnit_HOUR:                                    "hour",
	typev3.RateLimitUnit_DAY:                                     "day",
	typev3.RateLimitUnit_MONTH:                                   "month",
	typev3.RateLimitUnit_YEAR:                                    "year",
	typev3.RateLimitUnit(rlsv3.RateLimitResponse_RateLimit_WEEK): "week",
}

// override is the rule of a descriptor's own limit (RateLimitDescriptor.
// limit, set by Envoy from route metadata): it takes the place of the
// configuration for that descriptor, known to it or not, without shadow
// mode, name or replaces, as in envoyproxy/ratelimit. Its unit_multiplier
// lengthens the period.
func override(domain string, d *rlv3.RateLimitDescriptor) (match, error) {
	o := d.GetLimit()
	unitName, ok := overrideUnits[o.GetUnit()]
	if !ok {
		return match{}, fmt.Errorf("limit override unit %v: want SECOND, MINUTE, HOUR, DAY, WEEK, MONTH or YEAR", o.GetUnit())
	}
	u := units[unitName]
	r := &rule{limited: true, period: u.d, pb: &rlsv3.RateLimitResponse_RateLimit{RequestsPerUnit: o.GetRequestsPerUnit(), Unit: u.unit}}
	if m := o.GetUnitMultiplier(); m != nil && m.GetValue() > 1 {
		r.period *= time.Duration(m.GetValue())
		r.pb.UnitMultiplier = wrapUint32(m.GetValue())
	}
	if o.GetRequestsPerUnit() > 0 {
		lim, err := compile(o.GetRequestsPerUnit(), r.period, 0, ratelimit.GCRA, false)
		if err != nil {
			return match{}, fmt.Errorf("limit override: %w", err)
		}
		r.setLimit(lim)
	}
	var key, stat strings.Builder
	writeKeyPrefix(&key, domain)
	key.WriteString("|override")
	for i, e := range d.GetEntries() {
		writeEntry(&key, e.GetKey(), e.GetValue())
		if i > 0 {
			stat.WriteByte('.')
		}
		stat.WriteString(e.GetKey())
		if e.GetValue() != "" {
			stat.WriteString("_" + e.GetValue())
		}
	}
	return match{r: r, key: key.String(), statKey: stat.String()}, nil
}

// unlimitedRemaining is limit_remaining of an unlimited descriptor.
const unlimitedRemaining = math.MaxUint32

// ShouldRateLimit decides a request as envoyproxy/ratelimit does (the
// differences are in docs/envoy.md): every descriptor that reaches a limit
// is checked and charged its hits (the descriptor's own hits_addend, 0
// included, which checks without counting; else the request's, at least
// 1); the overall code is OVER_LIMIT when any descriptor is over its
// limit outside shadow and quota mode. The descriptors with GCRA limits
// outside shadow and quota mode are decided together, in one round trip,
// and charged all or none (ratelimit.Limiter.AllowAll); the others are
// decided each on its own.
func (s *Server) ShouldRateLimit(ctx context.Context, req *rlsv3.RateLimitRequest) (*rlsv3.RateLimitResponse, error) {
	domain := req.GetDomain()
	if domain == "" {
		return nil, status.Error(codes.InvalidArgument, "rate limit domain must not be empty")
	}
	ds := req.GetDescriptors()
	if len(ds) == 0 {
		return nil, status.Error(codes.InvalidArgument, "rate limit descriptor list must not be empty")
	}
	rs := s.Config.cur.Load()
	top, known := rs.domains[domain]
	resp := &rlsv3.RateLimitResponse{OverallCode: rlsv3.RateLimitResponse_OK,
		Statuses: make([]*rlsv3.RateLimitResponse_DescriptorStatus, len(ds))}
	if !known {
		for i := range ds {
			resp.Statuses[i] = &rlsv3.RateLimitResponse_DescriptorStatus{Code: rlsv3.RateLimitResponse_OK}
		}
		return resp, nil
	}
	items, err := matchDescriptors(domain, top, ds)
	if err != nil {
		return nil, err
	}
	limited, group := planDescriptors(req, items, resp)
	s.decideTogether(ctx, items, group)
	hs := headerStatus{min: uint32(unlimitedRemaining)}
	for _, i := range limited {
		st := resp.Statuses[i]
		over, err := s.decide(ctx, domain, &items[i], st)
		if err != nil {
			return nil, err
		}
		r := items[i].m.r
		switch {
		case over && r.quota:
			hs.note(st)
			// Quota mode: answered OK, without a time to wait.
			st.DurationUntilReset = nil
		case over && r.shadow:
			hs.note(st)
		case over:
			st.Code = rlsv3.RateLimitResponse_OVER_LIMIT
			resp.OverallCode = rlsv3.RateLimitResponse_OVER_LIMIT
			hs.st, hs.min = st, 0
		default:
			hs.note(st)
		}
	}
	if s.ResponseHeaders && hs.st != nil {
		resp.ResponseHeadersToAdd = headers(hs.st)
	}
	return resp, nil
}

// descriptor is one descriptor of a request: its limit, whether it has
// one, its hits, and the decision when made together with others.
type descriptor struct {
	d       *rlv3.RateLimitDescriptor
	m       match
	found   bool
	hits    int
	decided bool
	res     ratelimit.Result
	err     error
}

// matchDescriptors finds the limit of each descriptor of ds (or the one it
// gives itself), and leaves out those replaced by another's.
func matchDescriptors(domain string, top []*rule, ds []*rlv3.RateLimitDescriptor) ([]descriptor, error) {
	items := make([]descriptor, len(ds))
	var replaced map[string]bool
	for i, d := range ds {
		items[i].d = d
		if d.GetLimit() != nil {
			m, err := override(domain, d)
			if err != nil {
				return nil, status.Errorf(codes.InvalidArgument, "descriptor %d: %v", i, err)
			}
			items[i].m, items[i].found = m, true
			continue
		}
		items[i].m, items[i].found = find(domain, top, d)
		if items[i].found && len(items[i].m.r.replaces) > 0 {
			if replaced == nil {
				replaced = map[string]bool{}
			}
			for _, n := range items[i].m.r.replaces {
				replaced[n] = true
			}
		}
	}
	for i := range items {
		if m := items[i].m; items[i].found && !m.r.unlimited && m.r.name != "" && replaced[m.r.name] {
			items[i].found, items[i].m = false, match{}
		}
	}
	return items, nil
}

// planDescriptors gives every descriptor its status in resp (OK, the
// unlimited ones' remaining) and returns those to decide, and of them
// those decided together (GCRA limits outside shadow and quota mode that
// charge hits).
func planDescriptors(req *rlsv3.RateLimitRequest, items []descriptor, resp *rlsv3.RateLimitResponse) (limited, group []int) {
	for i := range items {
		it := &items[i]
		st := &rlsv3.RateLimitResponse_DescriptorStatus{Code: rlsv3.RateLimitResponse_OK}
		resp.Statuses[i] = st
		m := it.m
		switch {
		case !it.found:
			continue
		case m.r.unlimited:
			st.LimitRemaining = unlimitedRemaining
			continue
		}
		n := uint64(max(req.GetHitsAddend(), 1))
		if h := it.d.GetHitsAddend(); h != nil {
			n = h.GetValue()
		}
		it.hits = int(min(n, 1<<31-1))
		limited = append(limited, i)
		if it.hits > 0 && m.r.limit != nil && !m.r.shadow && !m.r.quota && m.r.limit.Algorithm == ratelimit.GCRA {
			group = append(group, i)
		}
	}
	return limited, group
}

// decideTogether decides the group's descriptors in one round trip,
// charged all or none, when there are more than one (one alone is decided
// by AllowN). When one limit is bad, none is decided: each is then
// decided on its own, so the others are still answered and the bad one
// reports its error.
func (s *Server) decideTogether(ctx context.Context, items []descriptor, group []int) {
	if len(group) < 2 {
		return
	}
	reqs := make([]ratelimit.Request, len(group))
	for j, i := range group {
		reqs[j] = ratelimit.Request{Key: items[i].m.key, N: items[i].hits, Limits: items[i].m.r.limits}
	}
	_, got, err := s.Limiter.AllowAll(ctx, reqs)
	if err != nil && !errors.Is(err, ratelimit.ErrStore) {
		return
	}
	for j, i := range group {
		items[i].decided = true
		if err != nil {
			items[i].err = err
		} else {
			items[i].res = got[j]
		}
	}
}

// decide decides one descriptor (unless decided together), counts it and
// fills in st but for its code; over reports whether it is over its
// limit. An error is the reply's (a limit the store refuses).
func (s *Server) decide(ctx context.Context, domain string, it *descriptor, st *rlsv3.RateLimitResponse_DescriptorStatus) (over bool, _ error) {
	m := it.m
	n := it.hits
	st.CurrentLimit = m.r.pb
	events := int(m.r.pb.GetRequestsPerUnit())
	var (
		res    ratelimit.Result
		err    error
		failed bool
		used   = events // before this call's hits
	)
	switch {
	case m.r.limit == nil: // requests_per_unit 0: nothing passes
		over = n > 0
		res.ResetAfter, res.RetryAfter = m.r.period, m.r.period
	case n == 0:
		res, err = s.Limiter.Peek(ctx, m.key, m.r.limits...)
	case it.decided:
		res, err = it.res, it.err
	default:
		res, err = s.Limiter.AllowN(ctx, m.key, n, m.r.limits...)
	}
	switch {
	case m.r.limit == nil:
	case errors.Is(err, ratelimit.ErrImpossible):
		over = true
		used = 0
		res.RetryAfter = m.r.limit.Per
	case errors.Is(err, ratelimit.ErrStore):
		s.metrics.storeError(domain, "closed")
		s.logger().Warn("rate limit store failed: answering OVER_LIMIT (fail closed)", "domain", domain, "err", err)
		over, failed = true, true
	case err != nil:
		return false, status.Error(codes.Internal, err.Error())
	case res.StoreErr != nil:
		s.metrics.storeError(domain, "open")
		failed = true
	case n == 0:
		used = events - res.Remaining
	case res.Allowed:
		used = events - res.Remaining - n
	default:
		over = true
		used = events - res.Remaining
	}
	s.metrics.decided(domain, m.statKey, events, max(used, 0), n, over, m.r.shadow, failed)
	reset := res.ResetAfter
	if over {
		reset = res.RetryAfter
		st.LimitRemaining = 0
	} else {
		st.LimitRemaining = uint32(min(max(res.Remaining, 0), math.MaxUint32))
	}
	st.DurationUntilReset = durationpb.New(reset)
	return over, nil
}

// headerStatus picks the descriptor whose status the response headers
// give: the one with the least remaining, or the last one over its limit.
type headerStatus struct {
	st  *rlsv3.RateLimitResponse_DescriptorStatus
	min uint32
}

// note takes st when it has less remaining than the one taken.
func (h *headerStatus) note(st *rlsv3.RateLimitResponse_DescriptorStatus) {
	if st.LimitRemaining < h.min {
		h.st, h.min = st, st.LimitRemaining
	}
}

// currentLimit states a limit given by the extension per as Envoy's
// RateLimit: its unit when the period is one, else a unit with a
// multiplier when the period is a whole number of seconds, else UNKNOWN.
func currentLimit(name string, rpu uint32, per time.Duration) *rlsv3.RateLimitResponse_RateLimit {
	out := &rlsv3.RateLimitResponse_RateLimit{Name: name, RequestsPerUnit: rpu}
	for _, u := range []string{"year", "month", "week"} {
		if per == units[u].d {
			out.Unit = units[u].unit
			return out
		}
	}
	for _, u := range []string{"day", "hour", "minute", "second"} {
		if d := units[u].d; per%d == 0 {
			out.Unit = units[u].unit
			if k := per / d; k > 1 {
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
