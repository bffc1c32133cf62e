package storetest

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/hourglass-io/hourglass/queue"
)

// testPutReserveDelete: the life of one job, and the defaults (tube
// "default", DefaultTTR).
func testPutReserveDelete(t *testing.T, s *suite) {
	e := s.env(t)
	id := e.put("jobs", queue.NewJob{Body: []byte("hello"), Priority: 10, TTR: 5 * time.Second})
	want := queue.Job{ID: id, Tube: "jobs", Priority: 10, TTR: 5 * time.Second, Body: []byte("hello")}
	e.wantPeek(id, want)
	e.wantState(id, queue.Ready)

	got := e.reserve(e.q, "jobs")
	want.Reserves = 1
	wantJob(t, "Reserve", got, want)
	e.wantPeek(id, want)
	e.wantState(id, queue.Reserved)
	e.noReserve(e.q, "jobs")

	wantErr(t, "Delete of the reserved job by its owner", e.q.Delete(e.ctx, id), nil)
	e.wantGone(id)
	wantErr(t, "second Delete", e.q.Delete(e.ctx, id), queue.ErrNotFound)
	e.noReserve(e.q, "jobs")
	if diff := gocmp.Diff(queue.Stats{TotalJobs: 1}, e.stats()); diff != "" {
		t.Errorf("Stats after the only job was deleted (-want +got):\n%s", diff)
	}

	// Defaults: the tube "default" and the Queue's DefaultTTR.
	id = e.put("default", queue.NewJob{Body: []byte("x")})
	got, err := e.q.Reserve(e.ctx, queue.ReserveOptions{Timeout: -1})
	e.ok("Reserve with no tubes", err)
	wantJob(t, "Reserve from the default tube", got,
		queue.Job{ID: id, Tube: "default", TTR: queue.DefaultTTR, Reserves: 1, Body: []byte("x")})
	e.ok("Delete", e.q.Delete(e.ctx, id))
}

// testBodies: bodies come back byte for byte, whatever they hold, up to
// MaxJobSize, and Put keeps no hold of the slice it was given: the caller
// may write over it once Put returns (queue.Store.Put).
func testBodies(t *testing.T, s *suite) {
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	for _, c := range []struct {
		name string
		body func(max int) []byte
	}{
		{"empty", func(int) []byte { return []byte{} }},
		{"nil", func(int) []byte { return nil }},
		{"every byte value", func(int) []byte { return all }},
		{"protocol lookalike", func(int) []byte { return []byte("RESERVED 1 2\r\n\r\n\x00") }},
		{"UTF-8", func(int) []byte { return []byte("héllo, 世界") }},
		{"MaxJobSize", func(max int) []byte { return bytes.Repeat([]byte("ab"), max)[:max] }},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := s.env(t)
			body := c.body(e.q.MaxJobSize())
			sent := slices.Clone(body)
			id := e.put("bodies", queue.NewJob{Body: sent})
			for i := range sent {
				sent[i] ^= 0xff
			}
			want := queue.Job{ID: id, Tube: "bodies", TTR: queue.DefaultTTR, Body: body}
			e.wantPeek(id, want)
			want.Reserves = 1
			wantJob(t, "Reserve", e.reserve(e.q, "bodies"), want)
		})
	}
}

// testIDs: IDs are above 0 and at most MaxID, unique in the store and
// increasing within a tube.
func testIDs(t *testing.T, s *suite) {
	e := s.env(t)
	perTube := map[string][]queue.ID{}
	seen := map[queue.ID]bool{}
	note := func(tube string, id queue.ID) {
		t.Helper()
		if id == 0 || id > queue.MaxID {
			t.Errorf("job ID %d, want 1 to %d (below 2^53)", id, queue.MaxID)
		}
		if seen[id] {
			t.Errorf("job ID %d issued twice", id)
		}
		seen[id] = true
		perTube[tube] = append(perTube[tube], id)
	}
	tubes := []string{"ids-a", "ids-b", "ids-c"}
	for i := range 30 {
		tube := tubes[i%len(tubes)]
		if i%4 == 0 {
			for _, r := range e.putMany(tube, []queue.NewJob{{Body: []byte("m1")}, {Body: []byte("m2")}}) {
				note(tube, r.ID)
			}
			continue
		}
		note(tube, e.put(tube, queue.NewJob{Body: []byte(fmt.Sprint(i)), Delay: time.Duration(i%3) * time.Second}))
	}
	for tube, got := range perTube {
		if !slices.IsSorted(got) || len(slices.Compact(slices.Clone(got))) != len(got) {
			t.Errorf("IDs of tube %q in put order are not increasing: %v", tube, got)
		}
	}
}

// testPutMany: one result per job, in order, with increasing IDs; later puts
// get larger IDs.
func testPutMany(t *testing.T, s *suite) {
	e := s.env(t)
	jobs := []queue.NewJob{
		{Body: []byte("first"), Priority: 3},
		{Body: []byte("second"), Priority: 1, TTR: 2 * time.Second},
		{Body: []byte("third"), Priority: 2, Delay: 5 * time.Second},
		{Body: []byte("fourth"), Priority: 1},
		{Body: []byte("fifth")},
	}
	res := e.putMany("many", jobs)
	for i, r := range res {
		if r.Duplicate {
			t.Errorf("result %d: Duplicate without a UniqueKey", i)
		}
		if i > 0 && r.ID <= res[i-1].ID {
			t.Errorf("PutMany IDs not increasing: %v", res)
		}
		ttr := jobs[i].TTR
		if ttr == 0 {
			ttr = queue.DefaultTTR
		}
		e.wantPeek(r.ID, queue.Job{ID: r.ID, Tube: "many", Priority: jobs[i].Priority, TTR: ttr, Body: jobs[i].Body})
	}
	e.wantState(res[2].ID, queue.Delayed)
	if got := e.statsTube("many").TotalJobs; got != int64(len(jobs)) {
		t.Errorf("TotalJobs = %d after a PutMany of %d", got, len(jobs))
	}
	next := e.put("many", queue.NewJob{Body: []byte("sixth")})
	if next <= res[len(res)-1].ID {
		t.Errorf("Put after PutMany got ID %d, not above the batch's %v", next, res)
	}
	// The batch is reserved in (priority, ID) order; the delayed job waits.
	for _, want := range []queue.ID{res[4].ID, next, res[1].ID, res[3].ID, res[0].ID} {
		e.reserveWant(e.q, want, "many")
	}
	e.noReserve(e.q, "many")
}

// reserveOrder returns the IDs sorted by (priority, ID).
func reserveOrder(pri map[queue.ID]uint32) []queue.ID {
	out := make([]queue.ID, 0, len(pri))
	for id := range pri {
		out = append(out, id)
	}
	slices.SortFunc(out, func(a, b queue.ID) int {
		if c := cmp.Compare(pri[a], pri[b]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	return out
}

// testOrdering: ready jobs are reserved lowest (priority, ID) first.
func testOrdering(t *testing.T, s *suite) {
	for _, c := range []struct {
		name string
		pris []uint32 // put in this order
	}{
		{"by priority", []uint32{3, 1, 2}},
		{"ties by ID", []uint32{5, 5, 5, 5}},
		{"mixed", []uint32{10, 0, 10, 4294967295, 0, 1023, 1024, 1}},
		{"extremes", []uint32{4294967295, 0, 4294967294, 1}},
		{"descending", []uint32{9, 8, 7, 6, 5, 4, 3, 2, 1, 0}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := s.env(t)
			pri := map[queue.ID]uint32{}
			for i, p := range c.pris {
				pri[e.putPri("order", p, fmt.Sprint("job ", i))] = p
			}
			want := reserveOrder(pri)
			var got []queue.ID
			for range want {
				got = append(got, e.reserve(e.q, "order").ID)
			}
			e.noReserve(e.q, "order")
			if diff := gocmp.Diff(want, got); diff != "" {
				t.Errorf("reserve order (-want +got):\n%s", diff)
			}
		})
	}
}

// testReleaseKeepsPlace: a released or kicked job goes back to its place by
// ID, not to the end of its priority.
func testReleaseKeepsPlace(t *testing.T, s *suite) {
	e := s.env(t)
	a := e.putPri("place", 5, "a")
	b := e.putPri("place", 5, "b")
	e.reserveWant(e.q, a, "place")
	e.reserveWant(e.q, b, "place")
	e.ok("Release b", e.q.Release(e.ctx, b, 5, 0))
	e.ok("Release a", e.q.Release(e.ctx, a, 5, 0))
	e.reserveWant(e.q, a, "place")
	c := e.putPri("place", 5, "c")
	e.ok("Bury a", e.q.Bury(e.ctx, a, 5))
	n, err := e.q.Kick(e.ctx, "place", 1)
	e.ok("Kick", err)
	if n != 1 {
		t.Fatalf("Kick = %d, want 1", n)
	}
	for _, want := range []queue.ID{a, b, c} {
		e.reserveWant(e.q, want, "place")
	}
}

// testMultipleTubes: one Reserve over several tubes takes the lowest
// (priority, ID) among them and nothing from other tubes.
func testMultipleTubes(t *testing.T, s *suite) {
	t.Run("by priority", func(t *testing.T) {
		e := s.env(t)
		a1 := e.putPri("tube-a", 5, "a1")
		a2 := e.putPri("tube-a", 2, "a2")
		b1 := e.putPri("tube-b", 3, "b1")
		c1 := e.putPri("tube-c", 0, "c1")
		for _, want := range []queue.ID{a2, b1, a1} {
			e.reserveWant(e.q, want, "tube-a", "tube-b")
		}
		e.noReserve(e.q, "tube-a", "tube-b")
		e.wantState(c1, queue.Ready)
		e.reserveWant(e.q, c1, "tube-b", "tube-c")
	})
	t.Run("ties by ID", func(t *testing.T) {
		e := s.env(t)
		pri := map[queue.ID]uint32{}
		for i, tube := range []string{"tube-a", "tube-b", "tube-a", "tube-c", "tube-b"} {
			pri[e.putPri(tube, 7, fmt.Sprint(tube, i))] = 7
		}
		want := reserveOrder(pri)
		var got []queue.ID
		for range want {
			got = append(got, e.reserve(e.q, "tube-c", "tube-b", "tube-a").ID)
		}
		if diff := gocmp.Diff(want, got); diff != "" {
			t.Errorf("reserve order across tubes (-want +got):\n%s", diff)
		}
	})
	t.Run("repeated tube", func(t *testing.T) {
		e := s.env(t)
		id := e.putPri("tube-a", 1, "only")
		e.reserveWant(e.q, id, "tube-a", "tube-a")
	})
}

// testReserveN: up to n jobs in (priority, ID) order, fewer when fewer are
// ready.
func testReserveN(t *testing.T, s *suite) {
	e := s.env(t)
	pri := map[queue.ID]uint32{}
	for i, p := range []uint32{4, 2, 9, 2, 7} {
		pri[e.putPri("batch-t", p, fmt.Sprint("t", i))] = p
	}
	pri[e.putPri("batch-u", 1, "u")] = 1
	order := reserveOrder(pri)

	jobs, err := e.q.ReserveN(e.ctx, 3, queue.ReserveOptions{Tubes: []string{"batch-t", "batch-u"}, Timeout: -1})
	e.ok("ReserveN(3)", err)
	if diff := gocmp.Diff(order[:3], ids(jobs)); diff != "" {
		t.Errorf("ReserveN(3) (-want +got):\n%s", diff)
	}
	jobs, err = e.q.ReserveN(e.ctx, 10, queue.ReserveOptions{Tubes: []string{"batch-t", "batch-u"}, Timeout: -1})
	e.ok("ReserveN(10)", err)
	if diff := gocmp.Diff(order[3:], ids(jobs)); diff != "" {
		t.Errorf("ReserveN(10) with 3 ready (-want +got):\n%s", diff)
	}
	for _, j := range jobs {
		if j.Reserves != 1 || j.Priority != pri[j.ID] {
			t.Errorf("ReserveN returned %+v, want Reserves 1 and priority %d", j, pri[j.ID])
		}
	}
	_, err = e.q.ReserveN(e.ctx, 1, queue.ReserveOptions{Tubes: []string{"batch-t", "batch-u"}, Timeout: -1})
	wantErr(t, "ReserveN with nothing ready", err, queue.ErrTimeout)
	for _, id := range order {
		e.wantState(id, queue.Reserved)
	}
	errs, err := e.q.DeleteMany(e.ctx, order)
	e.ok("DeleteMany", err)
	if !errsMatch(errs, make([]error, len(order))) {
		t.Errorf("DeleteMany of the owner's reserved jobs: %v", errs)
	}
}

// testUniqueKey: a second put with a live key returns the first job's ID
// with Duplicate and stores nothing; the key is per tube and freed when the
// job is deleted.
func testUniqueKey(t *testing.T, s *suite) {
	e := s.env(t)
	putKey := func(tube, key, body string) queue.PutResult {
		t.Helper()
		return e.putMany(tube, []queue.NewJob{{Body: []byte(body), UniqueKey: key}})[0]
	}
	first := putKey("uniq", "k", "first")
	if first.Duplicate {
		t.Fatalf("first put of key k: Duplicate")
	}
	total := e.stats().TotalJobs
	dup := putKey("uniq", "k", "second")
	if diff := gocmp.Diff(queue.PutResult{ID: first.ID, Duplicate: true, State: queue.Ready}, dup); diff != "" {
		t.Errorf("second put of key k (-want +got):\n%s", diff)
	}
	if got := e.stats().TotalJobs; got != total {
		t.Errorf("a duplicate put changed Stats.TotalJobs from %d to %d", total, got)
	}
	e.wantPeek(first.ID, queue.Job{ID: first.ID, Tube: "uniq", TTR: queue.DefaultTTR, Body: []byte("first"), UniqueKey: "k"})
	if st := e.statsJob(first.ID); st.UniqueKey != "k" {
		t.Errorf("StatsJob of the job put with key k: UniqueKey %q", st.UniqueKey)
	}
	// A reserve returns the key too (a reservation of the queue's own).
	if j := e.reserve(e.q, "uniq"); j.ID != first.ID || j.UniqueKey != "k" {
		t.Errorf("reserve: job %d with key %q, want job %d with key k", j.ID, j.UniqueKey, first.ID)
	}
	if err := e.q.Release(e.ctx, first.ID, 0, 0); err != nil {
		t.Fatal(err)
	}

	other := putKey("uniq-other", "k", "other tube")
	if other.Duplicate || other.ID == first.ID {
		t.Errorf("key k in another tube: %+v, want a new job", other)
	}
	if a, b := putKey("uniq", "", "no key 1"), putKey("uniq", "", "no key 2"); a.Duplicate || b.Duplicate || a.ID == b.ID {
		t.Errorf("puts without a key: %+v, %+v; want two new jobs", a, b)
	}

	batch := e.putMany("uniq", []queue.NewJob{
		{Body: []byte("b1"), UniqueKey: "k2"},
		{Body: []byte("b2"), UniqueKey: "k2"},
		{Body: []byte("b3"), UniqueKey: "k"},
	})
	want := []queue.PutResult{{ID: batch[0].ID}, {ID: batch[0].ID, Duplicate: true, State: queue.Ready}, {ID: first.ID, Duplicate: true, State: queue.Ready}}
	if diff := gocmp.Diff(want, batch); diff != "" {
		t.Errorf("PutMany with a key repeated in the batch (-want +got):\n%s", diff)
	}

	// The key stays held while the job is reserved, buried or delayed.
	e.reserveJob(e.q, first.ID)
	if r := putKey("uniq", "k", "while reserved"); !gocmp.Equal(r, queue.PutResult{ID: first.ID, Duplicate: true, State: queue.Reserved}) {
		t.Errorf("put of key k while its job is reserved: %+v", r)
	}
	e.ok("Bury", e.q.Bury(e.ctx, first.ID, 0))
	if r := putKey("uniq", "k", "while buried"); !gocmp.Equal(r, queue.PutResult{ID: first.ID, Duplicate: true, State: queue.Buried}) {
		t.Errorf("put of key k while its job is buried: %+v", r)
	}
	delayed := e.putMany("uniq", []queue.NewJob{{Body: []byte("d"), UniqueKey: "kd", Delay: time.Minute}})[0]
	if r := putKey("uniq", "kd", "while delayed"); !gocmp.Equal(r, queue.PutResult{ID: delayed.ID, Duplicate: true, State: queue.Delayed}) {
		t.Errorf("put of key kd while its job is delayed: %+v", r)
	}

	// Deleting the job frees the key.
	e.ok("Delete", e.q.Delete(e.ctx, first.ID))
	again := putKey("uniq", "k", "after delete")
	if again.Duplicate || again.ID == first.ID {
		t.Errorf("put of key k after its job was deleted: %+v, want a new job", again)
	}
	e.wantPeek(again.ID, queue.Job{ID: again.ID, Tube: "uniq", TTR: queue.DefaultTTR, Body: []byte("after delete"), UniqueKey: "k"})
}
