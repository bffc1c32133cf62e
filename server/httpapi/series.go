package httpapi

import (
	"context"
	"net/http"
	"sync"
	"time"
)

// The dashboard's charts: counts per ten seconds over the last hour, in
// a ring of fixed size, whatever the traffic. Where each count comes from:
//
//   - puts, reserves, deletes, buries and timeouts, per tube: the store's
//     counters (TotalJobs, Reserves, Deletes, Buries and Timeouts of each
//     tube's stats), read every ten seconds (and at each chart request), so
//     they count what every server sharing the store did, over both
//     protocols and from Go programs;
//   - delivery lateness: what MetricDeliveryLateness observes (first
//     reserves over HTTP of jobs never kicked); the beanstalkd protocol's
//     reserves are not observed.
//
// The first seriesTubes tubes seen have a line of their own; the others
// are added up in "other".
const (
	seriesStep  = 10 * time.Second
	seriesLen   = 360 // an hour
	seriesTubes = 16
	// seriesAll is the row of counts kept for all tubes together.
	seriesAll   = ""
	seriesOther = "other"
)

type seriesKind int

const (
	seriesPuts seriesKind = iota
	seriesReserves
	seriesDeletes
	seriesBuries
	seriesTimeouts
	seriesKinds
)

var seriesKindNames = [seriesKinds]string{"puts", "reserves", "deletes", "buries", "timeouts"}

// lateBoundsMS are the upper bounds of the lateness histogram's buckets,
// in milliseconds; the last bucket has none.
var lateBoundsMS = [...]int64{1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 60000}

// series holds the ring. Its memory is fixed: seriesLen buckets of
// seriesTubes+2 rows of seriesKinds counts, and a lateness histogram each.
type series struct {
	mu     sync.Mutex
	newest int64          // the newest bucket's number: Unix time / seriesStep
	rows   map[string]int // row of each name: seriesOther, seriesAll, then tubes
	names  []string
	counts [seriesLen][seriesTubes + 2][seriesKinds]uint32
	late   [seriesLen][len(lateBoundsMS) + 1]uint32
}

func newSeries() *series {
	return &series{rows: map[string]int{seriesOther: 0, seriesAll: 1}, names: []string{seriesOther, seriesAll}}
}

// bucket moves the ring to now and returns now's slot. s.mu is held.
func (s *series) bucket(now time.Time) int {
	k := now.UnixNano() / int64(seriesStep)
	if s.newest == 0 || k-s.newest >= seriesLen {
		s.counts, s.late = [seriesLen][seriesTubes + 2][seriesKinds]uint32{}, [seriesLen][len(lateBoundsMS) + 1]uint32{}
	} else {
		for i := s.newest + 1; i <= k; i++ {
			s.counts[i%seriesLen] = [seriesTubes + 2][seriesKinds]uint32{}
			s.late[i%seriesLen] = [len(lateBoundsMS) + 1]uint32{}
		}
	}
	if k > s.newest {
		s.newest = k
	}
	return int(k % seriesLen)
}

// add counts n of kind for tube (seriesAll: all tubes) now.
func (s *series) add(tube string, kind seriesKind, n int64) {
	if n <= 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	row, ok := s.rows[tube]
	if !ok {
		if len(s.names) < seriesTubes+2 {
			row = len(s.names)
			s.rows[tube] = row
			s.names = append(s.names, tube)
		} else {
			row = s.rows[seriesOther]
		}
	}
	c := &s.counts[s.bucket(time.Now())][row][kind]
	*c = uint32(min(int64(*c)+n, 1<<32-1))
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

// SeriesReply is the reply of GET /dashboard/series: the last hour, oldest
// bucket first.
type SeriesReply struct {
	StepMS int64 `json:"step_ms"`
	// EndMS is the end of the newest bucket, Unix milliseconds.
	EndMS  int64         `json:"end_ms"`
	Charts []SeriesChart `json:"charts"`
	// LatenessP50MS and LatenessP99MS are per bucket: the upper bound of
	// the histogram bucket (1 ms to 60 s) holding the quantile, 120000
	// beyond the last, -1 for a bucket without deliveries.
	LatenessP50MS []int64 `json:"lateness_p50_ms"`
	LatenessP99MS []int64 `json:"lateness_p99_ms"`
}

// SeriesChart is one kind of count: a line per tube, or one for all.
type SeriesChart struct {
	Name  string       `json:"name"`
	Lines []SeriesLine `json:"lines"`
}

// SeriesLine is a tube's counts ("" for all tubes together).
type SeriesLine struct {
	Tube   string   `json:"tube"`
	Values []uint32 `json:"values"`
}

// reply returns the ring from the oldest bucket to now's.
func (s *series) reply() SeriesReply {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.bucket(time.Now())
	out := SeriesReply{StepMS: seriesStep.Milliseconds(), EndMS: (s.newest + 1) * seriesStep.Milliseconds()}
	for k := range seriesKinds {
		ch := SeriesChart{Name: seriesKindNames[k], Lines: []SeriesLine{}}
		for row, name := range s.names {
			var vals []uint32
			for i := range seriesLen {
				v := s.counts[(now+1+i)%seriesLen][row][k]
				if v != 0 && vals == nil {
					vals = make([]uint32, seriesLen)
				}
				if vals != nil {
					vals[i] = v
				}
			}
			if vals != nil {
				ch.Lines = append(ch.Lines, SeriesLine{Tube: name, Values: vals})
			}
		}
		out.Charts = append(out.Charts, ch)
	}
	out.LatenessP50MS, out.LatenessP99MS = make([]int64, seriesLen), make([]int64, seriesLen)
	for i := range seriesLen {
		h := &s.late[(now+1+i)%seriesLen]
		out.LatenessP50MS[i], out.LatenessP99MS[i] = quantile(h, .5), quantile(h, .99)
	}
	return out
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

// sampler reads the store's counters into the series (see above).
type sampler struct {
	mu      sync.Mutex
	sampled bool
	last    map[string][seriesKinds]int64 // tube → its counters, by kind
}

// sample reads the counters of every tube (at most maxPanelTubes) and
// counts what changed since the last sample.
func (s *Server) sample(ctx context.Context) {
	sm, q, ser := &s.sampler, s.Queue, s.Metrics.series
	sm.mu.Lock()
	defer sm.mu.Unlock()
	tubes, err := q.Tubes(ctx)
	if err != nil {
		return
	}
	tubes = tubes[:min(len(tubes), maxPanelTubes)]
	cur := make(map[string][seriesKinds]int64, len(tubes))
	for _, t := range tubes {
		st, err := q.StatsTube(ctx, t)
		if err != nil {
			if isOutcome(err) {
				continue
			}
			return
		}
		var v [seriesKinds]int64
		v[seriesPuts], v[seriesReserves], v[seriesDeletes] = st.TotalJobs, st.Reserves, st.Deletes
		v[seriesBuries], v[seriesTimeouts] = st.Buries, st.Timeouts
		cur[t] = v
	}
	if sm.sampled {
		for t, v := range cur {
			prev := sm.last[t] // zero for a tube new since: it started at zero
			for kind := range seriesKinds {
				d := v[kind] - prev[kind]
				if d < 0 {
					d = v[kind] // the tube went and came back
				}
				ser.add(t, kind, d)
			}
		}
	}
	sm.last, sm.sampled = cur, true
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

// serveSeries samples the store and serves the last hour.
func (s *Server) serveSeries(w http.ResponseWriter, r *http.Request) error {
	s.sample(r.Context())
	writeJSON(w, http.StatusOK, s.Metrics.series.reply())
	return nil
}
