package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/internal/testkit/redistest"
	"github.com/hourglass-io/hourglass/internal/testkit/storetest"
	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/redisstore"
	"github.com/hourglass-io/hourglass/schedule"
)

func TestScheduleConformance(t *testing.T) {
	for _, topo := range topologies {
		t.Run(topo.name, func(t *testing.T) {
			c := topo.client(t)
			storetest.Schedule(t, func(t *testing.T, clock *storetest.Clock) (schedule.Store, queue.Store) {
				s := newStore(t, c, &redisstore.Options{Clock: clock.Now})
				return s.Schedules(), s
			})
		})
	}
}

// Four stores, each with its own clock and Client, run one "@every 100ms"
// schedule: every tick is put exactly once and none is missing, also while
// one of them is stopped and restarted and with their clocks ±5 s apart.
func TestScheduleExactlyOnceAcrossProcesses(t *testing.T) {
	cases := []struct {
		name    string
		skew    [4]time.Duration
		restart bool
	}{
		{"plain", [4]time.Duration{}, false},
		{"restart", [4]time.Duration{}, true},
		{"skew", [4]time.Duration{0, 5 * time.Second, -5 * time.Second, 2 * time.Second}, false},
	}
	for _, topo := range topologies {
		t.Run(topo.name, func(t *testing.T) {
			c := topo.client(t)
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					prefix := redistest.Prefix(t)
					var (
						mu    sync.Mutex
						ticks = map[time.Time]int{}
					)
					onFire := func(_ string, f schedule.Fire) {
						mu.Lock()
						ticks[f.Tick]++
						mu.Unlock()
					}
					stores := make([]*redisstore.Store, 4)
					clients := make([]*schedule.Client, 4)
					for i := range stores {
						skew := tc.skew[i]
						now := func() time.Time { return time.Now().Add(skew) }
						s, err := redisstore.New(t.Context(), c, &redisstore.Options{Prefix: prefix, Clock: now})
						if err != nil {
							t.Fatal(err)
						}
						t.Cleanup(func() { s.Close() })
						stores[i] = s
						clients[i], err = schedule.New(s.Schedules(), &schedule.Options{OnFire: onFire, PollInterval: 50 * time.Millisecond})
						if err != nil {
							t.Fatal(err)
						}
					}
					start := time.Now().Truncate(time.Second).Add(time.Second)
					st, err := clients[0].Set(t.Context(), schedule.Schedule{
						Name: "every100", Spec: "@every 100ms", Start: start,
						Misfire: schedule.CatchUp(1000), Job: schedule.Job{Tube: "ticks", Body: []byte("t")},
					})
					if err != nil {
						t.Fatal(err)
					}
					run := func(ctx context.Context, c *schedule.Client) chan error {
						done := make(chan error, 1)
						go func() { done <- c.Run(ctx) }()
						return done
					}
					ctx, cancel := context.WithCancel(t.Context())
					stopCtx, stop := context.WithCancel(ctx) // client 1's, in the restart case
					defer stop()
					dones := make([]chan error, 4)
					for i, cl := range clients {
						if i == 1 && tc.restart {
							dones[i] = run(stopCtx, cl)
							continue
						}
						dones[i] = run(ctx, cl)
					}
					deadline := time.Now().Add(2 * time.Second)
					if tc.restart {
						// Stop process 1 half a second after the first tick and
						// start a new one (a new store and Client) half a second later.
						<-time.After(time.Until(start.Add(500 * time.Millisecond)))
						stop()
						<-dones[1]
						stores[1].Close()
						<-time.After(500 * time.Millisecond)
						s, err := redisstore.New(t.Context(), c, &redisstore.Options{Prefix: prefix, Clock: time.Now})
						if err != nil {
							t.Fatal(err)
						}
						t.Cleanup(func() { s.Close() })
						cl, _ := schedule.New(s.Schedules(), &schedule.Options{OnFire: onFire, PollInterval: 50 * time.Millisecond})
						dones[1] = run(ctx, cl)
					}
					<-time.After(time.Until(deadline))
					cancel()
					for _, d := range dones {
						<-d
					}
					final, err := clients[0].Get(t.Context(), "every100")
					if err != nil {
						t.Fatal(err)
					}
					res, err := stores[0].Reserve(t.Context(), queue.ReserveRequest{Owner: "t", Tubes: []string{"ticks"}, Max: 10000})
					if err != nil {
						t.Fatal(err)
					}
					n := int(final.Fires)
					if n < 8 {
						t.Fatalf("only %d fires in 2 s", n)
					}
					if len(res.Jobs) != n || final.Misfires != 0 {
						t.Fatalf("%d jobs, %d fires, %d misfires", len(res.Jobs), n, final.Misfires)
					}
					if want := st.Next.Add(time.Duration(n) * 100 * time.Millisecond); !final.Next.Equal(want) {
						t.Fatalf("next %v after %d fires from %v, want %v: a tick was skipped", final.Next, n, st.Next, want)
					}
					mu.Lock()
					defer mu.Unlock()
					if len(ticks) != n {
						t.Fatalf("%d distinct ticks reported, %d fires", len(ticks), n)
					}
					for i := range n {
						tick := st.Next.Add(time.Duration(i) * 100 * time.Millisecond)
						if ticks[tick] != 1 {
							t.Fatalf("tick %v fired %d times", tick, ticks[tick])
						}
					}
				})
			}
		})
	}
}

// A running Client with a long PollInterval fires a schedule that another
// process sets while it waits: the store's announcement wakes it.
func TestScheduleRunWokenByOtherProcess(t *testing.T) {
	for _, topo := range topologies {
		t.Run(topo.name, func(t *testing.T) {
			c := topo.client(t)
			prefix := redistest.Prefix(t)
			open := func() *redisstore.Store {
				s, err := redisstore.New(t.Context(), c, &redisstore.Options{Prefix: prefix})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close() })
				return s
			}
			fired := make(chan schedule.Fire, 1)
			runner, _ := schedule.New(open().Schedules(), &schedule.Options{PollInterval: time.Hour, OnFire: func(_ string, f schedule.Fire) {
				select {
				case fired <- f:
				default:
				}
			}})
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan error, 1)
			go func() { done <- runner.Run(ctx) }()
			defer func() { cancel(); <-done }()
			other, _ := schedule.New(open().Schedules(), nil)
			// A first schedule fires once, 300 ms from now, then hourly: once
			// it has fired, the runner is subscribed and its timer is an hour away.
			if _, err := other.Set(t.Context(), schedule.Schedule{Name: "first", Spec: "@every 1h", Start: time.Now().Add(300 * time.Millisecond), Job: schedule.Job{Tube: "w"}}); err != nil {
				t.Fatal(err)
			}
			select {
			case <-fired:
			case <-time.After(10 * time.Second):
				t.Fatal("the first schedule did not fire within 10 s")
			}
			if _, err := other.Set(t.Context(), schedule.Schedule{Name: "second", Spec: "@every 50ms", Job: schedule.Job{Tube: "w"}}); err != nil {
				t.Fatal(err)
			}
			select {
			case f := <-fired:
				if f.Tick.Before(time.Now().Add(-10 * time.Second)) {
					t.Fatalf("odd tick %v", f.Tick)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the running Client was not woken within 10 s")
			}
		})
	}
}

// A schedule stored before states kept their tube (no tube in the state)
// still fires when a fire names its tube, refuses a fire naming another,
// and keeps the tube from then on.
func TestScheduleStateWithoutTube(t *testing.T) {
	c := standaloneClient(t)
	prefix := redistest.Prefix(t)
	clock := storetest.NewClock(time.Date(2026, 1, 5, 12, 0, 0, 0, time.UTC))
	s, err := redisstore.New(t.Context(), c, &redisstore.Options{Prefix: prefix, Clock: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	cl, _ := schedule.New(s.Schedules(), nil)
	st, err := cl.Set(t.Context(), schedule.Schedule{Name: "old", Spec: "@every 1m", Job: schedule.Job{Tube: "legacy"}})
	if err != nil {
		t.Fatal(err)
	}
	// Drop the tube from the stored state, as states were written before.
	keys, err := c.Keys(t.Context(), prefix+"*sc").Result()
	if err != nil || len(keys) != 1 {
		t.Fatalf("schedule hashes %v (%v), want one", keys, err)
	}
	const strip = `local st = cmsgpack.unpack(redis.call('HGET', KEYS[1], 's:old'))
local had = st[9]
st[9] = nil
redis.call('HSET', KEYS[1], 's:old', cmsgpack.pack(st))
return had`
	if had, err := c.Eval(t.Context(), strip, keys).Text(); err != nil || had != "legacy" {
		t.Fatalf("the state held tube %q (%v), want legacy", had, err)
	}
	clock.Advance(time.Minute)
	fire := func(tube string) (schedule.FireResult, error) {
		return s.Schedules().Fire(t.Context(), schedule.FireRequest{Name: "old", Tube: tube, Version: st.Version, Next: st.Next,
			Tick: st.Next, NewNext: st.Next.Add(time.Minute)})
	}
	if _, err := fire("other"); !errors.Is(err, schedule.ErrNotFound) {
		t.Fatalf("a fire naming another tube: %v, want ErrNotFound", err)
	}
	if res, err := fire("legacy"); err != nil || !res.Fired {
		t.Fatalf("a fire naming its tube: %+v, %v", res, err)
	}
	if tube, err := c.Eval(t.Context(), `return cmsgpack.unpack(redis.call('HGET', KEYS[1], 's:old'))[9]`, keys).Text(); err != nil || tube != "legacy" {
		t.Fatalf("after a fire the state holds tube %q (%v), want legacy", tube, err)
	}
}

// Schedules on many tags, due at once, all fire once when a Client asks
// for fewer than are due per call (each tag asked for its share).
func TestScheduleDueAcrossTags(t *testing.T) {
	for _, topo := range topologies {
		t.Run(topo.name, func(t *testing.T) {
			c := topo.client(t)
			clock := storetest.NewClock(time.Date(2026, 1, 5, 12, 0, 0, 0, time.UTC))
			s := newStore(t, c, &redisstore.Options{Clock: clock.Now})
			fired := map[string]int{}
			cl, _ := schedule.New(s.Schedules(), &schedule.Options{BatchSize: 5, Concurrency: 1,
				OnFire: func(name string, _ schedule.Fire) { fired[name]++ }})
			const n = 40
			for i := range n {
				if _, err := cl.Set(t.Context(), schedule.Schedule{Name: fmt.Sprint("s", i), Spec: "@every 1m",
					Job: schedule.Job{Tube: fmt.Sprint("tube-", i%20)}}); err != nil {
					t.Fatal(err)
				}
			}
			clock.Advance(time.Minute)
			wait, err := cl.FireDue(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if len(fired) != n || wait != time.Minute {
				t.Fatalf("%d schedules fired, the next in %v; want %d and 1m", len(fired), wait, n)
			}
			for name, k := range fired {
				if k != 1 {
					t.Errorf("%s fired %d times", name, k)
				}
			}
		})
	}
}
