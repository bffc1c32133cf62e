package httpapi

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The dashboard's rate limit panel shows, for each named limit and for
// each key called with limits of its own, how many calls were allowed and
// denied over the last recentWindow, counted by this server (not by the
// store: other servers on the same store count their own). The counts live
// in a table of at most MaxTrackedLimits rows; a new row beyond it takes
// the place of the row least recently used.
const (
	// MaxTrackedLimits bounds the rows of the rate limit panel's table.
	MaxTrackedLimits = 200
	recentBuckets    = 5 // one per minute
	recentWindow     = recentBuckets * time.Minute
)

// limitActivity counts the decisions of this server, for the dashboard.
// Its zero value is ready to use.
type limitActivity struct {
	mu   sync.Mutex
	rows map[string]*activityRow // "n:" + name, or "k:" + key
}

type activityRow struct {
	name, key string // one of the two
	spec      string
	last      time.Time
	lastOK    bool
	buckets   [recentBuckets]activityBucket
	// remaining and fullAt: from the last allow decision (the store's
	// Remaining, and when ResetAfter said the key would be idle again);
	// remaining -1 before any.
	remaining int
	fullAt    time.Time
}

// left notes the capacity a decision of c left: remaining events, and the
// key full again after resetAfter.
func (a *limitActivity) left(c limitCall, remaining int, resetAfter time.Duration, now time.Time) {
	id := "n:" + c.name
	if c.name == "" {
		id = "k:" + c.key
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if row := a.rows[id]; row != nil {
		row.remaining, row.fullAt = remaining, now.Add(resetAfter)
	}
}

type activityBucket struct {
	minute          int64 // Unix minutes
	allowed, denied int64
}

func (a *limitActivity) record(c limitCall, allowed bool, now time.Time) {
	id := "n:" + c.name
	if c.name == "" {
		id = "k:" + c.key
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.rows == nil {
		a.rows = map[string]*activityRow{}
	}
	row := a.rows[id]
	if row == nil {
		if len(a.rows) >= MaxTrackedLimits {
			var oldest string
			for k, r := range a.rows {
				if oldest == "" || r.last.Before(a.rows[oldest].last) {
					oldest = k
				}
			}
			delete(a.rows, oldest)
		}
		row = &activityRow{name: c.name, remaining: -1}
		if c.name == "" {
			row.key = c.key
		}
		a.rows[id] = row
	}
	row.spec = FormatLimits(c.limits)
	row.last, row.lastOK = now, allowed
	minute := now.Unix() / 60
	b := &row.buckets[minute%recentBuckets]
	if b.minute != minute {
		*b = activityBucket{minute: minute}
	}
	if allowed {
		b.allowed++
	} else {
		b.denied++
	}
}

// LimitActivity is one row of the rate limit panel.
type LimitActivity struct {
	Name, Key, Spec string
	Allowed, Denied int64 // over the last five minutes
	LastAgoMS       int64 // since the last decision; -1: none yet
	LastAllowed     bool
	// Remaining is what the last allow decision left (the store's
	// Remaining: events that would pass), -1 unknown; FullInMS how long
	// until the key is back to its full burst, by what that decision said,
	// 0 when it is already.
	Remaining int
	FullInMS  int64
}

// snapshot returns the rows, named limits first (every configured one,
// with or without traffic), then keys by most recent decision.
func (a *limitActivity) snapshot(named []NamedLimit, now time.Time) []LimitActivity {
	a.mu.Lock()
	defer a.mu.Unlock()
	from := now.Unix()/60 - recentBuckets + 1
	view := func(r *activityRow) LimitActivity {
		v := LimitActivity{Name: r.name, Key: r.key, Spec: r.spec, LastAgoMS: now.Sub(r.last).Milliseconds(), LastAllowed: r.lastOK,
			Remaining: r.remaining, FullInMS: max(r.fullAt.Sub(now), 0).Milliseconds()}
		for _, b := range r.buckets {
			if b.minute >= from {
				v.Allowed += b.allowed
				v.Denied += b.denied
			}
		}
		return v
	}
	var out []LimitActivity
	for _, nl := range named {
		if r := a.rows["n:"+nl.Name]; r != nil {
			out = append(out, view(r))
		} else {
			out = append(out, LimitActivity{Name: nl.Name, Spec: nl.Spec, LastAgoMS: -1, Remaining: -1})
		}
	}
	var keys []LimitActivity
	for _, r := range a.rows {
		if r.name == "" {
			keys = append(keys, view(r))
		}
	}
	slices.SortFunc(keys, func(x, y LimitActivity) int {
		return cmp.Or(cmp.Compare(x.LastAgoMS, y.LastAgoMS), cmp.Compare(x.Key, y.Key))
	})
	return append(out, keys...)
}

// EnvoyDescriptor is a row of the rate limit panel's table of the
// descriptors of Envoy's rate limit service: its domain and descriptor as
// the metrics name them, its limit, and the hits counted since the service
// started.
type EnvoyDescriptor struct {
	Domain, Descriptor, Limit                   string
	Shadow                                      bool
	TotalHits, OverLimit, NearLimit, ShadowMode uint64
}

// limitsPanelData is what the rate limit panel shows.
type limitsPanelData struct {
	Rows       []LimitActivity
	Envoy      []EnvoyDescriptor
	EnvoyOn    bool
	WindowMin  int
	MaxTracked int
}

func limitsPanel(ctx context.Context, s *Server) (any, error) {
	d := limitsPanelData{Rows: s.limitActivity.snapshot(s.namedLimits(), time.Now()), WindowMin: recentBuckets, MaxTracked: MaxTrackedLimits}
	if s.EnvoyDescriptors != nil {
		d.EnvoyOn, d.Envoy = true, s.EnvoyDescriptors()
	}
	return d, nil
}

// limiterDecisions is the MetricLimiterDecisions counter.
func newLimiterDecisions() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricLimiterDecisions,
		Help: `Rate limit decisions over HTTP (allow and wait), by limit (a named limit, or "inline"), algorithm and result (allowed, denied, error).`},
		[]string{"limit", "algorithm", "result"})
}

func (m *Metrics) limitDecision(limit, alg, result string) {
	m.decisions.WithLabelValues(limit, alg, result).Inc()
}
