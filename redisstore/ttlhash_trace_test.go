package redisstore_test

import (
	"cmp"
	"context"
	"fmt"
	"hash/fnv"
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

// lagTrace follows the events of a TTLHashLag run through their stages:
// the sweep that expired each (ExpiredAt, on Redis's clock, the time of
// its stream entry too), the wake-up its shard published and its handler
// for every event; the read that took it and the acknowledgement for a
// sample of one in traceSample; and every Sweeper pass. It reports the
// percentiles of each stage, and the Redis CPU per expired field (INFO cpu
// before and after).
//
// What it keeps is small, sized up front and holds no pointers the
// collector must follow (times as Unix nanoseconds): a trace of every
// event's ID and batch kept some 400 MB live at a million fields, and the
// collector's marking of it, with its assists, held the Sweepers (in this
// process) for 100-400 ms at a time.
type lagTrace struct {
	rc      *redis.Client
	cpu0    float64
	proc0   time.Duration // this process's CPU time at the start
	gc0     runtime.MemStats
	mu      sync.Mutex
	wakes   map[int][]int64 // per shard, when its wake-ups arrived
	events  []tracedEvent
	sampled map[string]*sampledEvent // by event ID
	batches []tracedBatch
	passes  []tracedPass
	standby []evtrace.Standby
	stop    func()
}

// traceSample: one event in this many has its read and acknowledgement
// traced.
const traceSample = 16

type tracedEvent struct {
	deadline, expiredAt, handled int64
	shard                        int32
}

type sampledEvent struct {
	event int   // index in events
	batch int32 // index in batches, -1 until the batch is traced
}

type tracedBatch struct {
	woken, readStart, readEnd, ackStart, ackEnd int64 // woken 0: read again at once
}

type tracedPass struct {
	planned, woken, start, end int64 // planned and woken 0 when unknown
	calls, expired, looked     int
}

// isSampled says whether event id has its read traced.
func isSampled(id string) bool {
	h := fnv.New32a()
	h.Write([]byte(id))
	return h.Sum32()%traceSample == 0
}

// unixNano is t in Unix nanoseconds, 0 for the zero time.
func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func startLagTrace(b *testing.B, rc *redis.Client, hs *ttlhash.Hashes, fields int) *lagTrace {
	t := &lagTrace{rc: rc, wakes: map[int][]int64{}, sampled: make(map[string]*sampledEvent, fields/traceSample*2),
		events: make([]tracedEvent, 0, fields), passes: make([]tracedPass, 0, fields/2)}
	stop, err := hs.Store().(ttlhash.Notifier).Listen(context.Background(), ttlhash.TopicEvents, func(topic string) {
		now := time.Now().UnixNano()
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
		k := int32(-1)
		for _, id := range bt.IDs {
			se := t.sampled[id]
			if se == nil {
				continue
			}
			if k < 0 {
				k = int32(len(t.batches))
				t.batches = append(t.batches, tracedBatch{unixNano(bt.Woken), unixNano(bt.ReadStart), unixNano(bt.ReadEnd), unixNano(bt.AckStart), unixNano(bt.AckEnd)})
			}
			se.batch = k
		}
	}
	evtrace.OnPass = func(p evtrace.Pass) {
		t.mu.Lock()
		t.passes = append(t.passes, tracedPass{unixNano(p.Planned), unixNano(p.Woken), unixNano(p.Start), unixNano(p.End), p.Calls, p.Expired, p.Looked})
		t.mu.Unlock()
	}
	evtrace.OnStandby = func(sb evtrace.Standby) {
		t.mu.Lock()
		t.standby = append(t.standby, sb)
		t.mu.Unlock()
	}
	b.Cleanup(func() { evtrace.OnBatch, evtrace.OnPass, evtrace.OnStandby = nil, nil, nil })
	rc.ConfigResetStat(context.Background())
	t.cpu0 = redisCPU(b, rc)
	t.proc0 = processCPU()
	runtime.ReadMemStats(&t.gc0)
	return t
}

// seen is ConsumeTTLHashLag's callback (called under its lock).
func (t *lagTrace) seen(e ttlhash.Event, at time.Time) {
	shard, _, _ := strings.Cut(e.ID, ":")
	n, _ := strconv.Atoi(shard)
	t.mu.Lock()
	if isSampled(e.ID) {
		t.sampled[e.ID] = &sampledEvent{event: len(t.events), batch: -1}
	}
	t.events = append(t.events, tracedEvent{e.Deadline.UnixNano(), e.ExpiredAt.UnixNano(), at.UnixNano(), int32(n)})
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
	b.Logf("Redis CPU %.2f µs per expired field; commands by time:%s", cpu/float64(fields)*1e6, commandsByTime(b, t.rc, fields))
	t.mu.Lock()
	defer t.mu.Unlock()
	for s := range t.wakes {
		slices.Sort(t.wakes[s])
	}
	stages := map[string][]time.Duration{}
	order := []string{"expiry (ExpiredAt-Deadline)", "notify (wake-up arrived-ExpiredAt)", "in stream (read began-ExpiredAt)",
		"woken->read began", "read", "handler (handled-read ended)", "ack", "delivery (handled-Deadline)",
		"wake-up arrived->read began"}
	add := func(k string, d int64) { stages[k] = append(stages[k], time.Duration(d)) }
	for _, e := range t.events {
		add(order[0], e.expiredAt-e.deadline)
		add(order[7], e.handled-e.deadline)
		ws := t.wakes[int(e.shard)]
		if i, _ := slices.BinarySearch(ws, e.expiredAt); i < len(ws) {
			add(order[1], ws[i]-e.expiredAt)
		}
	}
	// The sampled events: their reads and acknowledgements.
	for _, se := range t.sampled {
		if se.batch < 0 {
			continue
		}
		e, bt := t.events[se.event], t.batches[se.batch]
		add(order[2], bt.readStart-e.expiredAt)
		ws := t.wakes[int(e.shard)]
		if i, _ := slices.BinarySearch(ws, e.expiredAt); i < len(ws) && ws[i] <= bt.readStart {
			add(order[8], bt.readStart-ws[i])
		}
		add(order[5], e.handled-bt.readEnd)
	}
	for _, bt := range t.batches {
		if bt.woken != 0 {
			add(order[3], bt.readStart-bt.woken)
		}
		add(order[4], bt.readEnd-bt.readStart)
		add(order[6], bt.ackEnd-bt.ackStart)
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
		looked = append(looked, time.Duration(p.looked)*time.Millisecond)
		if p.planned != 0 && p.woken != 0 {
			late = append(late, time.Duration(p.woken-p.planned))
		}
		dur = append(dur, time.Duration(p.end-p.start))
		calls += p.calls
	}
	// When the late deliveries came: the 100 ms windows (by deadline) with
	// the most deliveries over 25 ms, their phase in the 4,096 ms and 256
	// ms buckets of the wheel, and the GC pauses in them.
	if len(t.events) > 0 {
		t0 := t.events[0].deadline
		for _, e := range t.events {
			t0 = min(t0, e.deadline)
		}
		type win struct{ late, n int }
		wins := map[int64]*win{}
		for _, e := range t.events {
			k := (e.deadline - t0) / int64(100*time.Millisecond)
			w := wins[k]
			if w == nil {
				w = &win{}
				wins[k] = w
			}
			w.n++
			if e.handled-e.deadline > int64(25*time.Millisecond) {
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
			abs := t0 + k*int64(100*time.Millisecond)
			ms := abs / 1e6
			gcs := 0
			for i := range gc.PauseEnd {
				if pe := int64(gc.PauseEnd[i]); pe > 0 && pe >= abs-int64(50*time.Millisecond) && pe < abs+int64(150*time.Millisecond) {
					gcs++
				}
			}
			fmt.Fprintf(&sb, " [%d ms: %d/%d late, phase %d/4096 %d/256, %d GCs]", k*100, wins[k].late, wins[k].n, ms%4096, ms%256, gcs)
		}
		c := 0
		for _, w := range wins {
			if w.late > 0 {
				c++
			}
		}
		b.Logf("deliveries over 25 ms: %d in %d of %d windows of 100 ms; the worst:%s", lateAll, c, len(wins), sb.String())
	}
	if len(t.events) > 0 {
		b.Logf("standing by: %s", t.standbyAt())
	}
	var big strings.Builder
	nbig := 0
	for _, p := range t.passes {
		if p.looked >= 500 {
			if nbig++; nbig <= 12 {
				fmt.Fprintf(&big, " [%d entries, %d expired, %.1f ms, phase %d/4096]", p.looked, p.expired, float64(p.end-p.start)/1e6, p.start/1e6%4096)
			}
		}
	}
	if nbig > 0 {
		b.Logf("%d passes looked at 500 entries or more:%s", nbig, big.String())
	}
	// Times no pass started for 25 ms or more: the Sweepers held up.
	slices.SortFunc(t.passes, func(a, c tracedPass) int { return cmp.Compare(a.start, c.start) })
	var gaps []time.Duration
	for k := 1; k < len(t.passes); k++ {
		if d := time.Duration(t.passes[k].start - t.passes[k-1].start); d >= 25*time.Millisecond {
			gaps = append(gaps, d)
		}
	}
	if len(dur) > 0 {
		b.Logf("sweeper passes: %d (%d store calls); woke after the planned time: %s; pass: %s; entries looked at per pass (as ms): %s; gaps of 25 ms or more between passes: %s", len(dur), calls, pct(late), pct(dur), pct(looked), pct(gaps))
	}
}

// commandsByTime lists the commands of INFO commandstats, the dearest
// first, with their calls and µs per expired field.
func commandsByTime(tb testing.TB, rc *redis.Client, fields int) string {
	stats, err := rc.Info(context.Background(), "commandstats").Result()
	if err != nil {
		tb.Fatal(err)
	}
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
		c := cs{name: name}
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
	for _, c := range all[:min(24, len(all))] {
		fmt.Fprintf(&sb, " %s %d calls %.2f µs/field;", c.name, c.calls, float64(c.usec)/float64(fields))
	}
	return sb.String()
}

// standbyAt says how often the Sweepers changed their role for a shard,
// and how many shards every Sweeper stood by for (so that none swept them
// on time) at the first deadline and in the 300 ms after it.
func (t *lagTrace) standbyAt() string {
	t0 := t.events[0].deadline
	for _, e := range t.events {
		t0 = min(t0, e.deadline)
	}
	slices.SortFunc(t.standby, func(a, c evtrace.Standby) int { return a.At.Compare(c.At) })
	sweepers := map[int]bool{}
	ons := 0
	for _, sb := range t.standby {
		sweepers[sb.Sweeper] = true
		if sb.On {
			ons++
		}
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "%d changes (%d to standing by) by %d Sweepers; shards every Sweeper stood by for, by ms from the first deadline:", len(t.standby), ons, len(sweepers))
	for _, at := range []int64{-1000, 0, 50, 100, 150, 200, 300} {
		when := t0 + at*int64(time.Millisecond)
		on := map[[2]int]bool{}
		for _, c := range t.standby {
			if c.At.UnixNano() > when {
				break
			}
			on[[2]int{c.Sweeper, c.Shard}] = c.On
		}
		all := 0
		for shard := range 16 {
			n := 0
			for w := range sweepers {
				if on[[2]int{w, shard}] {
					n++
				}
			}
			if n > 0 && n == len(sweepers) {
				all++
			}
		}
		fmt.Fprintf(&sb, " %+d: %d", at, all)
	}
	return sb.String()
}
