package redisstore_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/queue"
)

// BenchmarkGroupReserveCPU measures what serving a tube's groups in turn
// costs Redis: reserve+delete of 2,000 jobs from a plain tube and from a
// tube whose jobs are spread over 16 groups (and from one with a group
// template, a cap of 1,000,000 per group, that never binds), in alternating
// rounds (11 of each) on one redis-server, one caller. Per job: the
// server's CPU (INFO cpu), the commands the functions called (INFO
// commandstats), medians of the rounds, and each over the plain tube's.
//
//	go test -run '^$' -bench GroupReserveCPU -benchtime 1x ./redisstore/
func BenchmarkGroupReserveCPU(b *testing.B) {
	const n, rounds, groups = 2000, 11, 16
	ctx := context.Background()
	_, c, q := ownServer(b, nil)
	if err := q.SetLimits(ctx, "templated", queue.Limits{Group: queue.GroupLimits{Cap: 1_000_000}}); err != nil {
		b.Fatal(err)
	}
	fill := func(tube string) {
		jobs := make([]queue.NewJob, 100)
		for i := 0; i < n; i += len(jobs) {
			for k := range jobs {
				jobs[k] = queue.NewJob{Body: body100, TTR: time.Minute}
				if tube != "plain" {
					jobs[k].Group = "g" + strconv.Itoa((i+k)%groups)
				}
			}
			if _, err := q.PutMany(ctx, tube, jobs); err != nil {
				b.Fatal(err)
			}
		}
	}
	tubes := []string{"plain", "grouped", "templated"}
	for b.Loop() {
		cpu := map[string][]float64{}
		cmds := map[string]float64{}
		for range rounds {
			for _, tube := range tubes {
				fill(tube)
				if err := c.ConfigResetStat(ctx).Err(); err != nil {
					b.Fatal(err)
				}
				before := serverCPU(b, c)
				for range n {
					if err := reserveDelete(ctx, q, tube); err != nil {
						b.Fatal(err)
					}
				}
				cpu[tube] = append(cpu[tube], (serverCPU(b, c)-before)/n*1e6)
				var inner float64
				for name, st := range commandStats(b, c) {
					if name != "fcall" && name != "info" && name != "config|resetstat" {
						inner += st.calls
					}
				}
				cmds[tube] = inner / n
			}
		}
		for _, tube := range tubes {
			b.ReportMetric(median(cpu[tube]), tube+"-cpu-µs/job")
			b.ReportMetric(cmds[tube], tube+"-cmds/job")
			if tube != "plain" {
				b.ReportMetric(median(cpu[tube])/median(cpu["plain"]), tube+"-cpu-ratio")
			}
		}
	}
}
