package httpapi_test

import (
	"context"
	"errors"
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

// TestDashboardSeries: the charts count the puts, reserves, deletes and
// buries of each tube from the store, whoever made them (this server's
// HTTP API, a Go program on the same store), and the lateness of
// deliveries; tubes beyond the cap add up in "other".
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

	// A reserve and a bury on the store by another client count too; a
	// reserve that finds nothing does not.
	j, err := ts.q.Reserve(ctx, queue.ReserveOptions{Tubes: []string{"s1"}, Timeout: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := ts.q.Bury(ctx, j.ID, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.q.Reserve(ctx, queue.ReserveOptions{Tubes: []string{"empty"}, Timeout: -1}); !errors.Is(err, queue.ErrTimeout) {
		t.Fatalf("a reserve of an empty tube: %v", err)
	}

	got := series()
	if p := sums(t, got, "puts"); p["s1"] != 5 || p["s2"] != 3 {
		t.Errorf("puts %v, want s1 5 and s2 3", p)
	}
	if d := sums(t, got, "deletes"); d["s1"] != 2 || d["s2"] != 0 {
		t.Errorf("deletes %v, want s1 2", d)
	}
	if n := sums(t, got, "reserves"); n["s1"] != 1 || n["s2"] != 1 || len(n) != 2 {
		t.Errorf("reserves %v, want s1 1 (Go) and s2 1 (HTTP)", n)
	}
	if n := sums(t, got, "buries"); n["s1"] != 1 || n["s2"] != 1 || len(n) != 2 {
		t.Errorf("buries %v, want s1 1 and s2 1", n)
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
