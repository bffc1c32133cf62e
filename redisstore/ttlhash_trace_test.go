package redisstore_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
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
	return t
}

// seen is ConsumeTTLHashLag's callback (called under its lock).
func (t *lagTrace) seen(e ttlhash.Event, at time.Time) {
	t.mu.Lock()
	t.events = append(t.events, tracedEvent{id: e.ID, deadline: e.Deadline, expiredAt: e.ExpiredAt, handled: at})
	t.mu.Unlock()
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
	cpu := redisCPU(b, t.rc) - t.cpu0
	t.stop()
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
		"woken->read began", "read", "handler (handled-read ended)", "ack", "delivery (handled-Deadline)"}
	add := func(k string, d time.Duration) { stages[k] = append(stages[k], d) }
	acks := map[*evtrace.Batch]bool{}
	for _, e := range t.events {
		add(order[0], e.expiredAt.Sub(e.deadline))
		add(order[7], e.handled.Sub(e.deadline))
		shard, _, _ := strings.Cut(e.id, ":")
		n, _ := strconv.Atoi(shard)
		ws := t.wakes[n]
		if i, _ := slices.BinarySearchFunc(ws, e.expiredAt, func(a, b time.Time) int { return a.Compare(b) }); i < len(ws) {
			add(order[1], ws[i].Sub(e.expiredAt))
		}
		bt := t.batches[e.id]
		if bt == nil {
			continue
		}
		add(order[2], bt.ReadStart.Sub(e.expiredAt))
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
	var late, dur []time.Duration
	calls := 0
	for _, p := range t.passes {
		if !p.Planned.IsZero() && !p.Woken.IsZero() {
			late = append(late, p.Woken.Sub(p.Planned))
		}
		dur = append(dur, p.End.Sub(p.Start))
		calls += p.Calls
	}
	if len(dur) > 0 {
		b.Logf("sweeper passes: %d (%d store calls); woke after the planned time: %s; pass: %s", len(dur), calls, pct(late), pct(dur))
	}
}
