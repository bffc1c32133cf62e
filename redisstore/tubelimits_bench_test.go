package redisstore_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/ratelimit"
	"github.com/redis/go-redis/v9"
)

// BenchmarkLimitedReserveCPU measures what a tube's limits cost Redis when
// they do not bind: reserve+delete on a plain tube and on a tube with a
// rate and a cap far above what the run reaches, in alternating rounds of
// 2,000 jobs (21 of each) on one redis-server. Per job it reports the server's CPU
// (INFO cpu, used_cpu_user + used_cpu_sys, before and after) and the time
// of its function calls (INFO commandstats, fcall), split into the time in
// the commands they called and the rest, the Lua itself; medians of the rounds,
// the limited tube's median over the plain one's, and the Redis commands
// the functions called per job (of the last round: the same in every one).
//
//	go test -run '^$' -bench LimitedReserveCPU -benchtime 1x ./redisstore/
func BenchmarkLimitedReserveCPU(b *testing.B) {
	const n, rounds = 2000, 21
	ctx := context.Background()
	_, c, q := ownServer(b, nil)
	limits := queue.Limits{Rate: ratelimit.PerSecond(1_000_000), Cap: 1_000_000}
	if err := q.SetLimits(ctx, "limited", limits); err != nil {
		b.Fatal(err)
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
	for _, callers := range []int{1, 8} {
		b.Run("callers="+strconv.Itoa(callers), func(b *testing.B) {
			for b.Loop() {
				cpu := map[string][]float64{}
				fcall := map[string][]float64{}
				cmds := map[string]float64{}
				cmdUs := map[string][]float64{} // time in the commands the functions called
				luaUs := map[string][]float64{} // the rest of fcall's time: the Lua itself
				for range rounds {
					for _, tube := range []string{"plain", "limited"} {
						fill(tube)
						if err := c.ConfigResetStat(ctx).Err(); err != nil {
							b.Fatal(err)
						}
						before := serverCPU(b, c)
						var done atomic.Int64
						var wg sync.WaitGroup
						var failed atomic.Value
						for range callers {
							wg.Go(func() {
								for done.Add(1) <= n {
									if err := reserveDelete(ctx, q, tube); err != nil {
										failed.CompareAndSwap(nil, err)
										return
									}
								}
							})
						}
						wg.Wait()
						if err, ok := failed.Load().(error); ok {
							b.Fatal(err)
						}
						cpu[tube] = append(cpu[tube], (serverCPU(b, c)-before)/n*1e6)
						stats := commandStats(b, c)
						fcall[tube] = append(fcall[tube], stats["fcall"].usec/n)
						var inner, innerUs float64 // the commands the functions called
						for name, st := range stats {
							if name != "fcall" && name != "info" && name != "config|resetstat" {
								inner += st.calls
								innerUs += st.usec
							}
						}
						cmds[tube] = inner / n
						cmdUs[tube] = append(cmdUs[tube], innerUs/n)
						luaUs[tube] = append(luaUs[tube], stats["fcall"].usec/n-innerUs/n)
					}
				}
				for _, tube := range []string{"plain", "limited"} {
					b.ReportMetric(median(cpu[tube]), tube+"-cpu-µs/job")
					b.ReportMetric(median(fcall[tube]), tube+"-fcall-µs/job")
					b.ReportMetric(cmds[tube], tube+"-cmds/job")
					b.ReportMetric(median(cmdUs[tube]), tube+"-cmd-µs/job")
					b.ReportMetric(median(luaUs[tube]), tube+"-lua-µs/job")
				}
				b.ReportMetric(median(cpu["limited"])/median(cpu["plain"]), "cpu-ratio")
				b.ReportMetric(median(fcall["limited"])/median(fcall["plain"]), "fcall-ratio")
			}
		})
	}
}

// serverCPU is the server's CPU time so far, in seconds (INFO cpu).
func serverCPU(b testing.TB, c *redis.Client) float64 {
	b.Helper()
	info, err := c.Info(context.Background(), "cpu").Result()
	if err != nil {
		b.Fatal(err)
	}
	var sum float64
	for line := range strings.SplitSeq(info, "\r\n") {
		k, v, ok := strings.Cut(line, ":")
		if ok && (k == "used_cpu_user" || k == "used_cpu_sys") {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				b.Fatal(err)
			}
			sum += f
		}
	}
	return sum
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}
