package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/ratelimit"
)

// TestGroupRateStateExpires: a tube grouped by customer whose every
// customer comes once keeps no state for them once their rate is whole
// again. 10,000 one-off groups under a template of one reserve per 2 s
// each leave their rate states (keys lt:<group>, and no field lt: in the
// tag's m), which are then gone, and the server's used_memory back within
// 64 KiB of its level before them, within the period and a few seconds of
// Redis's expiry cycle (waited for with a deadline, not slept).
// BenchmarkGroupRateState runs the same at 1,000,000.
func TestGroupRateStateExpires(t *testing.T) {
	const n, bound = 10_000, 64 << 10
	st := groupRateState(t, n, 2*time.Second, 8)
	t.Logf("%d one-off groups: %d rate states after the last (peak %d bytes over the level before), back within %d bytes %v after the last charge (%d bytes over)",
		n, st.keysAfter, st.peak, bound, st.back.Round(time.Millisecond), st.final)
	if st.keysAfter == 0 {
		t.Fatal("no group rate state right after the groups were served: the test measures nothing")
	}
	if st.final > bound {
		t.Fatalf("used_memory %d bytes over its level before the groups, want at most %d", st.final, bound)
	}
}

// BenchmarkGroupRateState measures what 1,000,000 one-off groups leave on
// Redis: put, reserve and delete one job in each of 1,000,000 groups of a
// tube whose template allows one reserve per minute per group, 8 callers
// at once, on a redis-server of its own; then waits until the groups'
// rate states are gone and used_memory is back within 64 KiB of its level
// before. Reports the Redis CPU per group served (INFO cpu), the states
// and bytes over the level before right after the last group, the bytes
// per state, how long after the last charge memory was back, and the
// Redis CPU spent meanwhile (expiring the states) per group.
//
//	go test -run '^$' -bench GroupRateState -benchtime 1x -timeout 30m ./redisstore/
func BenchmarkGroupRateState(b *testing.B) {
	for b.Loop() {
		st := groupRateState(b, 1_000_000, time.Minute, 8)
		b.ReportMetric(st.cpuLoad*1e6, "redis-cpu-µs/group")
		b.ReportMetric(float64(st.keysAfter), "states-after")
		b.ReportMetric(float64(st.peak), "peak-bytes")
		b.ReportMetric(float64(st.peak)/max(float64(st.keysAfter), 1), "bytes/state")
		b.ReportMetric(st.back.Seconds(), "s-until-back")
		b.ReportMetric(float64(st.final), "final-bytes")
		b.ReportMetric(st.cpuExpire*1e6, "redis-cpu-µs/group-expiry")
	}
}

type rateStateRun struct {
	keysAfter       int   // group rate states right after the last group was served
	peak, final     int64 // used_memory over the level before: right after, and once back
	back            time.Duration
	cpuLoad         float64 // Redis CPU s per group served, over the whole load
	cpuExpire       float64 // Redis CPU s per group from the last charge until back
	serveTime, wait time.Duration
}

// groupRateState serves one job in each of n groups of tube "cust" (group
// template: one reserve per period), from callers at once, on a server of
// its own, and waits (deadline: period + 60 s) until no group rate state
// is left and used_memory is back within 64 KiB of its level before.
func groupRateState(tb testing.TB, n int, period time.Duration, callers int) rateStateRun {
	tb.Helper()
	ctx := context.Background()
	_, c, q := ownServer(tb, nil)
	err := q.SetLimits(ctx, "cust", queue.Limits{Group: queue.GroupLimits{Rate: ratelimit.Limit{Events: 1, Per: period, Burst: 1}}})
	if err != nil {
		tb.Fatal(err)
	}
	// A first round, gone before the level is read, so that what any
	// first call allocates counts in the level.
	serveGroups(tb, q, "w", 0, 200, 1)
	waitGone(tb, c, period+60*time.Second, 1<<62)
	base := usedMemory(tb, c)

	var run rateStateRun
	cpu0 := serverCPU(tb, c)
	start := time.Now()
	serveGroups(tb, q, "c", 0, n, callers)
	last := time.Now()
	run.serveTime = last.Sub(start)
	cpu1 := serverCPU(tb, c)
	run.cpuLoad = (cpu1 - cpu0) / float64(n)
	run.keysAfter = rateStates(tb, c)
	run.peak = usedMemory(tb, c) - base
	run.final = waitGone(tb, c, period+60*time.Second, base+64<<10) - base
	run.back = time.Since(last)
	run.cpuExpire = (serverCPU(tb, c) - cpu1) / float64(n)
	return run
}

// serveGroups puts, reserves and deletes one job in each of the groups
// <prefix><first>..<prefix><first+n-1> of tube "cust", 100 a round, from
// callers goroutines at once.
func serveGroups(tb testing.TB, q *queue.Queue, prefix string, first, n, callers int) {
	tb.Helper()
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for w := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			jobs := make([]queue.NewJob, 100)
			for lo := first + w*100; lo < first+n; lo += callers * 100 {
				k := min(100, first+n-lo)
				for i := range k {
					jobs[i] = queue.NewJob{Body: []byte("x"), TTR: time.Minute, Group: prefix + strconv.Itoa(lo+i)}
				}
				if _, err := q.PutMany(ctx, "cust", jobs[:k]); err != nil {
					errs <- err
					return
				}
				// The reserves of the callers share the tube's turns: each
				// takes what it finds and deletes it.
				got, err := q.ReserveN(ctx, k, queue.ReserveOptions{Tubes: []string{"cust"}, Timeout: -1})
				if err != nil {
					errs <- err
					return
				}
				ids := make([]queue.ID, len(got))
				for i, j := range got {
					ids[i] = j.ID
				}
				if len(ids) > 0 {
					if _, err := q.DeleteMany(ctx, ids); err != nil {
						errs <- err
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		tb.Fatal(err)
	}
	// What a caller's reserve left to another's is taken now.
	for {
		got, err := q.ReserveN(ctx, 100, queue.ReserveOptions{Tubes: []string{"cust"}, Timeout: -1})
		if err != nil && !errors.Is(err, queue.ErrTimeout) {
			tb.Fatal(err)
		}
		if len(got) == 0 {
			break
		}
		ids := make([]queue.ID, len(got))
		for i, j := range got {
			ids[i] = j.ID
		}
		if _, err := q.DeleteMany(ctx, ids); err != nil {
			tb.Fatal(err)
		}
	}
}

// rateStates counts the group rate states on the server (a server of the
// test's own): the keys with an expiry (INFO keyspace; lt:<group> are the
// only ones a queue sets) and, as an earlier layout kept them, the fields
// lt:<tube;group> of the tags' m.
func rateStates(tb testing.TB, c *redis.Client) int {
	tb.Helper()
	ctx := context.Background()
	info, err := c.Info(ctx, "keyspace").Result()
	if err != nil {
		tb.Fatal(err)
	}
	n := 0
	for line := range strings.SplitSeq(info, "\r\n") {
		if _, v, ok := strings.Cut(line, "expires="); ok {
			v, _, _ = strings.Cut(v, ",")
			e, _ := strconv.Atoi(v)
			n += e
		}
	}
	for _, m := range tagHashes(tb, c) {
		fi, f := c.HScan(ctx, m, 0, "lt:*;*", 1000).Iterator(), 0
		for fi.Next(ctx) {
			f++ // a field, then its value
		}
		if err := fi.Err(); err != nil {
			tb.Fatal(err)
		}
		n += f / 2
	}
	return n
}

// tagHashes returns the names of the tags' m hashes, read once a server
// (a SCAN of every key would cost the server more than what it measures).
var tagHashesOf sync.Map // *redis.Client -> []string

func tagHashes(tb testing.TB, c *redis.Client) []string {
	if v, ok := tagHashesOf.Load(c); ok {
		return v.([]string)
	}
	var ms []string
	iter := c.Scan(context.Background(), 0, "*:m", 1000).Iterator()
	for iter.Next(context.Background()) {
		ms = append(ms, iter.Val())
	}
	if err := iter.Err(); err != nil {
		tb.Fatal(err)
	}
	tagHashesOf.Store(c, ms)
	return ms
}

// waitGone waits, up to d, until no group rate state is left and
// used_memory is at most limit, and returns used_memory then.
func waitGone(tb testing.TB, c *redis.Client, d time.Duration, limit int64) int64 {
	tb.Helper()
	deadline := time.Now().Add(d)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		keys, mem := rateStates(tb, c), usedMemory(tb, c)
		if keys == 0 && mem <= limit {
			return mem
		}
		if time.Now().After(deadline) {
			tb.Fatal(fmt.Sprintf("after %v: %d group rate states left, used_memory %d (want at most %d)", d, keys, mem, limit))
		}
		<-tick.C
	}
}
