package redisstore_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/internal/testkit/redistest"
	"github.com/hourglass-io/hourglass/internal/testkit/storetest"
	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/redisstore"
	"github.com/redis/go-redis/v9"
)

// TestCommandBudgets counts the Redis commands each queue operation runs
// inside its function call (INFO commandstats on a server of its own, one
// caller, so no calls merge) and fails when one runs more than its
// budget: a count does not move with the machine's load, so a change that
// makes a hot path dearer fails here, whatever the timings say. The
// budgets, and why each is what it is, are in docs/redis-data-model.md
// ("Command budgets"). The store runs on an injected clock, so the counts
// leave out the one TIME each call makes in production.
func TestCommandBudgets(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Standalone(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	clock := storetest.NewClock(time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC))
	s, err := redisstore.New(ctx, c, &redisstore.Options{Clock: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	body := []byte(strings.Repeat("b", 100))

	// count runs f and returns the commands run inside function calls,
	// by name, and the number of function calls.
	count := func(f func()) (map[string]int, int) {
		t.Helper()
		if err := c.ConfigResetStat(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		f()
		cmds, fcalls := map[string]int{}, 0
		for name, st := range commandStats(t, c) {
			switch {
			case name == "fcall":
				fcalls = int(st.calls)
			case name == "info" || strings.HasPrefix(name, "config") || name == "hello" || strings.HasPrefix(name, "client") || name == "ping":
			default:
				cmds[name] = int(st.calls)
			}
		}
		return cmds, fcalls
	}
	sum := func(m map[string]int) int {
		n := 0
		for _, v := range m {
			n += v
		}
		return n
	}
	show := func(m map[string]int) string {
		var parts []string
		for k, v := range m {
			parts = append(parts, fmt.Sprintf("%s %d", k, v))
		}
		sort.Strings(parts)
		return strings.Join(parts, ", ")
	}
	put := func(tube string, delay time.Duration) queue.ID {
		t.Helper()
		res, err := s.Put(ctx, tube, []queue.NewJob{{Body: body, TTR: time.Minute, Delay: delay}})
		if err != nil {
			t.Fatal(err)
		}
		return res[0].ID
	}
	reserve := func(tube string, max int) []queue.Job {
		t.Helper()
		res, err := s.Reserve(ctx, queue.ReserveRequest{Owner: "w", Tubes: []string{tube}, Max: max})
		if err != nil {
			t.Fatal(err)
		}
		return res.Jobs
	}
	const jobs = 50

	// Each case: the operation, done jobs times (per call) or once over
	// jobs jobs (per job), and its budget of commands.
	type budget struct {
		name    string
		prepare func()
		op      func()
		per     int // what the count is divided by
		max     float64
	}
	var held []queue.ID
	cases := []budget{
		{"put, ready, one job a call", func() { put("b", 0) }, func() {
			for range jobs {
				put("b", 0)
			}
		}, jobs, 6},
		{"put, delayed, one job a call", func() { put("bd", time.Hour) }, func() {
			for range jobs {
				put("bd", time.Hour)
			}
		}, jobs, 8},
		{"reserve, one job a call", nil, func() {
			for range jobs {
				held = append(held, reserve("b", 1)[0].ID)
			}
		}, jobs, 9},
		{"delete of a reserved job, one a call", nil, func() {
			for _, id := range held {
				if _, err := s.Delete(ctx, "w", []queue.ID{id}); err != nil {
					t.Fatal(err)
				}
			}
		}, jobs, 6},
		{"promotion of 1 due job, in the reserve that finds it", func() {
			put("bp1", time.Second)
			clock.Advance(time.Second)
		}, func() { reserve("bp1", 1) }, 1, 13},
		{"promotion of 50 due jobs, in the reserve that finds them", func() {
			for range jobs {
				put("bp", time.Second)
			}
			clock.Advance(time.Second)
		}, func() { reserve("bp", 1) }, 1, 13},
	}
	for _, bc := range cases {
		if bc.prepare != nil {
			bc.prepare()
		}
		cmds, fcalls := count(bc.op)
		per := float64(sum(cmds)) / float64(bc.per)
		t.Logf("%s: %.2f commands (%d function calls): %s", bc.name, per, fcalls, show(cmds))
		if per > bc.max {
			t.Errorf("%s: %.2f commands, budget %.0f: %s", bc.name, per, bc.max, show(cmds))
		}
	}

	// No transition rewrites a job's record: after a reserve, a touch, a
	// release with a new priority and a delay, a promotion, a timeout and a
	// bury, every job's record is byte for byte what its put wrote.
	records := func() map[string]string {
		t.Helper()
		out := map[string]string{}
		it := c.Scan(ctx, 0, "*:j", 100).Iterator()
		for it.Next(ctx) {
			m, err := c.HGetAll(ctx, it.Val()).Result()
			if err != nil {
				t.Fatal(err)
			}
			for f, v := range m {
				if len(f) == 14 { // a job's ID: its record
					out[it.Val()+" "+f] = v
				}
			}
		}
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	id := put("rw", 0)
	before := records()
	if j := reserve("rw", 1); len(j) != 1 || j[0].ID != id {
		t.Fatalf("reserve: %v", j)
	}
	if _, err := s.Touch(ctx, "w", id); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx, "w", id, 7, time.Second, "try again"); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second)
	reserve("rw", 1)           // promotes and reserves it
	clock.Advance(time.Minute) // its TTR runs out
	reserve("rw", 1)           // times out and reserves it again
	if err := s.Bury(ctx, "w", id, 9, "no"); err != nil {
		t.Fatal(err)
	}
	after := records()
	for k, v := range before {
		if after[k] != v {
			t.Errorf("record %s rewritten:\n before %q\n after  %q", k, v, after[k])
		}
	}
	st, err := s.StatsJob(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != queue.Buried || st.Priority != 9 || st.Reserves != 3 || st.Timeouts != 1 || st.Releases != 1 || st.Buries != 1 || st.LastError != "no" {
		t.Errorf("stats after the transitions: %+v", st)
	}
}
