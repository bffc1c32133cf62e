package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/server/httpapi"
)

// sums adds up each line of a chart: tube ("" for all tubes) → total.
func sums(t *testing.T, r httpapi.SeriesReply, chart string) map[string]int64 {
	t.Helper()
	want := 60
	if r.Range == "day" {
		want = 144
	}
	for _, c := range r.Charts {
		if c.Name != chart {
			continue
		}
		out := map[string]int64{}
		for _, l := range c.Lines {
			if len(l.Values) != want {
				t.Fatalf("chart %s, line %q: %d values, want %d", chart, l.Tube, len(l.Values), want)
			}
			for _, v := range l.Values {
				out[l.Tube] += v
			}
		}
		return out
	}
	t.Fatalf("no chart %q in %+v", chart, r)
	return nil
}

func series(t *testing.T, c *client, rng string) httpapi.SeriesReply {
	t.Helper()
	var r httpapi.SeriesReply
	c.do(req{method: "GET", path: "/dashboard/series?range=" + rng}).want(t, http.StatusOK, "").decode(t, &r)
	if !r.Kept {
		t.Fatal("the store keeps no history")
	}
	return r
}

// TestDashboardSeries: the charts count the jobs processed, failed and put
// in each tube from the store, whoever made them (this server's HTTP API,
// a Go program on the same store), and the lateness of deliveries; the
// busiest eight tubes have lines of their own, the others add up in
// "other".
func TestDashboardSeries(t *testing.T) {
	ts := startServer(t, memStore(t), nil)
	ctx := context.Background()
	put := func(tube string) queue.ID {
		t.Helper()
		id, err := ts.q.Put(ctx, tube, queue.NewJob{Body: []byte("x")})
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	put("s1")
	ts.c.put(t, "s2", map[string]any{"body": "x"})
	series(t, ts.c, "hour") // the first reading of both tubes
	var s1 []queue.ID
	for range 4 {
		s1 = append(s1, put("s1"))
	}
	for range 2 {
		ts.c.put(t, "s2", map[string]any{"body": "x"})
	}
	for _, id := range s1[:2] {
		if err := ts.q.Delete(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	r := ts.c.reserve(t, []string{"s2"}, 0)
	ts.c.do(req{method: "POST", path: fmt.Sprintf("/v1/jobs/%d/bury", r.Job.ID), header: lease(r.Lease)}).want(t, http.StatusNoContent, "")
	j, err := ts.q.Reserve(ctx, queue.ReserveOptions{Tubes: []string{"s1"}, Timeout: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := ts.q.Bury(ctx, j.ID, 0); err != nil {
		t.Fatal(err)
	}

	for _, rng := range []string{"hour", "day"} {
		got := series(t, ts.c, rng)
		if p := sums(t, got, "puts"); p["s1"] != 4 || p["s2"] != 2 || p[""] != 6 {
			t.Errorf("%s: puts %v, want s1 4 and s2 2 since the first reading, 6 in all", rng, p)
		}
		if d := sums(t, got, "processed"); d["s1"] != 2 || d["s2"] != 0 || d[""] != 2 {
			t.Errorf("%s: processed %v, want s1 2", rng, d)
		}
		if n := sums(t, got, "failed"); n["s1"] != 1 || n["s2"] != 1 || n[""] != 2 {
			t.Errorf("%s: failed %v, want s1 1 (Go) and s2 1 (HTTP)", rng, n)
		}
	}
	got := series(t, ts.c, "hour")
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

	// Twelve more tubes: eight lines of tubes in all, the rest in "other".
	for i := range 12 {
		ts.c.put(t, fmt.Sprintf("many-%02d", i), map[string]any{"body": "x"})
	}
	series(t, ts.c, "hour") // their first reading
	for i := range 12 {
		for range i + 1 {
			ts.c.put(t, fmt.Sprintf("many-%02d", i), map[string]any{"body": "x"})
		}
	}
	p := sums(t, series(t, ts.c, "hour"), "puts")
	if len(p) != 10 || p["other"] == 0 || p[""] != 6+78 || p["many-11"] != 12 || p["s2"] != 0 {
		t.Errorf("puts of 14 tubes: %v, want all, the eight busiest (many-04 to many-11) and other; 84 in all", p)
	}
	ts.c.do(req{method: "GET", path: "/dashboard/series?range=week"}).want(t, http.StatusBadRequest, httpapi.CodeBadRequest)
}

// TestDashboardSeriesShared: the history is the store's: two servers on
// one store both show each job once, and a server started later (a
// restart) shows what happened before it.
func TestDashboardSeriesShared(t *testing.T) {
	store := memStore(t)
	a := startServer(t, store, nil)
	b := startServer(t, store, nil)
	a.c.put(t, "x", map[string]any{"body": "first"})
	series(t, a.c, "hour")
	series(t, b.c, "hour")
	for i := range 6 {
		c := a.c
		if i%2 == 1 {
			c = b.c
		}
		c.put(t, "x", map[string]any{"body": "more"})
		series(t, a.c, "hour") // both servers read and record, turn by turn
		series(t, b.c, "hour")
	}
	for name, c := range map[string]*client{"a": a.c, "b": b.c} {
		if p := sums(t, series(t, c, "hour"), "puts"); p["x"] != 6 {
			t.Errorf("server %s: puts %v, want x 6", name, p)
		}
	}
	later := startServer(t, store, nil)
	if p := sums(t, series(t, later.c, "day"), "puts"); p["x"] != 6 {
		t.Errorf("a server started later: puts %v, want x 6", p)
	}
}
