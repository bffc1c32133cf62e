package httpapi

import (
	"context"
	"maps"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hourglass-io/hourglass/internal/buildinfo"
	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/server/beanstalk"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metric names. Every series hourglass exports starts with "hourglass_".
// The series are registered in this file, or by a primitive's own file
// (hashes_metrics.go, schedules_metrics.go), with the names and labels
// written here.
const (
	// MetricRequests counts commands by protocol ("http", "beanstalk"),
	// primitive ("jobs", …), command ("put", "reserve-with-timeout", …)
	// and result ("ok", an error code of this package, or a beanstalkd
	// reply word such as "NOT_FOUND").
	MetricRequests = "hourglass_requests_total"
	// MetricRequestDuration is the latency histogram of commands, by
	// protocol, primitive and command, in seconds. A reserve's includes
	// its wait.
	MetricRequestDuration = "hourglass_request_duration_seconds"
	// MetricStoreErrors counts commands that failed because the store
	// did not answer (a 503 "unavailable", a beanstalkd INTERNAL_ERROR), by
	// protocol and primitive.
	MetricStoreErrors = "hourglass_store_errors_total"
	// MetricConnections is the number of open client connections, by
	// protocol.
	MetricConnections = "hourglass_connections"
	// MetricInFlight is the number of HTTP requests being served (long
	// polls included), by primitive and command.
	MetricInFlight = "hourglass_http_requests_in_flight"
	// MetricConnectionsTotal counts accepted client connections, by protocol.
	MetricConnectionsTotal = "hourglass_connections_total"
	// MetricJobs is the number of jobs by tube and state ("ready",
	// "reserved", "delayed", "buried"), read from the store at each scrape
	// (at most MaxScrapedTubes tubes).
	MetricJobs = "hourglass_jobs"
	// MetricStoreUp is 1 when the scrape could read the job counts from
	// the store, 0 when the store did not answer.
	MetricStoreUp = "hourglass_store_up"
	// MetricTubePaused is 1 for a paused tube, 0 otherwise.
	MetricTubePaused = "hourglass_tube_paused"
	// MetricTubeCancels counts the jobs of a tube cancelled
	// (queue.TubeStats.Cancels, read at scrape time), by tube: a counter
	// that starts again when the tube does (or, on the embedded engine,
	// when the server starts).
	MetricTubeCancels = "hourglass_tube_cancels_total"
	// MetricDeliveryLateness is the histogram, in seconds, of how late a
	// job reached a worker over HTTP: the time of its reserve minus the
	// time it became due (its put plus its delay). It is observed for a
	// job's first reserve when the job was never kicked, the one case in
	// which the store's statistics give the due time exactly.
	MetricDeliveryLateness = "hourglass_job_delivery_lateness_seconds"
	// MetricBuildInfo is a gauge that is always 1, labelled with the
	// server's module version, VCS commit and Go release.
	MetricBuildInfo = "hourglass_build_info"

	// MetricLimiterDecisions counts rate limit decisions over HTTP by
	// limit (a named limit, or "inline": never the key), algorithm and
	// result ("allowed", "denied", "error").
	MetricLimiterDecisions = "hourglass_ratelimit_decisions_total"
	// MetricExpiryLag (the expiring hashes, hashes.go): seconds from a
	// field's deadline to its removal by the store (expired_at - deadline),
	// observed as its event is first handed out over HTTP, a histogram.
	MetricExpiryLag = "hourglass_ttlhash_expiry_lag_seconds"
	// MetricLockGrants counts obtains over HTTP by mode ("try", "wait",
	// "fair") and result ("granted", "refused": still held when the wait
	// ended, "error": the store failed). Lock names are not labels: they
	// are unbounded.
	MetricLockGrants = "hourglass_lock_grants_total"
	// MetricLockReleases counts releases over HTTP by result ("released",
	// "not_held", "error").
	MetricLockReleases = "hourglass_lock_releases_total"
	// MetricLockWait is the histogram, in seconds, of how long an obtain
	// over HTTP took, its wait included, by mode and result.
	MetricLockWait = "hourglass_lock_wait_seconds"
)

// MaxScrapedTubes bounds the tubes whose job counts a scrape reads.
const MaxScrapedTubes = 1000

// Metrics records what the servers do, for GET /metrics. One Metrics may
// serve the HTTP server and a beanstalkd-protocol server at once (see
// ObserveBeanstalk). It is safe for concurrent use.
type Metrics struct {
	reg         *prometheus.Registry
	requests    *prometheus.CounterVec
	duration    *prometheus.HistogramVec
	storeErrors *prometheus.CounterVec
	conns       *prometheus.GaugeVec
	inFlight    *prometheus.GaugeVec
	connsTotal  *prometheus.CounterVec
	late        prometheus.Histogram
	decisions   *prometheus.CounterVec      // limits.go
	queue       atomic.Pointer[queue.Queue] // read by the jobs collector
	series      *series                     // the dashboard's charts (series.go)

	// bs caches the series of each beanstalkd command and result, so that
	// recording a command looks up no label values (by [command, result]).
	// The map is never changed once stored: a new pair stores a copy (under
	// bsMu), so that a command reads it without a lock, whose counter every
	// connection would write.
	bsMu sync.Mutex
	bs   atomic.Pointer[map[[2]string]bsSeries]
}

// bsSeries are the series one beanstalkd command and result records to.
type bsSeries struct {
	requests prometheus.Counter
	duration prometheus.Observer
}

// NewMetrics returns Metrics registered on reg; nil means a new registry
// that also carries the Go runtime's and the process's metrics. The
// registry is served by GET /metrics; primitives added later register
// their own series on it (Registry).
func NewMetrics(reg *prometheus.Registry) *Metrics {
	if reg == nil {
		reg = prometheus.NewRegistry()
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	m := &Metrics{
		reg:    reg,
		series: newSeries(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricRequests,
			Help: "Commands served, by protocol, primitive, command and result."}, []string{"protocol", "primitive", "command", "result"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: MetricRequestDuration,
			Help:    "Latency of commands in seconds (a reserve's includes its wait).",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}},
			[]string{"protocol", "primitive", "command"}),
		storeErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricStoreErrors,
			Help: "Commands that failed because the store did not answer."}, []string{"protocol", "primitive"}),
		conns: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: MetricConnections,
			Help: "Open client connections."}, []string{"protocol"}),
		inFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: MetricInFlight,
			Help: "HTTP requests being served, long polls included."}, []string{"primitive", "command"}),
		connsTotal: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricConnectionsTotal,
			Help: "Client connections accepted."}, []string{"protocol"}),
		late: prometheus.NewHistogram(prometheus.HistogramOpts{Name: MetricDeliveryLateness,
			Help:    "Seconds between a job becoming due and its first reserve over HTTP.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 60}}),
	}
	reg.MustRegister(m.requests, m.duration, m.storeErrors, m.conns, m.inFlight, m.connsTotal, m.late, jobsCollector{m})
	m.decisions = newLimiterDecisions()
	reg.MustRegister(m.decisions)
	bi := buildinfo.Read()
	build := prometheus.NewGauge(prometheus.GaugeOpts{Name: MetricBuildInfo,
		Help:        "Always 1; its labels say which hourglass build is running.",
		ConstLabels: prometheus.Labels{"version": bi.Version, "commit": bi.Commit, "goversion": bi.GoVersion}})
	build.Set(1)
	reg.MustRegister(build)
	return m
}

// Registry returns the registry the metrics are on.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// handler serves the registry in the Prometheus text format.
func (m *Metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// watchQueue makes the jobs collector read q's store at each scrape.
func (m *Metrics) watchQueue(q *queue.Queue) { m.queue.Store(q) }

// observe records one command; err nil is a success.
func (m *Metrics) observe(protocol, prim, command string, d time.Duration, err error) {
	result := "ok"
	if err != nil {
		result = asAPIError(err).code
	}
	m.record(protocol, prim, command, d, result, result == CodeUnavailable)
}

func (m *Metrics) record(protocol, prim, command string, d time.Duration, result string, failure bool) {
	m.requests.WithLabelValues(protocol, prim, command, result).Inc()
	m.duration.WithLabelValues(protocol, prim, command).Observe(d.Seconds())
	if failure {
		m.storeErrors.WithLabelValues(protocol, prim).Inc()
	}
}

// ObserveBeanstalk records one beanstalkd-protocol command: set it as
// beanstalk.Server.Observe.
func (m *Metrics) ObserveBeanstalk(cmd string, d time.Duration, err error) {
	result := beanstalk.Reply(err)
	if result == "" {
		result = "ok"
	}
	k := [2]string{cmd, result}
	var o bsSeries
	ok := false
	if bs := m.bs.Load(); bs != nil {
		o, ok = (*bs)[k]
	}
	if !ok {
		o = m.addBeanstalkSeries(k)
	}
	o.requests.Inc()
	o.duration.Observe(d.Seconds())
	if result == "INTERNAL_ERROR" {
		m.storeErrors.WithLabelValues("beanstalk", "jobs").Inc()
	}
}

// addBeanstalkSeries caches the series of a beanstalkd command and result
// (k) and returns them.
func (m *Metrics) addBeanstalkSeries(k [2]string) bsSeries {
	m.bsMu.Lock()
	defer m.bsMu.Unlock()
	old := m.bs.Load()
	if old != nil {
		if o, ok := (*old)[k]; ok {
			return o
		}
	}
	o := bsSeries{
		requests: m.requests.WithLabelValues("beanstalk", "jobs", k[0], k[1]),
		duration: m.duration.WithLabelValues("beanstalk", "jobs", k[0]),
	}
	bs := make(map[[2]string]bsSeries, 1)
	if old != nil {
		bs = maps.Clone(*old)
	}
	bs[k] = o
	m.bs.Store(&bs)
	return o
}

// BeanstalkConnState records a beanstalkd-protocol connection opening
// (+1) or closing (-1): set it as beanstalk.Server.ConnState.
func (m *Metrics) BeanstalkConnState(delta int) {
	if delta > 0 {
		m.connsTotal.WithLabelValues("beanstalk").Inc()
	}
	m.conns.WithLabelValues("beanstalk").Add(float64(delta))
}

// httpConnState is the http.Server's ConnState hook.
func (m *Metrics) httpConnState(_ net.Conn, st http.ConnState) {
	switch st {
	case http.StateNew:
		m.connsTotal.WithLabelValues("http").Inc()
		m.conns.WithLabelValues("http").Inc()
	case http.StateClosed, http.StateHijacked:
		m.conns.WithLabelValues("http").Dec()
	}
}

// lateness observes the delivery lateness of j, just reserved, when the
// store's statistics tell its due time exactly (see MetricDeliveryLateness).
// It costs one store call, made after the reply is sent.
func (m *Metrics) lateness(w http.ResponseWriter, ctx context.Context, q *queue.Queue, j queue.Job) {
	if j.Reserves != 1 {
		return
	}
	http.NewResponseController(w).Flush()
	st, err := q.StatsJob(ctx, j.ID)
	if err != nil || st.Reserves != 1 || st.Kicks != 0 || st.State != queue.Reserved {
		return
	}
	// Age runs from the put; the job was due Delay after it; the reserve
	// was at most a store call ago (TTR - TimeLeft).
	late := st.Age - st.Delay - (st.TTR - st.TimeLeft)
	m.late.Observe(max(late, 0).Seconds())
	m.series.lateness(max(late, 0))
}

// jobsCollector reads the job counts of every tube at scrape time.
type jobsCollector struct{ m *Metrics }

var (
	jobsDesc    = prometheus.NewDesc(MetricJobs, "Jobs by tube and state, read from the store at scrape time.", []string{"tube", "state"}, nil)
	pausedDesc  = prometheus.NewDesc(MetricTubePaused, "1 for a paused tube.", []string{"tube"}, nil)
	cancelsDesc = prometheus.NewDesc(MetricTubeCancels, "Jobs of the tube cancelled, read from the store at scrape time.", []string{"tube"}, nil)
	upDesc      = prometheus.NewDesc(MetricStoreUp, "1 when the scrape read the job counts from the store.", nil, nil)
)

func (c jobsCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- jobsDesc
	ch <- pausedDesc
	ch <- cancelsDesc
	ch <- upDesc
	describeTubeLimits(ch)
}

func (c jobsCollector) Collect(ch chan<- prometheus.Metric) {
	q := c.m.queue.Load()
	if q == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	tubes, err := q.Tubes(ctx)
	up := 1.0
	if err != nil {
		up = 0
	}
	ch <- prometheus.MustNewConstMetric(upDesc, prometheus.GaugeValue, up)
	if len(tubes) > MaxScrapedTubes {
		tubes = tubes[:MaxScrapedTubes]
	}
	for _, t := range tubes {
		st, err := q.StatsTube(ctx, t)
		if err != nil {
			continue // gone since Tubes, or the store failed meanwhile
		}
		for _, s := range []struct {
			name string
			n    int64
		}{{"ready", st.Ready}, {"reserved", st.Reserved}, {"delayed", st.Delayed}, {"buried", st.Buried}} {
			ch <- prometheus.MustNewConstMetric(jobsDesc, prometheus.GaugeValue, float64(s.n), t, s.name)
		}
		paused := 0.0
		if st.Pause > 0 {
			paused = 1
		}
		ch <- prometheus.MustNewConstMetric(pausedDesc, prometheus.GaugeValue, paused, t)
		ch <- prometheus.MustNewConstMetric(cancelsDesc, prometheus.CounterValue, float64(st.Cancels), t)
		collectTubeLimits(ch, st)
	}
}
