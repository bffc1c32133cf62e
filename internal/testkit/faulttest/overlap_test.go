package faulttest

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/internal/testkit/redistest"
	"github.com/hourglass-io/hourglass/redisstore"
	"github.com/hourglass-io/hourglass/schedule"
)

// overlapCITicks is how many ticks TestScheduleOverlapFourServers fires
// for each policy; BenchmarkScheduleOverlapFourServers fires 1,000.
const overlapCITicks = 100

// TestScheduleOverlapFourServers runs, for each of allow, skip and
// buffer_one, four processes on one standalone Redis, each a schedule
// Client and a worker whose jobs take 150 ms, on one "@every 100ms"
// schedule for 100 ticks (the three policies at once, each on a prefix of
// its own). skip: never two of the schedule's jobs reserved at once, and
// every tick fired or counted skipped; buffer_one: never two reserved at
// once either (the job put behind the running one is held until it
// ends), never more than one job waiting, every tick fired or skipped;
// allow: every tick fired.
func TestScheduleOverlapFourServers(t *testing.T) {
	for _, o := range []schedule.Overlap{schedule.OverlapAllow, schedule.OverlapSkip, schedule.OverlapBufferOne} {
		t.Run(o.String(), func(t *testing.T) {
			t.Parallel()
			r := runOverlap(t, o, overlapCITicks)
			r.check(t)
			t.Log(r)
		})
	}
}

// BenchmarkScheduleOverlapFourServers is the test's run at full length:
// 1,000 ticks (100 s) for each policy, one after another:
//
//	go test -run XXX -bench ScheduleOverlapFourServers -benchtime 1x ./internal/testkit/faulttest/
func BenchmarkScheduleOverlapFourServers(b *testing.B) {
	for _, o := range []schedule.Overlap{schedule.OverlapAllow, schedule.OverlapSkip, schedule.OverlapBufferOne} {
		b.Run(o.String(), func(b *testing.B) {
			for range b.N {
				r := runOverlap(b, o, 1000)
				r.check(b)
				b.Log(r)
				b.ReportMetric(float64(r.ticks), "ticks")
				b.ReportMetric(float64(r.fires), "fires")
				b.ReportMetric(float64(r.skips), "skips")
				b.ReportMetric(float64(r.overlapMoments), "moments-2-reserved")
				b.ReportMetric(float64(r.maxWaiting), "max-waiting")
			}
		})
	}
}

type overlapResult struct {
	policy                       schedule.Overlap
	ticks                        int    // ticks from the start to the pause
	fires, skips, misfires       uint64 // the schedule's counts
	jobs                         int    // fires the processes reported
	perProcess                   []int  // fires per process
	maxReserved, overlapMoments  int    // from the processes' reserve/delete lines
	maxWaiting                   int    // from the fires' puts and the reserves
	sampledReserved, sampledWait int64  // the most the tube's stats showed
}

func (r overlapResult) String() string {
	return fmt.Sprintf("%s: %d ticks: %d fired, %d skipped, %d misfires (jobs reported %d, per process %v); "+
		"most reserved at once %d (moments with two or more: %d), most waiting %d; sampled every 5 ms: reserved %d, waiting %d",
		r.policy, r.ticks, r.fires, r.skips, r.misfires, r.jobs, r.perProcess, r.maxReserved, r.overlapMoments, r.maxWaiting,
		r.sampledReserved, r.sampledWait)
}

func (r overlapResult) check(t testing.TB) {
	t.Helper()
	if r.fires+r.skips != uint64(r.ticks) || r.misfires != 0 || r.jobs != int(r.fires) {
		t.Errorf("%v: every tick must be fired or counted skipped, once", r)
	}
	switch r.policy {
	case schedule.OverlapAllow:
		if r.skips != 0 {
			t.Errorf("%v: allow skipped ticks", r)
		}
	case schedule.OverlapSkip:
		if r.overlapMoments != 0 || r.sampledReserved > 1 {
			t.Errorf("%v: skip had two jobs reserved at once", r)
		}
	case schedule.OverlapBufferOne:
		if r.maxWaiting > 1 || r.sampledWait > 1 {
			t.Errorf("%v: buffer_one had more than one job waiting", r)
		}
		if r.overlapMoments != 0 || r.sampledReserved > 1 {
			t.Errorf("%v: buffer_one had two jobs reserved at once", r)
		}
	}
}

func runOverlap(t testing.TB, o schedule.Overlap, ticks int) overlapResult {
	const every, work = 100 * time.Millisecond, 150 * time.Millisecond
	span := time.Duration(ticks) * every
	ctx := deadline(t, span+2*time.Minute)
	c := redistest.StandaloneClient(t)
	prefix := redistest.Prefix(t)
	q := openQueue(t, ctx, c, &redisstore.Options{Prefix: prefix})
	s, err := redisstore.New(ctx, c, &redisstore.Options{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	sc, err := schedule.New(s.Schedules(), nil)
	if err != nil {
		t.Fatal(err)
	}
	procs := make([]*child, 4)
	for i := range procs {
		procs[i] = startChild(t, "overlap", "HG_ADDR="+c.Options().Addr, "HG_PREFIX="+prefix, "HG_TUBE=work", "HG_WORK="+work.String())
	}
	for _, p := range procs {
		p.next(t, "ready", 30*time.Second)
	}
	start := time.Now().Truncate(every).Add(time.Second)
	const name = "overlap"
	if _, err := sc.Set(ctx, schedule.Schedule{
		Name: name, Spec: "@every 100ms", Start: start, Overlap: o,
		Job: schedule.Job{Tube: "work", Body: []byte("w")},
	}); err != nil {
		t.Fatal(err)
	}

	// Sample the tube while the schedule runs.
	var r overlapResult
	r.policy = o
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tk := time.NewTicker(5 * time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tk.C:
			}
			st, err := q.StatsTube(ctx, "work")
			if err != nil {
				continue // the tube is gone while empty
			}
			r.sampledReserved = max(r.sampledReserved, st.Reserved)
			r.sampledWait = max(r.sampledWait, st.Ready+st.Delayed)
		}
	})
	<-time.After(time.Until(start.Add(span - every/2)))
	pst, err := sc.Pause(ctx, name)
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range procs {
		_ = p.cmd.Process.Kill()
		p.wait(t, 10*time.Second)
	}
	st, err := sc.Get(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	r.ticks = int(pst.Next.Sub(start) / every)
	r.fires, r.skips, r.misfires = st.Fires, st.Skips, st.Misfires

	// The processes' lines: puts, reserves, deletes.
	type ev struct {
		at    int64
		delta int
	}
	var held, waiting []ev
	for _, p := range procs {
		n := 0
		for l := range p.lines {
			f := strings.Fields(l)
			if len(f) < 3 {
				continue
			}
			var ts []int64
			for _, v := range f[2:] {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					t.Fatalf("line %q", l)
				}
				ts = append(ts, n)
			}
			at := ts[0]
			if f[0] == "r" && len(ts) != 2 {
				t.Fatalf("line %q", l)
			}
			switch f[0] {
			case "fire":
				n++
				waiting = append(waiting, ev{at, 1})
			case "r":
				// Held from when the worker has it (it runs the job from
				// then to its "d"); no longer waiting from when the store
				// reserved it, which a fire that put a job behind it
				// follows, though the worker's line may come after the
				// fire's.
				held = append(held, ev{at, 1})
				waiting = append(waiting, ev{ts[1], -1})
			case "d":
				held = append(held, ev{at, -1})
			}
		}
		r.perProcess = append(r.perProcess, n)
		r.jobs += n
	}
	sweep := func(evs []ev) (most, moments int) {
		// At one instant the ends come before the starts.
		slices.SortFunc(evs, func(a, b ev) int { return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.delta, b.delta)) })
		n := 0
		for _, e := range evs {
			n += e.delta
			if n == 2 && e.delta > 0 {
				moments++
			}
			most = max(most, n)
		}
		return most, moments
	}
	r.maxReserved, r.overlapMoments = sweep(held)
	r.maxWaiting, _ = sweep(waiting)
	return r
}
