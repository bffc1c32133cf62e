package faulttest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/internal/testkit/redistest"
	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/redisstore"
	"github.com/hourglass-io/hourglass/schedule"
	"github.com/redis/go-redis/v9"
)

// scheduleSpan is how long the processes fire the schedule.
const scheduleSpan = 60 * time.Second

// TestScheduleFourProcesses runs four processes firing one "@every 100ms"
// schedule for a minute, one of them killed
// (SIGKILL) a third of the way in and replaced two seconds later. Every
// tick from the start to the last one fired must have exactly one job: the
// tube holds as many jobs as ticks, the schedule counts as many fires and
// no misfire, and a put of each tick's key finds its job. A second
// schedule paused for a second mid-run fires every tick but those that
// passed while it was paused.
func TestScheduleFourProcesses(t *testing.T) {
	topologies := []struct {
		name string
		env  func(t *testing.T) (redis.UniversalClient, string)
	}{
		{"standalone", func(t *testing.T) (redis.UniversalClient, string) {
			c := redistest.StandaloneClient(t)
			return c, "HG_ADDR=" + c.Options().Addr
		}},
		{"cluster", func(t *testing.T) (redis.UniversalClient, string) {
			c := redistest.ClusterClient(t)
			return c, "HG_CLUSTER=" + strings.Join(c.Options().Addrs, ",")
		}},
	}
	for _, topo := range topologies {
		t.Run(topo.name, func(t *testing.T) {
			t.Parallel()
			ctx := deadline(t, scheduleSpan+time.Minute)
			c, addr := topo.env(t)
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

			start := time.Now().Truncate(time.Second).Add(3 * time.Second)
			const name, every = "every100", 100 * time.Millisecond
			if _, err := sc.Set(ctx, schedule.Schedule{
				Name: name, Spec: "@every 100ms", Start: start,
				Misfire: schedule.CatchUp(1000), Job: schedule.Job{Tube: "ticks", Body: []byte("t")},
			}); err != nil {
				t.Fatal(err)
			}
			// A second schedule, paused and resumed mid-run: the ticks that
			// pass while it is paused must not fire, and the first after the
			// resume is the store's next tick, not a burst.
			const paused = "paused100"
			if _, err := sc.Set(ctx, schedule.Schedule{
				Name: paused, Spec: "@every 100ms", Start: start,
				Misfire: schedule.CatchUp(1000), Job: schedule.Job{Tube: "pticks", Body: []byte("p")},
			}); err != nil {
				t.Fatal(err)
			}
			procs := make([]*child, 4)
			for i := range procs {
				procs[i] = startChild(t, "scheduler", addr, "HG_PREFIX="+prefix)
			}
			for _, p := range procs {
				p.next(t, "ready", 30*time.Second)
			}

			// Kill process 1 a third of the way in, start another two
			// seconds later.
			<-time.After(time.Until(start.Add(scheduleSpan / 3)))
			if err := procs[1].cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			procs[1].wait(t, 10*time.Second)
			<-time.After(2 * time.Second)
			procs = append(procs, startChild(t, "scheduler", addr, "HG_PREFIX="+prefix))
			procs[len(procs)-1].next(t, "ready", 30*time.Second)

			<-time.After(time.Until(start.Add(scheduleSpan / 2)))
			pst, err := sc.Pause(ctx, paused)
			if err != nil {
				t.Fatal(err)
			}
			<-time.After(time.Second)
			rst, err := sc.Resume(ctx, paused)
			if err != nil {
				t.Fatal(err)
			}
			if gap := rst.Next.Sub(pst.Next); gap < 900*time.Millisecond {
				t.Fatalf("paused with next tick %v, resumed a second later with next tick %v", pst.Next, rst.Next)
			}

			// At the end, pause the schedule and stop every process, so that
			// nothing fires while the tube and the schedule are read.
			<-time.After(time.Until(start.Add(scheduleSpan)))
			if _, err := sc.Pause(ctx, name); err != nil {
				t.Fatal(err)
			}
			if _, err := sc.Pause(ctx, paused); err != nil {
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
			if len(st.Last) == 0 {
				t.Fatal("no tick fired")
			}
			last := st.Last[0].Tick
			if last.Before(start.Add(scheduleSpan - time.Second)) {
				t.Fatalf("the last tick fired is %v, more than a second before the end %v", last, start.Add(scheduleSpan))
			}
			ticks := int(last.Sub(start)/every) + 1
			ts, err := q.StatsTube(ctx, "ticks")
			if err != nil {
				t.Fatal(err)
			}
			if ts.Ready != int64(ticks) || st.Fires != uint64(ticks) || st.Misfires != 0 {
				t.Fatalf("%d ticks from %v to %v: the tube holds %d jobs, the schedule counts %d fires and %d misfires",
					ticks, start.Format(time.TimeOnly), last.Format(time.TimeOnly+".000"), ts.Ready, st.Fires, st.Misfires)
			}
			probe := make([]queue.NewJob, ticks)
			for i := range probe {
				probe[i] = queue.NewJob{Body: []byte("probe"), UniqueKey: schedule.JobKey(name, start.Add(time.Duration(i)*every))}
			}
			res, err := q.PutMany(ctx, "ticks", probe)
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range res {
				if !r.Duplicate {
					t.Errorf("tick %v had no job", start.Add(time.Duration(i)*every).Format(time.TimeOnly+".000"))
				}
			}

			// The paused schedule: every tick before the pause and from the
			// resume on fired once, none between.
			pst2, err := sc.Get(ctx, paused)
			if err != nil || len(pst2.Last) == 0 {
				t.Fatalf("the paused schedule: %+v %v", pst2, err)
			}
			var pprobe []queue.NewJob
			var firedTicks int
			for tick := start; !tick.After(pst2.Last[0].Tick); tick = tick.Add(every) {
				pprobe = append(pprobe, queue.NewJob{Body: []byte("probe"), UniqueKey: schedule.JobKey(paused, tick)})
				if tick.Before(pst.Next) || !tick.Before(rst.Next) {
					firedTicks++
				}
			}
			if pst2.Fires != uint64(firedTicks) {
				t.Errorf("the paused schedule counts %d fires, want %d (before %v and from %v)", pst2.Fires, firedTicks,
					pst.Next.Format(time.TimeOnly+".000"), rst.Next.Format(time.TimeOnly+".000"))
			}
			pres, err := q.PutMany(ctx, "pticks", pprobe)
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range pres {
				tick := start.Add(time.Duration(i) * every)
				if want := tick.Before(pst.Next) || !tick.Before(rst.Next); r.Duplicate != want {
					t.Errorf("paused schedule, tick %v: fired %v, want %v", tick.Format(time.TimeOnly+".000"), r.Duplicate, want)
				}
			}

			fired := make([]string, len(procs))
			for i, p := range procs {
				n := 0
				for l := range p.lines {
					if strings.HasPrefix(l, "fire ") {
						n++
					}
				}
				fired[i] = fmt.Sprint(n)
			}
			t.Logf("%d ticks, each put once; fires per process (the killed one, its replacement last): %s",
				ticks, strings.Join(fired, " "))
		})
	}
}
