package envoyrl

import (
	"cmp"
	"slices"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// DescriptorStats is one descriptor of the configuration in force, or one
// the service counted hits for, with its counts since the service started
// (the hits of its Prometheus series).
type DescriptorStats struct {
	// Domain and Descriptor name it as the metrics do: the descriptor is
	// its key, or key_value, per level, joined by dots (with
	// detailed_metric, the request's values).
	Domain, Descriptor string
	// Limit is the limit in force ("10/minute", "unlimited"), empty for a
	// counted descriptor no longer configured.
	Limit string
	// Shadow: over the limit is answered OK.
	Shadow bool
	// File and Line locate the descriptor in the configuration.
	File string
	Line int
	// The hits: all of them, over the limit, admitted above 80% of it, and
	// over it in shadow mode.
	TotalHits, OverLimit, NearLimit, ShadowMode uint64
}

// Descriptors lists the descriptors of the configuration in force that
// have a limit (or are unlimited), and any other the service counted hits
// for, sorted by domain and descriptor. It is for a dashboard: it reads
// the counters, without adding series.
func (s *Server) Descriptors() []DescriptorStats {
	type id struct{ domain, desc string }
	rows := map[id]*DescriptorStats{}
	if s.Config != nil {
		var walk func(domain string, rs []*rule)
		walk = func(domain string, rs []*rule) {
			for _, r := range rs {
				if r.limited || r.unlimited {
					d := &DescriptorStats{Domain: domain, Descriptor: r.statKey, Shadow: r.shadow, File: r.file, Line: r.line, Limit: "unlimited"}
					switch {
					case r.limit != nil:
						d.Limit = r.limit.String()
					case r.limited:
						d.Limit = "0/" + r.period.String()
					}
					rows[id{domain, r.statKey}] = d
				}
				walk(domain, r.children)
			}
		}
		for domain, top := range s.Config.cur.Load().domains {
			walk(domain, top)
		}
	}
	if m := s.metrics; m != nil {
		for _, c := range []struct {
			vec *prometheus.CounterVec
			set func(*DescriptorStats, uint64)
		}{
			{m.total, func(d *DescriptorStats, n uint64) { d.TotalHits = n }},
			{m.over, func(d *DescriptorStats, n uint64) { d.OverLimit = n }},
			{m.near, func(d *DescriptorStats, n uint64) { d.NearLimit = n }},
			{m.shadow, func(d *DescriptorStats, n uint64) { d.ShadowMode = n }},
		} {
			ch := make(chan prometheus.Metric, 64)
			go func() { c.vec.Collect(ch); close(ch) }()
			for pm := range ch {
				var out dto.Metric
				if pm.Write(&out) != nil {
					continue
				}
				var k id
				for _, l := range out.GetLabel() {
					switch l.GetName() {
					case "domain":
						k.domain = l.GetValue()
					case "descriptor":
						k.desc = l.GetValue()
					}
				}
				d := rows[k]
				if d == nil {
					d = &DescriptorStats{Domain: k.domain, Descriptor: k.desc}
					rows[k] = d
				}
				c.set(d, uint64(out.GetCounter().GetValue()))
			}
		}
	}
	out := make([]DescriptorStats, 0, len(rows))
	for _, d := range rows {
		out = append(out, *d)
	}
	slices.SortFunc(out, func(a, b DescriptorStats) int {
		return cmp.Or(cmp.Compare(a.Domain, b.Domain), cmp.Compare(a.Descriptor, b.Descriptor))
	})
	return out
}
