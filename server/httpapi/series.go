package httpapi

import (
	"cmp"
	"context"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/hourglass-io/hourglass/queue"
)

// The dashboard's charts.
//
// Jobs processed, failed and put, per tube per minute over the last day,
// come from the store's counter log (queue.CounterLog), which every server
// on the store shares and which survives restarts as the jobs do. Every
// seriesStep each server reads the cumulative counters of every tube
// (TotalJobs, Reserves, Deletes, Buries and Timeouts of its stats: what
// every server, protocol and Go program on the store did) and records those
// that changed since it last recorded them, and each tube at least every
// seriesBaseline, under the current minute. A minute's count is the
// difference between a tube's last sample of that minute and its last
// sample before, so several servers recording the same tube and minute
// count nothing twice: they write the same cumulative figures. A counter
// that went down (the tube went and came back, the embedded engine was
// reopened) started again from zero.
//
// Delivery lateness stays in this server's memory: what
// MetricDeliveryLateness observes (first reserves over HTTP of jobs never
// kicked), by ten seconds over the last hour, in a ring of fixed size.
const (
	seriesStep = 10 * time.Second
	// seriesBaseline: a tube is recorded at least this often, so that a
	// day's read (which begins this much earlier) finds the sample each
	// tube's first difference is taken from.
	seriesBaseline = time.Hour
	// SeriesKeep is how long the store keeps a minute of counters.
	SeriesKeep = 25 * time.Hour
	// seriesTubes is the most tubes a chart draws a line for; the others
	// add up in "other".
	seriesTubes = 8
	seriesOther = "other"
	// The lateness ring: ten seconds a bucket, an hour.
	lateStep = 10 * time.Second
	lateLen  = 360
)

// lateBoundsMS are the upper bounds of the lateness histogram's buckets,
// in milliseconds; the last bucket has none.
var lateBoundsMS = [...]int64{1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 60000}

// series holds the lateness ring. Its memory is fixed: lateLen buckets of
// a histogram each.
type series struct {
	mu     sync.Mutex
	newest int64 // the newest bucket's number: Unix time / lateStep
	late   [lateLen][len(lateBoundsMS) + 1]uint32
}

func newSeries() *series { return &series{} }

// bucket moves the ring to now and returns now's slot. s.mu is held.
func (s *series) bucket(now time.Time) int {
	k := now.UnixNano() / int64(lateStep)
	if s.newest == 0 || k-s.newest >= lateLen {
		s.late = [lateLen][len(lateBoundsMS) + 1]uint32{}
	} else {
		for i := s.newest + 1; i <= k; i++ {
			s.late[i%lateLen] = [len(lateBoundsMS) + 1]uint32{}
		}
	}
	if k > s.newest {
		s.newest = k
	}
	return int(k % lateLen)
}

// lateness counts a delivery d late now.
func (s *series) lateness(d time.Duration) {
	ms := d.Milliseconds()
	i := 0
	for i < len(lateBoundsMS) && ms > lateBoundsMS[i] {
		i++
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.late[s.bucket(time.Now())][i]++
}

// latenessQuantiles returns p50 and p99 per bucket of the last hour,
// oldest first, and the end of the newest bucket (Unix ms).
func (s *series) latenessQuantiles() (p50, p99 []int64, endMS int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.bucket(time.Now())
	p50, p99 = make([]int64, lateLen), make([]int64, lateLen)
	for i := range lateLen {
		h := &s.late[(now+1+i)%lateLen]
		p50[i], p99[i] = quantile(h, .5), quantile(h, .99)
	}
	return p50, p99, (s.newest + 1) * lateStep.Milliseconds()
}

// quantile returns the upper bound of the bucket of h holding quantile q,
// -1 when h is empty, and twice the last bound for the open bucket.
func quantile(h *[len(lateBoundsMS) + 1]uint32, q float64) int64 {
	var total uint64
	for _, n := range h {
		total += uint64(n)
	}
	if total == 0 {
		return -1
	}
	var cum uint64
	for i, n := range h {
		cum += uint64(n)
		if float64(cum) >= q*float64(total) {
			if i == len(lateBoundsMS) {
				return 2 * lateBoundsMS[len(lateBoundsMS)-1]
			}
			return lateBoundsMS[i]
		}
	}
	return 2 * lateBoundsMS[len(lateBoundsMS)-1]
}

// counters are a tube's cumulative counters, in CounterSample's order.
type counters [5]int64

func countersOf(st queue.TubeStats) counters {
	return counters{st.TotalJobs, st.Reserves, st.Deletes, st.Buries, st.Timeouts}
}

func sampleCounters(c queue.CounterSample) counters {
	return counters{c.Puts, c.Reserves, c.Deletes, c.Buries, c.Timeouts}
}

// sampler records the store's counters into its counter log (see above).
type sampler struct {
	mu       sync.Mutex
	recorded map[string]recorded // tube → what this server last recorded
}

type recorded struct {
	c  counters
	at time.Time
}

// counterLog returns the store's counter log, or nil when it keeps none.
func (s *Server) counterLog() queue.CounterLog {
	cl, _ := s.Queue.Store().(queue.CounterLog)
	return cl
}

// sample reads the counters of every tube (at most maxPanelTubes) and
// records those that changed.
func (s *Server) sample(ctx context.Context) {
	cl := s.counterLog()
	if cl == nil {
		return
	}
	sm, q := &s.sampler, s.Queue
	sm.mu.Lock()
	defer sm.mu.Unlock()
	tubes, err := q.Tubes(ctx)
	if err != nil {
		return
	}
	tubes = tubes[:min(len(tubes), maxPanelTubes, queue.MaxCounterSamples)]
	now := time.Now()
	minute := now.Unix() / 60
	var out []queue.CounterSample
	for _, t := range tubes {
		st, err := q.StatsTube(ctx, t)
		if err != nil {
			if isOutcome(err) {
				continue
			}
			return
		}
		c := countersOf(st)
		if r, ok := sm.recorded[t]; ok && r.c == c && now.Sub(r.at) < seriesBaseline {
			continue
		}
		out = append(out, queue.CounterSample{Minute: minute, Tube: t,
			Puts: c[0], Reserves: c[1], Deletes: c[2], Buries: c[3], Timeouts: c[4]})
	}
	if len(out) == 0 {
		return
	}
	if err := s.baselines(ctx, cl, minute, out); err != nil {
		s.logger().Warn("dashboard: recording the tubes' counters", "err", err)
		return
	}
	if err := cl.RecordCounters(ctx, minute, SeriesKeep, out); err != nil {
		s.logger().Warn("dashboard: recording the tubes' counters", "err", err)
		return
	}
	if sm.recorded == nil {
		sm.recorded = map[string]recorded{}
	}
	for _, c := range out {
		sm.recorded[c.Tube] = recorded{sampleCounters(c), now}
	}
	if len(sm.recorded) > 2*maxPanelTubes { // tubes gone: forget them
		for t, r := range sm.recorded {
			if now.Sub(r.at) >= seriesBaseline {
				delete(sm.recorded, t)
			}
		}
	}
}

// baselines records, under the minute before, the samples of the tubes
// in out that this server has not recorded yet and that the log holds no
// sample of since seriesBaseline: a tube new to the log (or back after a
// long silence) then counts from this first reading, whatever else is
// recorded in its first minute. sm.mu is held.
func (s *Server) baselines(ctx context.Context, cl queue.CounterLog, minute int64, out []queue.CounterSample) error {
	var fresh []queue.CounterSample
	for _, c := range out {
		if _, ok := s.sampler.recorded[c.Tube]; !ok {
			fresh = append(fresh, c)
		}
	}
	if len(fresh) == 0 {
		return nil
	}
	held, err := cl.CounterHistory(ctx, max(minute-int64(seriesBaseline/time.Minute), 0), minute)
	if err != nil {
		return err
	}
	known := map[string]bool{}
	for _, h := range held {
		known[h.Tube] = true
	}
	var base []queue.CounterSample
	for _, c := range fresh {
		if !known[c.Tube] {
			c.Minute = minute - 1
			base = append(base, c)
		}
	}
	if len(base) == 0 {
		return nil
	}
	return cl.RecordCounters(ctx, minute-1, SeriesKeep, base)
}

// sampleLoop samples every seriesStep until the Server stops.
func (s *Server) sampleLoop() {
	defer close(s.sampled)
	t := time.NewTicker(seriesStep)
	defer t.Stop()
	for {
		s.sample(s.stop)
		select {
		case <-s.stop.Done():
			return
		case <-t.C:
		}
	}
}

// SeriesReply is the reply of GET /dashboard/series?range=hour|day.
type SeriesReply struct {
	// Range is "hour" (60 buckets of a minute) or "day" (144 of ten
	// minutes).
	Range  string `json:"range"`
	StepMS int64  `json:"step_ms"`
	// EndMS is the end of the newest bucket, Unix milliseconds (the
	// current minute's end).
	EndMS int64 `json:"end_ms"`
	// Kept says whether the store keeps the counters (queue.CounterLog);
	// without, Charts have no lines.
	Kept bool `json:"kept"`
	// Charts: "processed" (jobs deleted), "failed" (buries and TTR
	// timeouts) and "puts", oldest bucket first.
	Charts []SeriesChart `json:"charts"`
	// Lateness of this server's HTTP deliveries over the last hour, by
	// LatenessStepMS: per bucket the upper bound of the histogram bucket
	// (1 ms to 60 s) holding the quantile, 120000 beyond the last, -1 for a
	// bucket without deliveries.
	LatenessStepMS int64   `json:"lateness_step_ms"`
	LatenessEndMS  int64   `json:"lateness_end_ms"`
	LatenessP50MS  []int64 `json:"lateness_p50_ms"`
	LatenessP99MS  []int64 `json:"lateness_p99_ms"`
}

// SeriesChart is one kind of count: a line for all tubes (Tube ""), one
// per busiest tube (at most eight) and "other" for the rest.
type SeriesChart struct {
	Name  string       `json:"name"`
	Lines []SeriesLine `json:"lines"`
}

// SeriesLine is a tube's counts, one per bucket.
type SeriesLine struct {
	Tube   string  `json:"tube"`
	Values []int64 `json:"values"`
}

// seriesKinds are the charts: each sums some counters of a minute.
var seriesKinds = []struct {
	name string
	of   func(d counters) int64
}{
	{"processed", func(d counters) int64 { return d[2] }},
	{"failed", func(d counters) int64 { return d[3] + d[4] }},
	{"puts", func(d counters) int64 { return d[0] }},
}

// perMinute turns samples (by minute, then tube) into each tube's
// differences by minute: tube → minute → counts.
func perMinute(samples []queue.CounterSample) map[string]map[int64]counters {
	prev := map[string]counters{}
	out := map[string]map[int64]counters{}
	for _, s := range samples {
		c := sampleCounters(s)
		p, ok := prev[s.Tube]
		prev[s.Tube] = c
		if !ok {
			continue // the tube's first sample: where its counts start
		}
		var d counters
		for i := range c {
			d[i] = c[i] - p[i]
			if d[i] < 0 {
				d[i] = c[i] // started again from zero
			}
		}
		if d == (counters{}) {
			continue
		}
		if out[s.Tube] == nil {
			out[s.Tube] = map[int64]counters{}
		}
		out[s.Tube][s.Minute] = d
	}
	return out
}

// history reads the counter log and builds the charts of the range.
func (s *Server) history(ctx context.Context, rng string, now time.Time) (SeriesReply, error) {
	bucketMin, buckets := int64(1), int64(60)
	if rng == "day" {
		bucketMin, buckets = 10, 144
	}
	end := now.Unix()/60 + 1 // the minute after the current one
	end = (end + bucketMin - 1) / bucketMin * bucketMin
	first := end - bucketMin*buckets
	out := SeriesReply{Range: rng, StepMS: bucketMin * 60e3, EndMS: end * 60e3, Charts: []SeriesChart{}}
	cl := s.counterLog()
	if cl != nil {
		out.Kept = true
		samples, err := cl.CounterHistory(ctx, first-int64(seriesBaseline/time.Minute), end-1)
		if err != nil {
			return out, err
		}
		diffs := perMinute(samples)
		// The busiest tubes get lines of their own.
		type busy struct {
			tube string
			n    int64
		}
		var ranked []busy
		for t, ms := range diffs {
			var n int64
			for m, d := range ms {
				if m >= first {
					n += d[0] + d[2] + d[3] + d[4]
				}
			}
			if n > 0 {
				ranked = append(ranked, busy{t, n})
			}
		}
		slices.SortFunc(ranked, func(a, b busy) int { return cmp.Or(cmp.Compare(b.n, a.n), cmp.Compare(a.tube, b.tube)) })
		line := map[string]string{}
		for i, r := range ranked {
			line[r.tube] = r.tube
			if i >= seriesTubes {
				line[r.tube] = seriesOther
			}
		}
		for _, k := range seriesKinds {
			ch := SeriesChart{Name: k.name}
			vals := map[string][]int64{}
			add := func(name string, i int64, v int64) {
				if vals[name] == nil {
					vals[name] = make([]int64, buckets)
				}
				vals[name][i] += v
			}
			for t, ms := range diffs {
				for m, d := range ms {
					if m < first || m >= end {
						continue
					}
					if v := k.of(d); v > 0 {
						i := (m - first) / bucketMin
						add("", i, v)
						add(line[t], i, v)
					}
				}
			}
			names := []string{""}
			for _, r := range ranked {
				if line[r.tube] == r.tube {
					names = append(names, r.tube)
				}
			}
			names = append(names, seriesOther)
			for _, n := range names {
				if vals[n] != nil {
					ch.Lines = append(ch.Lines, SeriesLine{Tube: n, Values: vals[n]})
				}
			}
			if ch.Lines == nil {
				ch.Lines = []SeriesLine{}
			}
			out.Charts = append(out.Charts, ch)
		}
	}
	out.LatenessStepMS = lateStep.Milliseconds()
	out.LatenessP50MS, out.LatenessP99MS, out.LatenessEndMS = s.Metrics.series.latenessQuantiles()
	return out, nil
}

// serveSeries samples the store and serves the charts of the range
// (?range=hour, the default, or day).
func (s *Server) serveSeries(w http.ResponseWriter, r *http.Request) error {
	rng := r.URL.Query().Get("range")
	switch rng {
	case "":
		rng = "hour"
	case "hour", "day":
	default:
		return badRequest("httpapi: range %q: want hour or day", rng)
	}
	s.sample(r.Context())
	reply, err := s.history(r.Context(), rng, time.Now())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, reply)
	return nil
}
