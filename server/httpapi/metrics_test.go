package httpapi_test

import (
	"bytes"
	"fmt"
	"net/http"
	"runtime"
	"testing"

	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/server/httpapi"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// find returns the series of name whose labels include want.
func find(t testing.TB, m *httpapi.Metrics, name string, want map[string]string) []*dto.Metric {
	t.Helper()
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []*dto.Metric
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
	next:
		for _, s := range f.Metric {
			have := map[string]string{}
			for _, l := range s.Label {
				have[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if have[k] != v {
					continue next
				}
			}
			out = append(out, s)
		}
	}
	return out
}

// counter sums the counters of name whose labels include want.
func counter(t testing.TB, m *httpapi.Metrics, name string, want map[string]string) float64 {
	t.Helper()
	var n float64
	for _, s := range find(t, m, name, want) {
		n += s.GetCounter().GetValue()
	}
	return n
}

// gauge sums the gauges of name whose labels include want.
func gauge(t testing.TB, m *httpapi.Metrics, name string, want map[string]string) float64 {
	t.Helper()
	var n float64
	for _, s := range find(t, m, name, want) {
		n += s.GetGauge().GetValue()
	}
	return n
}

func TestMetricsAfterTraffic(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open func(testing.TB) queue.Store) {
		ts := startServer(t, open(t), nil)
		c := ts.c
		for i := range 3 {
			c.put(t, "m", map[string]any{"body": fmt.Sprint(i)})
		}
		c.put(t, "m", map[string]any{"body": "later", "delay_ms": 3600000})
		r := c.reserve(t, []string{"m"}, 0)
		c.do(req{method: "POST", path: fmt.Sprintf("/v1/jobs/%d/bury", r.Job.ID), header: lease(r.Lease)}).want(t, http.StatusNoContent, "")
		c.do(req{method: "GET", path: "/v1/jobs/999999"}).want(t, http.StatusNotFound, httpapi.CodeNotFound)

		resp := c.do(req{method: "GET", path: "/metrics"})
		if resp.status != http.StatusOK {
			t.Fatalf("/metrics: %d %s", resp.status, resp.body)
		}
		parser := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := parser.TextToMetricFamilies(bytes.NewReader(resp.body))
		if err != nil {
			t.Fatalf("/metrics does not parse: %v\n%s", err, resp.body)
		}
		value := func(name string, labels map[string]string) (float64, bool) {
			f := fams[name]
			if f == nil {
				return 0, false
			}
		next:
			for _, s := range f.Metric {
				have := map[string]string{}
				for _, l := range s.Label {
					have[l.GetName()] = l.GetValue()
				}
				for k, v := range labels {
					if have[k] != v {
						continue next
					}
				}
				switch {
				case s.Counter != nil:
					return s.Counter.GetValue(), true
				case s.Gauge != nil:
					return s.Gauge.GetValue(), true
				case s.Histogram != nil:
					return float64(s.Histogram.GetSampleCount()), true
				}
			}
			return 0, false
		}
		for _, w := range []struct {
			name   string
			labels map[string]string
			want   float64
		}{
			{"hourglass_requests_total", map[string]string{"protocol": "http", "primitive": "jobs", "command": "put", "result": "ok"}, 4},
			{"hourglass_requests_total", map[string]string{"command": "peek", "result": "not_found"}, 1},
			{"hourglass_request_duration_seconds", map[string]string{"command": "reserve"}, 1},
			{"hourglass_jobs", map[string]string{"tube": "m", "state": "ready"}, 2},
			{"hourglass_jobs", map[string]string{"tube": "m", "state": "buried"}, 1},
			{"hourglass_jobs", map[string]string{"tube": "m", "state": "delayed"}, 1},
			{"hourglass_jobs", map[string]string{"tube": "m", "state": "reserved"}, 0},
			{"hourglass_tube_paused", map[string]string{"tube": "m"}, 0},
			{"hourglass_job_delivery_lateness_seconds", nil, 1},
			{"hourglass_connections_total", map[string]string{"protocol": "http"}, 1},
			{"hourglass_build_info", map[string]string{"goversion": runtime.Version()}, 1},
		} {
			got, ok := value(w.name, w.labels)
			if !ok || got < w.want || (w.name != "hourglass_connections_total" && got != w.want) {
				t.Errorf("%s%v = %v (present %v), want %v", w.name, w.labels, got, ok, w.want)
			}
		}
		if _, ok := fams["hourglass_store_errors_total"]; ok {
			if v, _ := value("hourglass_store_errors_total", nil); v != 0 {
				t.Errorf("store errors %v after a healthy run", v)
			}
		}
	})
}

func TestBeanstalkObserver(t *testing.T) {
	m := httpapi.NewMetrics(nil)
	m.ObserveBeanstalk("put", 1000, nil)
	m.ObserveBeanstalk("delete", 1000, queue.ErrNotFound)
	m.ObserveBeanstalk("stats", 1000, fmt.Errorf("redis down"))
	m.ObserveBeanstalk("put", 1000, nil) // the same command and result again
	m.ObserveBeanstalk("put", 1000, queue.ErrTimeout)
	m.BeanstalkConnState(1)
	m.BeanstalkConnState(1)
	m.BeanstalkConnState(-1)
	for _, w := range []struct {
		labels map[string]string
		want   float64
	}{
		{map[string]string{"protocol": "beanstalk", "command": "put", "result": "ok"}, 2},
		{map[string]string{"protocol": "beanstalk", "command": "put", "result": "TIMED_OUT"}, 1},
		{map[string]string{"protocol": "beanstalk", "command": "delete", "result": "NOT_FOUND"}, 1},
		{map[string]string{"protocol": "beanstalk", "command": "stats", "result": "INTERNAL_ERROR"}, 1},
	} {
		if got := counter(t, m, "hourglass_requests_total", w.labels); got != w.want {
			t.Errorf("requests%v = %v, want %v", w.labels, got, w.want)
		}
	}
	if got := counter(t, m, "hourglass_store_errors_total", map[string]string{"protocol": "beanstalk"}); got != 1 {
		t.Errorf("store errors %v, want 1", got)
	}
	if got := gauge(t, m, "hourglass_connections", map[string]string{"protocol": "beanstalk"}); got != 1 {
		t.Errorf("open connections %v, want 1", got)
	}
}
