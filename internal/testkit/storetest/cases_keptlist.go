package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/hourglass-io/hourglass/queue"
)

// testListKept: a tube's kept jobs are listed in pages, the one dropped
// last first (with one retention, the newest finished first; jobs ended
// at the same time by ID, higher first), each with its key, how it ended,
// its times and the first queue.KeptPreviewLen bytes of its result; live
// jobs, other tubes' kept jobs and jobs whose time has come are not
// listed, and bad input is refused.
func testListKept(t *testing.T, s *suite) {
	e := s.keepEnv(t)
	const tube = "lk"
	e.ok("SetRetention", e.q.SetRetention(e.ctx, tube, 10*time.Second))
	e.ok("SetRetention other", e.q.SetRetention(e.ctx, "lk-other", 10*time.Second))
	long := bytes.Repeat([]byte("r"), queue.KeptPreviewLen+100)
	var want []queue.KeptJob // in the order they end
	finish := func(key string, result []byte) {
		t.Helper()
		id := e.put(tube, queue.NewJob{Body: []byte("b-" + key), UniqueKey: key})
		e.ok("Finish "+key, e.q.Finish(e.ctx, id, result))
		k := queue.KeptJob{ID: id, UniqueKey: key, FinishedAt: e.clock.Now(), KeptUntil: e.clock.Now().Add(10 * time.Second),
			ResultLen: len(result)}
		if len(result) > 0 {
			k.Result = result[:min(len(result), queue.KeptPreviewLen)]
		}
		want = append(want, k)
	}
	finish("a", []byte("ra"))
	e.advance(time.Millisecond)
	finish("b", long)
	e.advance(time.Millisecond)
	// Two ending at the same time: the higher ID first.
	finish("c", nil)
	finish("d", []byte("rd"))
	e.advance(time.Millisecond)
	// A delete keeps too, without a result; a cancel keeps with its reason.
	id := e.put(tube, queue.NewJob{Body: []byte("e"), UniqueKey: "e"})
	e.ok("Delete", e.q.Delete(e.ctx, id))
	want = append(want, queue.KeptJob{ID: id, UniqueKey: "e", FinishedAt: e.clock.Now(), KeptUntil: e.clock.Now().Add(10 * time.Second)})
	e.advance(time.Millisecond)
	id = e.put(tube, queue.NewJob{Body: []byte("f")})
	if _, err := e.q.Cancel(e.ctx, id, "no longer wanted"); err != nil {
		t.Fatalf("Cancel: %v", err)
	}
	want = append(want, queue.KeptJob{ID: id, Cancelled: true, LastError: "no longer wanted", FinishedAt: e.clock.Now(), KeptUntil: e.clock.Now().Add(10 * time.Second)})
	// Not listed: a live job, another tube's kept job.
	e.put(tube, queue.NewJob{Body: []byte("live"), UniqueKey: "live"})
	other := e.put("lk-other", queue.NewJob{Body: []byte("o")})
	e.ok("Finish other", e.q.Finish(e.ctx, other, []byte("o")))

	newest := make([]queue.KeptJob, len(want))
	for i, k := range want {
		newest[len(want)-1-i] = k
	}
	if newest[2].ID < newest[3].ID { // c and d ended at once: the higher ID first
		newest[2], newest[3] = newest[3], newest[2]
	}
	list := func(step string, from queue.KeptCursor, limit int) ([]queue.KeptJob, queue.KeptCursor) {
		t.Helper()
		jobs, next, err := e.q.ListKept(e.ctx, tube, from, limit)
		if err != nil {
			t.Fatalf("%s: ListKept: %v", step, err)
		}
		return jobs, next
	}
	same := func(step string, got, want []queue.KeptJob) {
		t.Helper()
		if d := cmp.Diff(want, got, cmpopts.EquateEmpty(), cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })); d != "" {
			t.Errorf("%s: ListKept (-want +got):\n%s", step, d)
		}
	}
	all, next := list("all at once", queue.KeptCursor{}, queue.MaxKeptList)
	same("all at once", all, newest)
	if !next.IsZero() {
		t.Errorf("all at once: next = %v, want none", next)
	}
	// In pages of 3 (the first cut between c and d, which ended at once)
	// and of 1, through the cursor's text as a URL carries it.
	for _, size := range []int{3, 1, 2} {
		var got []queue.KeptJob
		from := queue.KeptCursor{}
		for pages := 0; ; pages++ {
			if pages > len(newest) {
				t.Fatalf("pages of %d: more pages than jobs", size)
			}
			jobs, next := list(fmt.Sprintf("a page of %d", size), from, size)
			if len(jobs) > size || len(jobs) == 0 {
				t.Errorf("a page of %d has %d jobs", size, len(jobs))
			}
			got = append(got, jobs...)
			if next.IsZero() {
				break
			}
			c, err := queue.ParseKeptCursor(next.String())
			if err != nil || !c.Until.Equal(next.Until) || c.ID != next.ID {
				t.Fatalf("ParseKeptCursor(%q) = %v %v, want %v", next.String(), c, err, next)
			}
			from = c
		}
		same(fmt.Sprintf("pages of %d", size), got, newest)
	}
	// A tube that keeps nothing, or does not exist, lists nothing.
	for _, name := range []string{"lk-none", "lk-other-none"} {
		if jobs, next, err := e.q.ListKept(e.ctx, name, queue.KeptCursor{}, 10); err != nil || len(jobs) != 0 || !next.IsZero() {
			t.Errorf("ListKept(%s) = %d jobs, next %v, %v; want none", name, len(jobs), next, err)
		}
	}
	// Bad input changes nothing.
	wantErr(t, "ListKept limit 0", listErr(e, tube, queue.KeptCursor{}, 0), queue.ErrInvalid)
	wantErr(t, "ListKept limit too high", listErr(e, tube, queue.KeptCursor{}, queue.MaxKeptList+1), queue.ErrInvalid)
	wantErr(t, "ListKept of a bad tube", listErr(e, "bad tube", queue.KeptCursor{}, 1), queue.ErrInvalidTube)
	wantErr(t, "ListKept from a cursor without an ID", listErr(e, tube, queue.KeptCursor{Until: epoch}, 1), queue.ErrInvalid)
	for _, c := range []string{"x", "1.", ".1", "-5.1", "5.0", "5.1.2"} {
		if _, err := queue.ParseKeptCursor(c); !errors.Is(err, queue.ErrInvalid) {
			t.Errorf("ParseKeptCursor(%q) = %v, want ErrInvalid", c, err)
		}
	}
	// Once a job's time has come it is not listed, dropped yet or not.
	e.advance(10*time.Second - 3*time.Millisecond) // a's and b's time
	all, _ = list("after the first two deadlines", queue.KeptCursor{}, queue.MaxKeptList)
	same("after the first two deadlines", all, newest[:len(newest)-2])
	// A page from a cursor whose job was dropped goes on after it.
	e.dropKept()
	rest, _ := list("from a dropped job's cursor", newest[len(newest)-1].CursorAfter(), queue.MaxKeptList)
	same("from a dropped job's cursor", rest, nil)
	rest, _ = list("from the cursor of a job still kept", newest[0].CursorAfter(), queue.MaxKeptList)
	same("from the cursor of a job still kept", rest, newest[1:len(newest)-2])
}

func listErr(e *env, tube string, from queue.KeptCursor, limit int) error {
	_, _, err := e.q.ListKept(e.ctx, tube, from, limit)
	return err
}
