package redisstore_test

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/internal/evtrace"
	"github.com/hourglass-io/hourglass/ttlhash"
	"github.com/redis/go-redis/v9"
)

// lagTrace follows every event of a TTLHashLag run through its stages:
// the sweep that expired it (ExpiredAt, on Redis's clock, the time of its
// stream entry too), the wake-up its shard published, the read that took
// it, its handler and the acknowledgement; and every Sweeper pass. It
// reports the percentiles of each stage, and the Redis CPU per expired
// field (INFO cpu before and after).
type lagTrace struct {
	rc      *redis.Client
	cpu0    float64
	proc0   time.Duration // this process's CPU time at the start
	gc0     runtime.MemStats
	mu      sync.Mutex
	wakes   map[int][]time.Time // per shard, when its wake-ups arrived
	batches map[string]*evtrace.Batch
	events  []tracedEvent
	passes  []evtrace.Pass
	stop    func()
}

type tracedEvent struct {
	id                  string
	deadline, expiredAt time.Time
	handled             time.Time
}

func startLagTrace(b *testing.B, rc *redis.Client, hs *ttlhash.Hashes) *lagTrace {
	t := &lagTrace{rc: rc, wakes: map[int][]time.Time{}, batches: map[string]*evtrace.Batch{}}
	stop, err := hs.Store().(ttlhash.Notifier).Listen(context.Background(), ttlhash.TopicEvents, func(topic string) {
		now := time.Now()
		shard, _ := ttlhash.ParseEventShardTopic(topic)
		t.mu.Lock()
		t.wakes[shard] = append(t.wakes[shard], now)
		t.mu.Unlock()
	})
	if err != nil {
		b.Fatal(err)
	}
	t.stop = stop
	evtrace.OnBatch = func(bt evtrace.Batch) {
		t.mu.Lock()
		defer t.mu.Unlock()
		for _, id := range bt.IDs {
			t.batches[id] = &bt
		}
	}
	evtrace.OnPass = func(p evtrace.Pass) {
		t.mu.Lock()
		t.passes = append(t.passes, p)
		t.mu.Unlock()
	}
	b.Cleanup(func() { evtrace.OnBatch, evtrace.OnPass = nil, nil })
	rc.ConfigResetStat(context.Background())
	t.cpu0 = redisCPU(b, rc)
	t.proc0 = processCPU()
	runtime.ReadMemStats(&t.gc0)
	return t
}

// seen is ConsumeTTLHashLag's callback (called under its lock).
func (t *lagTrace) seen(e ttlhash.Event, at time.Time) {
	t.mu.Lock()
	t.events = append(t.events, tracedEvent{id: e.ID, deadline: e.Deadline, expiredAt: e.ExpiredAt, handled: at})
	t.mu.Unlock()
}

// processCPU is this process's user and system CPU time.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// redisCPU is Redis's used_cpu_user + used_cpu_sys, in seconds.
func redisCPU(b *testing.B, rc *redis.Client) float64 {
	info, err := rc.Info(context.Background(), "cpu").Result()
	if err != nil {
		b.Fatal(err)
	}
	var sum float64
	for _, line := range strings.Split(info, "\r\n") {
		for _, k := range []string{"used_cpu_user:", "used_cpu_sys:"} {
			if v, ok := strings.CutPrefix(line, k); ok {
				f, _ := strconv.ParseFloat(v, 64)
				sum += f
			}
		}
	}
	return sum
}

// report logs the stages' percentiles and reports the Redis CPU per
// expired field.
func (t *lagTrace) report(b *testing.B, fields int) {
	var gc runtime.MemStats
	cpu := redisCPU(b, t.rc) - t.cpu0
	proc := processCPU() - t.proc0
	runtime.ReadMemStats(&gc)
	t.stop()
	b.Logf("test process CPU %.1f µs per expired field; %d GCs, %.1f ms of pauses",
		float64(proc.Microseconds())/float64(fields), gc.NumGC-t.gc0.NumGC, float64(gc.PauseTotalNs-t.gc0.PauseTotalNs)/1e6)
	b.ReportMetric(cpu/float64(fields)*1e6, "redis-cpu-µs/field")
	if stats, err := t.rc.Info(context.Background(), "commandstats").Result(); err == nil {
		type cs struct {
			name        string
			calls, usec int64
		}
		var all []cs
		for _, line := range strings.Split(stats, "\r\n") {
			name, rest, ok := strings.Cut(strings.TrimPrefix(line, "cmdstat_"), ":")
			if !ok || !strings.HasPrefix(line, "cmdstat_") {
				continue
			}
			var c cs
			c.name = name
			for _, kv := range strings.Split(rest, ",") {
				k, v, _ := strings.Cut(kv, "=")
				n, _ := strconv.ParseInt(v, 10, 64)
				switch k {
				case "calls":
					c.calls = n
				case "usec":
					c.usec = n
				}
			}
			all = append(all, c)
		}
		slices.SortFunc(all, func(a, b cs) int { return int(b.usec - a.usec) })
		var sb strings.Builder
		for _, c := range all[:min(8, len(all))] {
			fmt.Fprintf(&sb, " %s %d calls %.2f µs/field;", c.name, c.calls, float64(c.usec)/float64(fields))
		}
		b.Logf("Redis CPU %.2f µs per expired field; commands by time:%s", cpu/float64(fields)*1e6, sb.String())
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for s := range t.wakes {
		slices.SortFunc(t.wakes[s], func(a, b time.Time) int { return a.Compare(b) })
	}
	stages := map[string][]time.Duration{}
	order := []string{"expiry (ExpiredAt-Deadline)", "notify (wake-up arrived-ExpiredAt)", "in stream (read began-ExpiredAt)",
		"woken->read began", "read", "handler (handled-read ended)", "ack", "delivery (handled-Deadline)",
		"wake-up arrived->read began", "read ended->handled, woken read", "read ended->handled, read again"}
	add := func(k string, d time.Duration) { stages[k] = append(stages[k], d) }
	acks := map[*evtrace.Batch]bool{}
	for _, e := range t.events {
		add(order[0], e.expiredAt.Sub(e.deadline))
		add(order[7], e.handled.Sub(e.deadline))
		shard, _, _ := strings.Cut(e.id, ":")
		n, _ := strconv.Atoi(shard)
		ws := t.wakes[n]
		var woke time.Time
		if i, _ := slices.BinarySearchFunc(ws, e.expiredAt, func(a, b time.Time) int { return a.Compare(b) }); i < len(ws) {
			add(order[1], ws[i].Sub(e.expiredAt))
			woke = ws[i]
		}
		bt := t.batches[e.id]
		if bt == nil {
			continue
		}
		add(order[2], bt.ReadStart.Sub(e.expiredAt))
		if !woke.IsZero() && !woke.After(bt.ReadStart) {
			add(order[8], bt.ReadStart.Sub(woke))
		}

		add(order[5], e.handled.Sub(bt.ReadEnd))
		if !acks[bt] {
			acks[bt] = true
			if !bt.Woken.IsZero() {
				add(order[3], bt.ReadStart.Sub(bt.Woken))
			}
			add(order[4], bt.ReadEnd.Sub(bt.ReadStart))
			add(order[6], bt.AckEnd.Sub(bt.AckStart))
		}
	}
	pct := func(d []time.Duration) string {
		if len(d) == 0 {
			return "n=0"
		}
		slices.Sort(d)
		p := func(q float64) float64 {
			return float64(d[min(len(d)-1, int(q*float64(len(d))))]) / float64(time.Millisecond)
		}
		return fmt.Sprintf("n=%d p50 %.2f p90 %.2f p99 %.2f max %.2f ms", len(d), p(0.5), p(0.9), p(0.99), p(1))
	}
	for _, k := range order {
		if len(stages[k]) > 0 {
			b.Logf("stage %-36s %s", k, pct(stages[k]))
		}
	}
	var late, dur, looked []time.Duration
	calls := 0
	for _, p := range t.passes {
		looked = append(looked, time.Duration(p.Looked)*time.Millisecond)
		if !p.Planned.IsZero() && !p.Woken.IsZero() {
			late = append(late, p.Woken.Sub(p.Planned))
		}
		dur = append(dur, p.End.Sub(p.Start))
		calls += p.Calls
	}
	// When the late deliveries came: the 100 ms windows (by deadline) with
	// the most deliveries over 25 ms, their phase in the 4,096 ms and 256
	// ms buckets of the wheel, and the GC pauses in them.
	if len(t.events) > 0 {
		t0 := t.events[0].deadline
		for _, e := range t.events {
			if e.deadline.Before(t0) {
				t0 = e.deadline
			}
		}
		type win struct{ late, n int }
		wins := map[int64]*win{}
		for _, e := range t.events {
			k := e.deadline.Sub(t0).Milliseconds() / 100
			w := wins[k]
			if w == nil {
				w = &win{}
				wins[k] = w
			}
			w.n++
			if e.handled.Sub(e.deadline) > 25*time.Millisecond {
				w.late++
			}
		}
		keys := make([]int64, 0, len(wins))
		lateAll := 0
		for k, w := range wins {
			keys = append(keys, k)
			lateAll += w.late
		}
		slices.SortFunc(keys, func(a, c int64) int { return wins[c].late - wins[a].late })
		var sb strings.Builder
		for _, k := range keys[:min(12, len(keys))] {
			if wins[k].late == 0 {
				break
			}
			abs := t0.Add(time.Duration(k) * 100 * time.Millisecond)
			ms := abs.UnixMilli()
			gcs := 0
			for i := range gc.PauseEnd {
				if pe := int64(gc.PauseEnd[i]); pe > 0 && pe >= abs.Add(-50*time.Millisecond).UnixNano() && pe < abs.Add(150*time.Millisecond).UnixNano() {
					gcs++
				}
			}
			fmt.Fprintf(&sb, " [%d ms: %d/%d late, phase %d/4096 %d/256, %d GCs]", k*100, wins[k].late, wins[k].n, ms%4096, ms%256, gcs)
		}
		b.Logf("deliveries over 25 ms: %d in %d of %d windows of 100 ms; the worst:%s", lateAll, func() int {
			c := 0
			for _, w := range wins {
				if w.late > 0 {
					c++
				}
			}
			return c
		}(), len(wins), sb.String())
	}
	var big strings.Builder
	nbig := 0
	for _, p := range t.passes {
		if p.Looked >= 500 {
			if nbig++; nbig <= 12 {
				fmt.Fprintf(&big, " [%d entries, %d expired, %.1f ms, phase %d/4096]", p.Looked, p.Expired, float64(p.End.Sub(p.Start))/1e6, p.Start.UnixMilli()%4096)
			}
		}
	}
	if nbig > 0 {
		b.Logf("%d passes looked at 500 entries or more:%s", nbig, big.String())
	}
	if len(dur) > 0 {
		b.Logf("sweeper passes: %d (%d store calls); woke after the planned time: %s; pass: %s; entries looked at per pass (as ms): %s", len(dur), calls, pct(late), pct(dur), pct(looked))
	}
}
