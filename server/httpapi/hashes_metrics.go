package httpapi

import (
	"errors"
	"strconv"
	"sync"

	"github.com/hourglass-io/hourglass/ttlhash"
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics of the hashes.
const (
	// MetricHashEventsDelivered counts expiry events handed out over HTTP,
	// by whether they were redelivered ("true", "false").
	MetricHashEventsDelivered = "hourglass_ttlhash_events_delivered_total"
	// MetricHashEventsAcked counts expiry events acknowledged over HTTP.
	MetricHashEventsAcked = "hourglass_ttlhash_events_acked_total"
	// MetricHashFieldsSwept counts the fields a Sweeper watched with
	// WatchSweeper has expired.
	MetricHashFieldsSwept = "hourglass_ttlhash_swept_fields_total"
)

// hashMetrics are the series of the hashes on a Metrics' registry.
type hashMetrics struct {
	deliveredVec *prometheus.CounterVec
	acked        prometheus.Counter
	lag          prometheus.Histogram
}

// register registers c on reg, or returns the collector registered before
// under the same description (two Servers sharing one Metrics).
func register[C prometheus.Collector](reg *prometheus.Registry, c C) C {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if old, ok := are.ExistingCollector.(C); ok {
				return old
			}
		}
		panic(err)
	}
	return c
}

// hashState is what a Server keeps for the hashes.
type hashState struct {
	touched     recentHashes
	metricsOnce sync.Once
	metrics     *hashMetrics
}

func (s *Server) hashMetrics() *hashMetrics {
	s.hx.metricsOnce.Do(func() {
		reg := s.Metrics.Registry()
		s.hx.metrics = &hashMetrics{
			deliveredVec: register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricHashEventsDelivered,
				Help: "Expiry events handed out over HTTP, by whether they were handed out before."}, []string{"redelivered"})),
			acked: register(reg, prometheus.NewCounter(prometheus.CounterOpts{Name: MetricHashEventsAcked,
				Help: "Expiry events acknowledged over HTTP."})),
			lag: register(reg, prometheus.NewHistogram(prometheus.HistogramOpts{Name: MetricExpiryLag,
				Help:    "Seconds from a field's deadline to its removal by the store (expired_at - deadline), observed as its event is first handed out over HTTP.",
				Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 60}})),
		}
	})
	return s.hx.metrics
}

// delivered records events handed out.
func (m *hashMetrics) delivered(evs []ttlhash.Event) {
	for _, e := range evs {
		m.deliveredVec.WithLabelValues(strconv.FormatBool(e.Redelivered)).Inc()
		if !e.Redelivered {
			m.lag.Observe(max(e.ExpiredAt.Sub(e.Deadline), 0).Seconds())
		}
	}
}

// WatchSweeper exports how many fields w has expired, as
// MetricHashFieldsSwept. Watch one Sweeper per Metrics.
func (m *Metrics) WatchSweeper(w *ttlhash.Sweeper) {
	register(m.reg, prometheus.NewCounterFunc(prometheus.CounterOpts{Name: MetricHashFieldsSwept,
		Help: "Fields expired by this server's sweeper (the embedded engine also expires fields on its own timer)."},
		func() float64 { return float64(w.Expired()) }))
}
