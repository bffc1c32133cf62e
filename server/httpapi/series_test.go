package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/server/httpapi"
)

// sums adds up each line of a chart: tube → total over the hour.
func sums(t *testing.T, r httpapi.SeriesReply, chart string) map[string]int {
	t.Helper()
	for _, c := range r.Charts {
		if c.Name != chart {
			continue
		}
		out := map[string]int{}
		for _, l := range c.Lines {
			if len(l.Values) != 360 {
				t.Fatalf("chart %s, line %q: %d values, want 360 (an hour of 10 s)", chart, l.Tube, len(l.Values))
			}
			for _, v := range l.Values {
				out[l.Tube] += int(v)
			}
		}
		return out
	}
	t.Fatalf("no chart %q in %+v", chart, r)
	return nil
}

// TestDashboardSeries: the charts count the puts and deletes of each tube
// from the store, the reserves and buries this server answered, and the
// lateness of deliveries; tubes beyond the cap add up in "other".
func TestDashboardSeries(t *testing.T) {
	ts := startServer(t, memStore(t), nil)
	ctx := context.Background()
	series := func() httpapi.SeriesReply {
		t.Helper()
		var r httpapi.SeriesReply
		ts.c.do(req{method: "GET", path: "/dashboard/series"}).want(t, http.StatusOK, "").decode(t, &r)
		return r
	}
	series() // the store's counters as they are before
	var s1 []queue.ID
	for i := range 5 {
		id, err := ts.q.Put(ctx, "s1", queue.NewJob{Body: []byte(fmt.Sprint(i))})
		if err != nil {
			t.Fatal(err)
		}
		s1 = append(s1, id)
	}
	for range 3 {
		ts.c.put(t, "s2", map[string]any{"body": "x"})
	}
	for _, id := range s1[:2] {
		if err := ts.q.Delete(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	r := ts.c.reserve(t, []string{"s2"}, 0)
	ts.c.do(req{method: "POST", path: fmt.Sprintf("/v1/jobs/%d/bury", r.Job.ID), header: lease(r.Lease)}).want(t, http.StatusNoContent, "")

	// The beanstalkd protocol's reserves and buries count too (the
	// beanstalkd server calls ObserveBeanstalk after each command); a
	// reserve that timed out does not.
	m := ts.srv.Metrics
	m.ObserveBeanstalk("reserve-with-timeout", 0, nil)
	m.ObserveBeanstalk("reserve-with-timeout", 0, queue.ErrTimeout)
	m.ObserveBeanstalk("bury", 0, nil)

	got := series()
	if p := sums(t, got, "puts"); p["s1"] != 5 || p["s2"] != 3 {
		t.Errorf("puts %v, want s1 5 and s2 3", p)
	}
	if d := sums(t, got, "deletes"); d["s1"] != 2 || d["s2"] != 0 {
		t.Errorf("deletes %v, want s1 2", d)
	}
	if n := sums(t, got, "reserves"); n[""] != 2 {
		t.Errorf("reserves %v, want 2 for all tubes (one over each protocol)", n)
	}
	if n := sums(t, got, "buries"); n[""] != 2 {
		t.Errorf("buries %v, want 2 for all tubes", n)
	}
	late := 0
	for i, v := range got.LatenessP50MS {
		if v >= 0 {
			late++
			if got.LatenessP99MS[i] < v {
				t.Errorf("bucket %d: p99 %d below p50 %d", i, got.LatenessP99MS[i], v)
			}
		}
	}
	if late != 1 {
		t.Errorf("lateness in %d buckets, want the one delivery in one", late)
	}

	// Twenty more tubes: sixteen lines in all, the rest in "other".
	for i := range 20 {
		ts.c.put(t, fmt.Sprintf("many-%02d", i), map[string]any{"body": "x"})
	}
	p := sums(t, series(), "puts")
	total := 0
	for _, n := range p {
		total += n
	}
	if len(p) > 17 || p["other"] == 0 || total != 28 {
		t.Errorf("puts of 22 tubes: %d lines %v (total %d), want at most 16 tubes and other, 28 in all", len(p), p, total)
	}
}
