package httpapi

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hourglass-io/hourglass/ratelimit"
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
	// lastKey and limits: the key and limits of the last decision, which
	// the panel peeks at (Limiter.Peek) for the capacity left now.
	lastKey string
	limits  []ratelimit.Limit
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
		row = &activityRow{name: c.name}
		if c.name == "" {
			row.key = c.key
		}
		a.rows[id] = row
	}
	row.spec = FormatLimits(c.limits)
	row.lastKey, row.limits = c.key, c.limits
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
	// PeekKey is the key of the last decision (a named limit's too), and
	// Remaining and FullInMS what it has left now by the store
	// (Limiter.Peek): events that would pass, and how long until it is back
	// to its full burst (0: it is); Remaining -1 when not read.
	PeekKey   string
	Remaining int
	FullInMS  int64
	limits    []ratelimit.Limit
}

// snapshot returns the rows, named limits first (every configured one,
// with or without traffic), then keys by most recent decision.
func (a *limitActivity) snapshot(named []NamedLimit, now time.Time) []LimitActivity {
	a.mu.Lock()
	defer a.mu.Unlock()
	from := now.Unix()/60 - recentBuckets + 1
	view := func(r *activityRow) LimitActivity {
		v := LimitActivity{Name: r.name, Key: r.key, Spec: r.spec, LastAgoMS: now.Sub(r.last).Milliseconds(), LastAllowed: r.lastOK,
			PeekKey: r.lastKey, Remaining: -1, limits: r.limits}
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

// maxPeeks bounds the store calls of one rendering of the panel: the
// first rows have their capacity read, the others not.
const maxPeeks = 50

func limitsPanel(ctx context.Context, s *Server) (any, error) {
	d := limitsPanelData{Rows: s.limitActivity.snapshot(s.namedLimits(), time.Now()), WindowMin: recentBuckets, MaxTracked: MaxTrackedLimits}
	for i := range d.Rows[:min(len(d.Rows), maxPeeks)] {
		r := &d.Rows[i]
		if r.PeekKey == "" || len(r.limits) == 0 {
			continue
		}
		res, err := s.Limiter.Peek(ctx, r.PeekKey, r.limits...)
		if err != nil {
			if storeFailure(err) {
				return nil, err
			}
			continue
		}
		r.Remaining, r.FullInMS = res.Remaining, res.ResetAfter.Milliseconds()
	}
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
