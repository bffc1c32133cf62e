package envoyrl

import (
	"math"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Metric names, after envoyproxy/ratelimit's per-descriptor statistics
// (ratelimit.service.rate_limit.DOMAIN.KEY.total_hits and so on), each a
// counter of hits (hits_addend summed) with the labels domain and
// descriptor (the descriptor's key path, as envoyproxy/ratelimit forms it:
// key or key_value per level, joined by dots; with detailed_metric the
// request's values).
const (
	// MetricTotalHits counts every hit on a descriptor's limit.
	MetricTotalHits = "hourglass_envoy_rate_limit_total_hits"
	// MetricOverLimit counts hits over the limit (shadow mode included).
	MetricOverLimit = "hourglass_envoy_rate_limit_over_limit"
	// MetricNearLimit counts admitted hits that left less than
	// 1-NearLimitRatio of the limit.
	MetricNearLimit = "hourglass_envoy_rate_limit_near_limit"
	// MetricWithinLimit counts admitted hits.
	MetricWithinLimit = "hourglass_envoy_rate_limit_within_limit"
	// MetricShadowMode counts hits over a limit in shadow mode, answered OK.
	MetricShadowMode = "hourglass_envoy_rate_limit_shadow_mode"
	// MetricStoreErrors counts decisions the store failed, by domain and
	// policy ("open": answered OK; "closed": answered OVER_LIMIT).
	MetricStoreErrors = "hourglass_envoy_rate_limit_store_errors_total"
	// MetricConfigReloads counts configuration reloads by result ("ok",
	// "error").
	MetricConfigReloads = "hourglass_envoy_rate_limit_config_reloads_total"
)

// NearLimitRatio is the share of a limit above which an admitted hit also
// counts as near_limit (envoyproxy/ratelimit's default, 0.8).
const NearLimitRatio = 0.8

// Metrics are the service's Prometheus series. Create them with NewMetrics
// on the registry that /metrics serves.
type Metrics struct {
	total, over, near, within, shadow *prometheus.CounterVec
	storeErrs, reloads                *prometheus.CounterVec

	// series caches each descriptor's counters, by domain and descriptor:
	// one lookup a decision instead of one per counter.
	series sync.Map // string -> *series
}

// series are the counters of one domain and descriptor.
type series struct {
	total, over, near, within, shadow prometheus.Counter
}

func (m *Metrics) of(domain, desc string) *series {
	k := domain + "\x00" + desc
	if s, ok := m.series.Load(k); ok {
		return s.(*series)
	}
	s := &series{
		total:  m.total.WithLabelValues(domain, desc),
		over:   m.over.WithLabelValues(domain, desc),
		near:   m.near.WithLabelValues(domain, desc),
		within: m.within.WithLabelValues(domain, desc),
		shadow: m.shadow.WithLabelValues(domain, desc),
	}
	got, _ := m.series.LoadOrStore(k, s)
	return got.(*series)
}

// NewMetrics registers the series on reg (a new registry when nil).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	vec := func(name, help string, labels ...string) *prometheus.CounterVec {
		v := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
		reg.MustRegister(v)
		return v
	}
	return &Metrics{
		total:     vec(MetricTotalHits, "Hits on a descriptor's limit (Envoy rate limit service).", "domain", "descriptor"),
		over:      vec(MetricOverLimit, "Hits over a descriptor's limit.", "domain", "descriptor"),
		near:      vec(MetricNearLimit, "Admitted hits above 80% of a descriptor's limit.", "domain", "descriptor"),
		within:    vec(MetricWithinLimit, "Hits within a descriptor's limit.", "domain", "descriptor"),
		shadow:    vec(MetricShadowMode, "Hits over a limit in shadow mode, answered OK.", "domain", "descriptor"),
		storeErrs: vec(MetricStoreErrors, "Decisions the store failed, by failure policy.", "domain", "policy"),
		reloads:   vec(MetricConfigReloads, "Configuration reloads by result.", "result"),
	}
}

// decided counts n hits on a limit of events, of which used were spent
// before them, as envoyproxy/ratelimit counts: over_limit the hits beyond
// the limit, near_limit those between NearLimitRatio of it and the limit,
// within_limit the admitted ones, shadow_mode the hits beyond the limit of
// a limit in shadow mode. A store failure counts the hits as over
// (FailClosed) or within (FailOpen) and nothing near.
func (m *Metrics) decided(domain, desc string, events, used, n int, over, shadow, failed bool) {
	c := m.of(domain, desc)
	c.total.Add(float64(n))
	before, after, limit := uint64(used), uint64(used)+uint64(n), uint64(events)
	near := uint64(math.Floor(float64(float32(events) * float32(NearLimitRatio))))
	switch {
	case failed && over:
		c.over.Add(float64(n))
	case failed:
		c.within.Add(float64(n))
	case over:
		beyond := uint64(n)
		if before < limit && after > limit {
			beyond = after - limit
			if x := limit - max(near, before); x > 0 {
				c.near.Add(float64(x))
			}
		}
		c.over.Add(float64(beyond))
		if shadow {
			c.shadow.Add(float64(beyond))
		}
	default:
		c.within.Add(float64(n))
		if after > near {
			x := uint64(n)
			if before < near {
				x = after - near
			}
			c.near.Add(float64(x))
		}
	}
}

func (m *Metrics) storeError(domain, policy string) {
	m.storeErrs.WithLabelValues(domain, policy).Inc()
}

func (m *Metrics) reloaded(err error) {
	if err != nil {
		m.reloads.WithLabelValues("error").Inc()
		return
	}
	m.reloads.WithLabelValues("ok").Inc()
}
