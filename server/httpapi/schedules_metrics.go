package httpapi

import (
	"context"
	"strconv"

	"github.com/hourglass-io/hourglass/schedule"
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics of the schedules, recorded by a store that WatchSchedules
// returned: the fires of every schedule.Client over it (its Run, and the
// triggers of a Server whose Schedules is such a Client). Schedule names are not
// labels: they are unbounded.
const (
	// MetricScheduleFires counts the jobs put for schedules' ticks, by
	// manual ("true": a trigger, "false": a tick of the spec).
	MetricScheduleFires = "hourglass_schedule_fires_total"
	// MetricScheduleMisfires counts the ticks the misfire policy dropped
	// (missed while nothing fired them, and too late for the policy).
	MetricScheduleMisfires = "hourglass_schedule_misfires_total"
	// MetricScheduleSkips counts the ticks the overlap policy put nothing
	// for (the previous job still waiting or running), with the ticks at
	// which a schedule paused itself.
	MetricScheduleSkips = "hourglass_schedule_skips_total"
	// MetricScheduleSelfPauses counts the schedules that paused themselves
	// (pause on failure: a tick found the previous job buried).
	MetricScheduleSelfPauses = "hourglass_schedule_self_pauses_total"
	// MetricScheduleCancels counts the previous jobs the ticks of
	// cancel_previous schedules cancelled.
	MetricScheduleCancels = "hourglass_schedule_cancelled_previous_total"
	// MetricScheduleLateness is the histogram, in seconds, of how long
	// after its tick the job of a tick of the spec was put, by the store's
	// clock.
	MetricScheduleLateness = "hourglass_schedule_fire_lateness_seconds"
)

// scheduleMetrics are the series of the schedules on a Metrics' registry.
type scheduleMetrics struct {
	fires    *prometheus.CounterVec
	misfires prometheus.Counter
	skips    prometheus.Counter
	pauses   prometheus.Counter
	cancels  prometheus.Counter
	lateness prometheus.Histogram
}

// WatchSchedules returns st recording on m each fire made through it:
// build over it the schedule.Client that runs the schedules, and give
// that Client (or another over the returned store) to Server.Schedules,
// for the triggers to count too. A fire that lost the race to
// another process (schedule.ErrConflict) records nothing, so that over
// all the servers sharing a store each tick is counted once. The returned
// store is a schedule.Notifier when st is.
func (m *Metrics) WatchSchedules(st schedule.Store) schedule.Store {
	sm := &scheduleMetrics{
		fires: register(m.reg, prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricScheduleFires,
			Help: "Jobs put for schedules' ticks, by manual (true: a trigger)."}, []string{"manual"})),
		misfires: register(m.reg, prometheus.NewCounter(prometheus.CounterOpts{Name: MetricScheduleMisfires,
			Help: "Schedules' ticks dropped by their misfire policy."})),
		skips: register(m.reg, prometheus.NewCounter(prometheus.CounterOpts{Name: MetricScheduleSkips,
			Help: "Schedules' ticks that put nothing by their overlap policy or pause on failure."})),
		pauses: register(m.reg, prometheus.NewCounter(prometheus.CounterOpts{Name: MetricScheduleSelfPauses,
			Help: "Schedules that paused themselves on finding their previous job buried."})),
		cancels: register(m.reg, prometheus.NewCounter(prometheus.CounterOpts{Name: MetricScheduleCancels,
			Help: "Previous jobs cancelled by the ticks of cancel_previous schedules."})),
		lateness: register(m.reg, prometheus.NewHistogram(prometheus.HistogramOpts{Name: MetricScheduleLateness,
			Help:    "Seconds from a schedule's tick to the put of its job, by the store's clock (ticks of the spec, not triggers).",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300}})),
	}
	w := watchedSchedules{Store: st, m: sm}
	if n, ok := st.(schedule.Notifier); ok {
		return watchedNotifier{w, n}
	}
	return w
}

// watchedSchedules is a schedule.Store whose fires are recorded.
type watchedSchedules struct {
	schedule.Store
	m *scheduleMetrics
}

// Fire implements schedule.Store.
func (w watchedSchedules) Fire(ctx context.Context, req schedule.FireRequest) (schedule.FireResult, error) {
	res, err := w.Store.Fire(ctx, req)
	if err != nil {
		return res, err
	}
	if !req.Manual && req.Skipped > 0 {
		w.m.misfires.Add(float64(req.Skipped))
	}
	if res.Overlapped || res.SelfPaused {
		w.m.skips.Inc()
	}
	if res.SelfPaused {
		w.m.pauses.Inc()
	}
	if res.CancelledPrevious != 0 {
		w.m.cancels.Inc()
	}
	if res.Fired && len(res.State.Last) > 0 {
		f := res.State.Last[0]
		w.m.fires.WithLabelValues(strconv.FormatBool(f.Manual)).Inc()
		if !f.Manual {
			w.m.lateness.Observe(max(f.Lateness, 0).Seconds())
		}
	}
	return res, nil
}

// watchedNotifier is a watchedSchedules over a store that is a Notifier.
type watchedNotifier struct {
	watchedSchedules
	n schedule.Notifier
}

// Listen implements schedule.Notifier.
func (w watchedNotifier) Listen(ctx context.Context, topic string, wake func(topic string)) (func(), error) {
	return w.n.Listen(ctx, topic, wake)
}
