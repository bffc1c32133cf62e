package redisstore_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/lock"
	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/ratelimit"
	"github.com/hourglass-io/hourglass/redisstore"
	"github.com/hourglass-io/hourglass/ttlhash"
	"github.com/redis/go-redis/v9"
)

func benchQueue(b *testing.B) *queue.Queue {
	b.Helper()
	s := newStore(b, standaloneClient(b), nil)
	q, err := queue.New(s, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { q.Close() })
	return q
}

var body100 = make([]byte, 100)

// BenchmarkPut puts one 100-byte job per call, from GOMAXPROCS×8 goroutines.
func BenchmarkPut(b *testing.B) {
	q := benchQueue(b)
	ctx := context.Background()
	b.SetParallelism(8)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := q.Put(ctx, "bench", queue.NewJob{Body: body100}); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkPutMany100 puts 100 jobs per call; one op is one job.
func BenchmarkPutMany100(b *testing.B) {
	q := benchQueue(b)
	ctx := context.Background()
	jobs := make([]queue.NewJob, 100)
	for i := range jobs {
		jobs[i] = queue.NewJob{Body: body100}
	}
	b.SetParallelism(8)
	b.RunParallel(func(pb *testing.PB) {
		n := 0
		for pb.Next() {
			if n++; n%100 != 0 {
				continue
			}
			if _, err := q.PutMany(ctx, "bench", jobs); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkReserveDelete reserves and deletes jobs put beforehand, one job
// per op, from GOMAXPROCS×8 goroutines.
func BenchmarkReserveDelete(b *testing.B) {
	q := benchQueue(b)
	ctx := context.Background()
	jobs := make([]queue.NewJob, 100)
	for i := range jobs {
		jobs[i] = queue.NewJob{Body: body100}
	}
	for i := 0; i < b.N; i += 100 {
		if _, err := q.PutMany(ctx, "bench", jobs); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	b.SetParallelism(8)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			j, err := q.Reserve(ctx, queue.ReserveOptions{Tubes: []string{"bench"}, Timeout: -1})
			if err != nil {
				b.Error(err)
				return
			}
			if err := q.Delete(ctx, j.ID); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkMemoryPerDelayedJob reports the Redis memory each delayed job of
// 100 bytes costs (INFO memory used_memory delta, on a server of its own).
func BenchmarkMemoryPerDelayedJob(b *testing.B) {
	const n = 20000
	c, q, before := memoryBench(b)
	putHundreds(b, q, n, queue.NewJob{Body: body100, Delay: time.Hour}, nil)
	b.StopTimer()
	b.ReportMetric(float64(usedMemory(b, c)-before)/n, "bytes/job")
}

// memoryBench starts a redis-server of the benchmark's own and returns a
// client of it, a Queue on it and its used_memory before any job.
func memoryBench(b *testing.B) (*redis.Client, *queue.Queue, int64) {
	_, c, q := ownServer(b, nil)
	return c, q, usedMemory(b, c)
}

// putHundreds puts n copies of job into tube "mem", 100 a call, calling
// after (when set) after each call; the benchmark's timer runs from here.
func putHundreds(b *testing.B, q *queue.Queue, n int, job queue.NewJob, after func()) {
	jobs := make([]queue.NewJob, 100)
	for i := range jobs {
		jobs[i] = job
	}
	b.ResetTimer()
	for i := 0; i < n; i += len(jobs) {
		if _, err := q.PutMany(context.Background(), "mem", jobs); err != nil {
			b.Fatal(err)
		}
		if after != nil {
			after()
		}
	}
}

// BenchmarkMemoryPerReservedJob reports the Redis memory each job of 100
// bytes costs while it is reserved (put, then reserved by one worker), and
// once a failure released it to the delayed state with its error as the
// reason: the job of a worker between attempts.
func BenchmarkMemoryPerReservedJob(b *testing.B) {
	ctx := context.Background()
	const n = 20000
	c, q, before := memoryBench(b)
	var held []queue.Job
	putHundreds(b, q, n, queue.NewJob{Body: body100, TTR: time.Hour}, func() {
		got, err := q.ReserveN(ctx, 100, queue.ReserveOptions{Tubes: []string{"mem"}, Timeout: -1})
		if err != nil {
			b.Fatal(err)
		}
		held = append(held, got...)
	})
	b.StopTimer()
	if len(held) != n {
		b.Fatalf("reserved %d jobs, want %d", len(held), n)
	}
	b.ReportMetric(float64(usedMemory(b, c)-before)/n, "bytes/reserved-job")
	for _, j := range held {
		if err := release(ctx, q, j.ID); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(usedMemory(b, c)-before)/n, "bytes/released-job")
}

func usedMemory(b testing.TB, c *redis.Client) int64 {
	info, err := c.Info(context.Background(), "memory").Result()
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	b.Fatal("no used_memory in INFO")
	return 0
}

// BenchmarkRedisCPU reports the Redis CPU time (INFO commandstats, µs)
// of one operation of each primitive, on a server of its own: the time of
// the function calls for hourglass's operations, one caller at a time and
// from 8 callers at once (whose calls merge), beside the plain commands a
// hand-made version would send. Each sub-benchmark runs its operation 20,000
// times whatever b.N is.
//
//	go test -run '^$' -bench RedisCPU -benchtime 1x ./redisstore/
func BenchmarkRedisCPU(b *testing.B) {
	const n = 20000
	ctx := context.Background()
	_, c, q := ownServer(b, nil)
	s, err := redisstore.New(ctx, c, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	locks, err := lock.New(s.Locks(), nil)
	if err != nil {
		b.Fatal(err)
	}
	limits, err := ratelimit.New(s.RateLimits(), nil)
	if err != nil {
		b.Fatal(err)
	}
	hashes, err := ttlhash.New(s.Hashes(), nil)
	if err != nil {
		b.Fatal(err)
	}
	hash := hashes.Hash("h")
	seq := atomic.Int64{}
	// parallel runs f n times from callers goroutines.
	parallel := func(callers int, f func(i int) error) error {
		var wg sync.WaitGroup
		var first atomic.Value
		for range callers {
			wg.Go(func() {
				for {
					i := int(seq.Add(1))
					if i > n {
						return
					}
					if err := f(i); err != nil {
						first.CompareAndSwap(nil, err)
						return
					}
				}
			})
		}
		wg.Wait()
		seq.Store(0)
		if err, ok := first.Load().(error); ok {
			return err
		}
		return nil
	}
	fill := func(tube string) {
		jobs := make([]queue.NewJob, 100)
		for i := range jobs {
			jobs[i] = queue.NewJob{Body: body100, TTR: time.Minute}
		}
		for i := 0; i < n; i += len(jobs) {
			if _, err := q.PutMany(ctx, tube, jobs); err != nil {
				b.Fatal(err)
			}
		}
	}
	type row struct {
		name     string
		callers  int
		prepare  func()
		op       func(i int) error
		commands []string // the top-level commands whose time counts
	}
	fcall := []string{"fcall"}
	rows := []row{
		{"put/callers=1", 1, nil, func(int) error { _, err := q.Put(ctx, "p1", queue.NewJob{Body: body100, TTR: time.Minute}); return err }, fcall},
		{"put/callers=8", 8, nil, func(int) error { _, err := q.Put(ctx, "p8", queue.NewJob{Body: body100, TTR: time.Minute}); return err }, fcall},
		{"delayed-put/callers=1", 1, nil, func(int) error {
			_, err := q.Put(ctx, "d1", queue.NewJob{Body: body100, TTR: time.Minute, Delay: time.Hour})
			return err
		}, fcall},
		{"reserve+delete/callers=1", 1, func() { fill("r1") }, func(int) error { return reserveDelete(ctx, q, "r1") }, fcall},
		{"reserve+delete/callers=8", 8, func() { fill("r8") }, func(int) error { return reserveDelete(ctx, q, "r8") }, fcall},
		{"gcra-allow/callers=1", 1, nil, func(i int) error {
			_, err := limits.Allow(ctx, "k"+strconv.Itoa(i%1000), ratelimit.PerSecond(1000000))
			return err
		}, fcall},
		{"gcra-allow/callers=16,one-key", 16, nil, func(int) error {
			_, err := limits.Allow(ctx, "hot", ratelimit.PerSecond(1000000))
			return err
		}, fcall},
		{"lock-obtain+release/callers=1", 1, nil, func(int) error {
			l, err := locks.TryObtain(ctx, "lk", &lock.ObtainOptions{TTL: time.Minute})
			if err != nil {
				return err
			}
			return l.Release(ctx)
		}, fcall},
		{"hash-set-ttl/callers=1", 1, nil, func(i int) error {
			_, err := hash.SetTTL(ctx, "f"+strconv.Itoa(i), body100, time.Hour)
			return err
		}, fcall},
		{"hash-get/callers=1", 1, nil, func(i int) error { _, _, err := hash.Get(ctx, "f"+strconv.Itoa(i)); return err }, fcall},
		// What a hand-made version sends: a job hash and a delay index; SET
		// NX PX and a compare-and-delete; a plain HSET and HGET.
		{"plain-hset+zadd/callers=1", 1, nil, func(i int) error {
			id := strconv.Itoa(i)
			if err := c.HSet(ctx, "plain:jobs", id, body100).Err(); err != nil {
				return err
			}
			return c.ZAdd(ctx, "plain:delayed", redis.Z{Score: float64(i), Member: id}).Err()
		}, []string{"hset", "zadd"}},
		{"plain-set-nx+compare-del/callers=1", 1, nil, func(int) error {
			if err := c.SetNX(ctx, "plain:lock", "token", time.Minute).Err(); err != nil {
				return err
			}
			return c.Eval(ctx, "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0", []string{"plain:lock"}, "token").Err()
		}, []string{"set", "eval"}},
		{"plain-hset/callers=1", 1, nil, func(i int) error { return c.HSet(ctx, "plain:h", "f"+strconv.Itoa(i), body100).Err() }, []string{"hset"}},
		{"plain-hget/callers=1", 1, nil, func(i int) error { return c.HGet(ctx, "plain:h", "f"+strconv.Itoa(i)).Err() }, []string{"hget"}},
	}
	for _, r := range rows {
		b.Run(r.name, func(b *testing.B) {
			for b.Loop() {
				if r.prepare != nil {
					r.prepare()
				}
				if err := c.ConfigResetStat(ctx).Err(); err != nil {
					b.Fatal(err)
				}
				if err := parallel(r.callers, r.op); err != nil {
					b.Fatal(err)
				}
				stats := commandStats(b, c)
				var usec, calls float64
				for _, cmd := range r.commands {
					usec += stats[cmd].usec
					calls += stats[cmd].calls
				}
				b.ReportMetric(usec/n, "redis-µs/op")
				b.ReportMetric(calls/n, "calls/op")
			}
		})
	}
}

func reserveDelete(ctx context.Context, q *queue.Queue, tube string) error {
	j, err := q.Reserve(ctx, queue.ReserveOptions{Tubes: []string{tube}, Timeout: -1})
	if err != nil {
		return err
	}
	return q.Delete(ctx, j.ID)
}

type cmdStat struct{ calls, usec float64 }

// commandStats reads INFO commandstats: per command, its calls and µs.
func commandStats(b testing.TB, c *redis.Client) map[string]cmdStat {
	b.Helper()
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	out := map[string]cmdStat{}
	for _, line := range strings.Split(info, "\r\n") {
		rest, ok := strings.CutPrefix(line, "cmdstat_")
		if !ok {
			continue
		}
		name, fields, _ := strings.Cut(rest, ":")
		var st cmdStat
		for _, f := range strings.Split(fields, ",") {
			k, v, _ := strings.Cut(f, "=")
			x, _ := strconv.ParseFloat(v, 64)
			switch k {
			case "calls":
				st.calls = x
			case "usec":
				st.usec = x
			}
		}
		out[name] = st
	}
	return out
}

// release gives back a job that failed, as a Worker does: with its
// handler's error (55 bytes) as the reason.
func release(ctx context.Context, q *queue.Queue, id queue.ID) error {
	return q.ReleaseWithReason(ctx, id, 1024, time.Hour, "dial tcp 10.0.0.7:5432: connect: connection refused")
}
