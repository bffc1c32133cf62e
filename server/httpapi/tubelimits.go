package httpapi

import (
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/ratelimit"
	"github.com/prometheus/client_golang/prometheus"
)

// Tube limits (docs/tube-limits.md): a rate and a cap on the reserves of a
// tube, which the store enforces at reserve for every client. They are
// routes of the jobs primitive (jobs.go).

// TubeLimits is the JSON form of a tube's limits: a rate (GCRA: events per
// per, with a burst) and a cap on the jobs reserved at once, each absent
// when not set.
type TubeLimits struct {
	Tube string `json:"tube,omitempty"`
	Rate *Limit `json:"rate,omitempty"`
	Cap  int    `json:"cap,omitempty"`
	// Group is the group template: the rate and cap of each group of the
	// tube, absent when none.
	Group *GroupLimits `json:"group,omitempty"`
}

// GroupLimits is the JSON form of a tube's group template.
type GroupLimits struct {
	Rate *Limit `json:"rate,omitempty"`
	Cap  int    `json:"cap,omitempty"`
}

// TubeLimitsList is the reply of GET /v1/tube-limits, by tube name.
type TubeLimitsList struct {
	Limits []TubeLimits `json:"limits"`
}

// TubeLimitsOf is the JSON form of l for tube.
func TubeLimitsOf(tube string, l queue.Limits) TubeLimits {
	out := TubeLimits{Tube: tube, Cap: l.Cap, Rate: tubeRateOf(l.Rate)}
	if !l.Group.IsZero() {
		out.Group = &GroupLimits{Rate: tubeRateOf(l.Group.Rate), Cap: l.Group.Cap}
	}
	return out
}

func tubeRateOf(l ratelimit.Limit) *Limit {
	if l == (ratelimit.Limit{}) {
		return nil
	}
	r := LimitOf(l)
	r.Quota, r.Algorithm = 0, ""
	return &r
}

func tubeRate(in *Limit) (ratelimit.Limit, error) {
	if in == nil {
		return ratelimit.Limit{}, nil
	}
	r, err := limitOf(*in)
	if err != nil {
		return ratelimit.Limit{}, err
	}
	if r.Algorithm != ratelimit.GCRA {
		return ratelimit.Limit{}, badRequest("httpapi: a tube's rate is counted by gcra, not %s", r.Algorithm)
	}
	return r, nil
}

// limitsOf converts a request's limits.
func limitsOf(req TubeLimits) (queue.Limits, error) {
	l := queue.Limits{Cap: req.Cap}
	var err error
	if l.Rate, err = tubeRate(req.Rate); err != nil {
		return queue.Limits{}, err
	}
	if g := req.Group; g != nil {
		l.Group.Cap = g.Cap
		if l.Group.Rate, err = tubeRate(g.Rate); err != nil {
			return queue.Limits{}, err
		}
	}
	return l, nil
}

func (s *Server) listTubeLimits(w http.ResponseWriter, r *http.Request) error {
	all, err := s.Queue.LimitedTubes(r.Context())
	if err != nil {
		return err
	}
	out := TubeLimitsList{Limits: make([]TubeLimits, 0, len(all))}
	for tube, l := range all {
		out.Limits = append(out.Limits, TubeLimitsOf(tube, l))
	}
	sort.Slice(out.Limits, func(i, j int) bool { return out.Limits[i].Tube < out.Limits[j].Tube })
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) getTubeLimits(w http.ResponseWriter, r *http.Request) error {
	tube := r.PathValue("tube")
	l, err := s.Queue.TubeLimits(r.Context(), tube)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, TubeLimitsOf(tube, l))
	return nil
}

func (s *Server) setTubeLimits(w http.ResponseWriter, r *http.Request) error {
	var req TubeLimits
	if err := readJSON(w, r, maxSmallBody, &req); err != nil {
		return err
	}
	tube := r.PathValue("tube")
	if req.Tube != "" && req.Tube != tube {
		return badRequest("httpapi: the body names tube %q, the path %q", req.Tube, tube)
	}
	l, err := limitsOf(req)
	if err != nil {
		return err
	}
	if l.IsZero() {
		return badRequest("httpapi: limits with neither a rate nor a cap (DELETE clears a tube's limits)")
	}
	if err := s.Queue.SetLimits(r.Context(), tube, l); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, TubeLimitsOf(tube, l))
	return nil
}

func (s *Server) clearTubeLimits(w http.ResponseWriter, r *http.Request) error {
	return noContent(w, s.Queue.ClearLimits(r.Context(), r.PathValue("tube")))
}

// tubeLimitsField is the limits field of a tube's stats: nil for none.
func tubeLimitsField(l queue.Limits) *TubeLimits {
	if l.IsZero() {
		return nil
	}
	out := TubeLimitsOf("", l)
	return &out
}

// The metrics of tube limits, read with the job counts at each scrape.
const (
	// MetricTubeLimitHolds counts, by tube, the reserves that got fewer
	// jobs than asked while the tube's limits held back its ready jobs:
	// jobs held back by a limit (TubeStats.LimitHolds). Its series is
	// there while the tube is.
	MetricTubeLimitHolds = "hourglass_tube_limit_holds_total"
	// MetricTubeLimitCap is a limited tube's cap on the jobs reserved at
	// once (absent when it has none).
	MetricTubeLimitCap = "hourglass_tube_limit_cap"
	// MetricTubeLimitRate is a limited tube's rate in reserves per second
	// (absent when it has none).
	MetricTubeLimitRate = "hourglass_tube_limit_rate"
)

var (
	limitHoldsDesc = prometheus.NewDesc(MetricTubeLimitHolds, "Reserves that got fewer jobs than asked while the tube's limits held back its ready jobs.", []string{"tube"}, nil)
	limitCapDesc   = prometheus.NewDesc(MetricTubeLimitCap, "A tube's cap on the jobs reserved at once.", []string{"tube"}, nil)
	limitRateDesc  = prometheus.NewDesc(MetricTubeLimitRate, "A tube's rate limit, in reserves per second.", []string{"tube"}, nil)
)

func describeTubeLimits(ch chan<- *prometheus.Desc) {
	ch <- limitHoldsDesc
	ch <- limitCapDesc
	ch <- limitRateDesc
}

// collectTubeLimits sends the limit metrics of one tube.
func collectTubeLimits(ch chan<- prometheus.Metric, st queue.TubeStats) {
	ch <- prometheus.MustNewConstMetric(limitHoldsDesc, prometheus.CounterValue, float64(st.LimitHolds), st.Name)
	if st.Limits.Cap > 0 {
		ch <- prometheus.MustNewConstMetric(limitCapDesc, prometheus.GaugeValue, float64(st.Limits.Cap), st.Name)
	}
	if r := st.Limits.Rate; st.Limits.HasRate() {
		ch <- prometheus.MustNewConstMetric(limitRateDesc, prometheus.GaugeValue, float64(r.Events)/r.Per.Seconds(), st.Name)
	}
}

// TubeLimitSpecSyntax describes the text form of a tube's limits that
// ParseTubeLimits reads (hourglass serve --tube-limit, hourglass
// tube-limit set).
const TubeLimitSpecSyntax = `A tube's limits are RATE, cap=N, or both separated by ';': RATE is a
GCRA limit as --limit reads one (EVENTS/PER[,burst=N]: 100/1s,burst=10),
N the most jobs of the tube reserved at once. The group template, the
limits of each group of the tube, follows as group:RATE and group:cap=N.
Examples: 100/1s,burst=10; cap=5; 10/1m;cap=2; cap=50;group:cap=2;
100/1s;group:1/1s,burst=5.`

// ParseTubeLimits reads a tube's limits in the text form of
// TubeLimitSpecSyntax. Errors wrap queue.ErrInvalid or
// ratelimit.ErrInvalidLimit.
func ParseTubeLimits(spec string) (queue.Limits, error) {
	var l queue.Limits
	var haveRate, haveCap, haveGRate, haveGCap bool
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return l, fmt.Errorf("%w: empty tube limits", queue.ErrInvalid)
	}
	for part := range strings.SplitSeq(spec, ";") {
		part = strings.TrimSpace(part)
		rate, capN, have, haveC := &l.Rate, &l.Cap, &haveRate, &haveCap
		if g, ok := strings.CutPrefix(part, "group:"); ok {
			part = strings.TrimSpace(g)
			rate, capN, have, haveC = &l.Group.Rate, &l.Group.Cap, &haveGRate, &haveGCap
		}
		if n, ok := strings.CutPrefix(part, "cap="); ok {
			c, err := strconv.Atoi(n)
			if err != nil || *haveC {
				return queue.Limits{}, fmt.Errorf("%w: tube limits %q: cap=N wants one whole number", queue.ErrInvalid, spec)
			}
			*capN, *haveC = c, true
			continue
		}
		rs, err := ParseLimits(part)
		if err != nil {
			return queue.Limits{}, err
		}
		if len(rs) != 1 || *have {
			return queue.Limits{}, fmt.Errorf("%w: tube limits %q: one rate at most (and one per group)", queue.ErrInvalid, spec)
		}
		*rate, *have = rs[0], true
	}
	if l.IsZero() {
		return l, fmt.Errorf("%w: tube limits %q limit nothing", queue.ErrInvalid, spec)
	}
	return l, l.Validate()
}

// ParseNamedTubeLimits reads TUBE=SPEC (hourglass serve --tube-limit).
func ParseNamedTubeLimits(s string) (string, queue.Limits, error) {
	tube, spec, ok := strings.Cut(s, "=")
	tube = strings.TrimSpace(tube)
	if !ok {
		return "", queue.Limits{}, fmt.Errorf("%w: %q: want TUBE=SPEC, e.g. emails=100/1s;cap=5", queue.ErrInvalid, s)
	}
	if err := queue.CheckTube(tube); err != nil {
		return "", queue.Limits{}, err
	}
	l, err := ParseTubeLimits(spec)
	if err != nil {
		return "", queue.Limits{}, fmt.Errorf("tube %s: %w", tube, err)
	}
	return tube, l, nil
}

// TubeLimitsSpec writes l in the text form ParseTubeLimits reads.
func TubeLimitsSpec(l queue.Limits) string {
	parts := limitParts("", l.Rate, l.Cap)
	parts = append(parts, limitParts("group:", l.Group.Rate, l.Group.Cap)...)
	return strings.Join(parts, ";")
}

func limitParts(prefix string, r ratelimit.Limit, capN int) []string {
	var parts []string
	if r != (ratelimit.Limit{}) {
		parts = append(parts, fmt.Sprintf("%s%d/%v,burst=%d", prefix, r.Events, r.Per, r.BurstOrDefault()))
	}
	if capN > 0 {
		parts = append(parts, prefix+"cap="+strconv.Itoa(capN))
	}
	return parts
}
