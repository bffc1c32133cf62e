package storetest

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/queue"
)

// putRecord is one put of a debounce burst, timed by the caller's clock.
type putRecord struct {
	start, end time.Time
	res        queue.PutResult
}

// burst is what one debounce burst did.
type burst struct {
	first     time.Time              // the first put's start
	puts      map[string]putRecord   // by body
	delivered []queue.Job            // in the order reserved
	at        map[queue.ID]time.Time // when each was reserved
	total     int64                  // puts that made a job
	// due is when the store will make the job of the burst's last put
	// ready, as it says once every put has returned: StatsJob's TimeLeft
	// counted from the start of the call with the shortest round trip of a
	// few (at most 0.3 ms, or the best before the job is 20 ms from due),
	// floored to the millisecond when the
	// store counts in milliseconds (Redis: a whole number of them), so no
	// later than the store's own time; zero if the job was no longer
	// delayed then.
	due time.Time
}

// burstCaller is one caller of a debounce burst: it puts key per times
// from start, gap apart (its g-th share of each gap later), with bodies
// "g<g>-<k>", Delay 200 ms and MaxWait maxWait, and returns its puts by
// body. A goroutine with a Queue of its own (inProcess) or a child
// process (BenchDebounceProcs).
type burstCaller func(ctx context.Context, g, callers int, tube string, per int, gap time.Duration, start time.Time, maxWait time.Duration) (map[string]putRecord, error)

// debouncePut is the put of each caller of a burst.
func debouncePut(body string, maxWait time.Duration) queue.NewJob {
	return queue.NewJob{Body: []byte(body), UniqueKey: "key", Delay: 200 * time.Millisecond,
		Debounce: queue.DebounceReplace | queue.DebounceExtend, MaxWait: maxWait}
}

// paced runs put per times from start, gap apart (caller g of callers
// offset by its share of a gap), recording each put's start and return.
func paced(ctx context.Context, g, callers, per int, gap time.Duration, start time.Time, put func(ctx context.Context, body string) (queue.PutResult, error)) (map[string]putRecord, error) {
	out := make(map[string]putRecord, per)
	for k := range per {
		at := start.Add(time.Duration(k)*gap + time.Duration(g)*gap/time.Duration(callers))
		time.Sleep(time.Until(at)) // pacing the callers, not waiting for an event
		body := "g" + strconv.Itoa(g) + "-" + strconv.Itoa(k)
		t0 := time.Now()
		r, err := put(ctx, body)
		t1 := time.Now()
		if err != nil {
			return out, err
		}
		out[body] = putRecord{t0, t1, r}
	}
	return out, nil
}

// inProcess is a burst caller putting through q.
func inProcess(q *queue.Queue) burstCaller {
	return func(ctx context.Context, g, callers int, tube string, per int, gap time.Duration, start time.Time, maxWait time.Duration) (map[string]putRecord, error) {
		return paced(ctx, g, callers, per, gap, start, func(ctx context.Context, body string) (queue.PutResult, error) {
			r, err := q.PutMany(ctx, tube, []queue.NewJob{debouncePut(body, maxWait)})
			if err != nil {
				return queue.PutResult{}, err
			}
			return r[0], nil
		})
	}
}

// debounceBurst runs one burst on tube: the callers put the key total
// times in all, evenly over span, each starting lead from now (Delay 200
// ms, MaxWait maxWait), while a reserver on rq takes what falls due until
// nothing more has come for a second after the last put.
func debounceBurst(b *testing.B, rq *queue.Queue, callers []burstCaller, lead time.Duration, tube string, total int, span, maxWait time.Duration) burst {
	ctx := context.Background()
	out := burst{puts: map[string]putRecord{}, at: map[queue.ID]time.Time{}}
	var mu sync.Mutex
	per := total / len(callers)
	gap := span / time.Duration(per)
	start := time.Now().Add(lead)
	var lastEnd time.Time
	done := make(chan struct{})
	var rwg sync.WaitGroup
	rwg.Go(func() {
		for {
			j, err := rq.Reserve(ctx, queue.ReserveOptions{Tubes: []string{tube}, Timeout: 200 * time.Millisecond})
			now := time.Now()
			if err == nil {
				mu.Lock()
				out.delivered = append(out.delivered, j)
				out.at[j.ID] = now
				mu.Unlock()
				if err := rq.Delete(ctx, j.ID); err != nil {
					b.Error(err)
				}
				continue
			}
			select {
			case <-done:
				mu.Lock()
				quiet := now.Sub(lastEnd) > time.Second
				mu.Unlock()
				if quiet {
					return
				}
			default:
			}
		}
	})
	var wg sync.WaitGroup
	for g, c := range callers {
		wg.Go(func() {
			puts, err := c(ctx, g, len(callers), tube, per, gap, start, maxWait)
			if err != nil {
				b.Errorf("caller %d: %v", g, err)
			}
			mu.Lock()
			defer mu.Unlock()
			for body, p := range puts {
				out.puts[body] = p
				if p.end.After(lastEnd) {
					lastEnd = p.end
				}
			}
		})
	}
	wg.Wait()
	var last putRecord
	for _, p := range out.puts {
		if p.start.After(last.start) {
			last = p
		}
	}
	// The call's instant is known to its round trip: the shortest of a
	// few is taken.
	for best := time.Duration(-1); best < 0 || best > 300*time.Microsecond; {
		asked := time.Now()
		st, err := rq.StatsJob(ctx, last.res.ID)
		rt := time.Since(asked)
		if err != nil || st.State != queue.Delayed || st.TimeLeft < 20*time.Millisecond {
			break
		}
		if best < 0 || rt < best {
			best = rt
			if st.TimeLeft%time.Millisecond == 0 {
				asked = asked.Truncate(time.Millisecond)
			}
			out.due = asked.Add(st.TimeLeft)
		}
	}
	close(done)
	rwg.Wait()
	for _, p := range out.puts {
		if !p.res.Duplicate {
			out.total++
		}
	}
	out.first = lastEnd
	for _, p := range out.puts {
		if p.start.Before(out.first) {
			out.first = p.start
		}
	}
	return out
}

// lastPut checks that body is the last put of bp's that the store
// applied: no put began after it ended. It returns its record.
func lastPut(b *testing.B, bp burst, body string) putRecord {
	p, ok := bp.puts[body]
	if !ok {
		b.Fatalf("delivered body %q was never put", body)
	}
	for other, q := range bp.puts {
		if q.start.After(p.end) && other != body {
			b.Errorf("delivered the body of the put of %v–%v, but the put %q began after it, at %v", p.start.Format("15:04:05.000000"), p.end.Format("15:04:05.000000"), other, q.start.Format("15:04:05.000000"))
			break
		}
	}
	return p
}

// BenchDebounce measures a debounce (docs/keys.md): bursts bursts in which
// one caller per store of stores (each a process's client of the back
// end) puts one key 10,000 times in all over 1 s (Delay 200 ms, MaxWait
// 2 s) while a reserver waits. It checks that exactly one job is
// delivered, with the body of the last put the store applied, never after
// the first put plus 2 s, and reports how late it became ready beside the
// last put plus 200 ms, p50 and p99 over the bursts: measured from the
// last put's start and from its return at the caller (the store's instant
// of the put lies between, floored to its clock's grain: a millisecond on
// Redis), and from the due time the store itself gave the job, asked once
// every put had returned (that instant plus 200 ms).
// Then one burst of 3 s: a job delivered at the first put plus 2 s, and a
// new job started by the next put, delivered 200 ms after the last.
func BenchDebounce(b *testing.B, stores []queue.Store, bursts int) {
	qs := make([]*queue.Queue, len(stores))
	callers := make([]burstCaller, len(stores))
	for i, s := range stores {
		q, err := queue.New(s, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer q.Close()
		qs[i], callers[i] = q, inProcess(q)
	}
	benchDebounce(b, qs[0], callers, 20*time.Millisecond, "callers (goroutines)", bursts)
}

// benchDebounce is BenchDebounce with callers of any kind, rq reserving;
// each burst starts lead after its callers are started.
func benchDebounce(b *testing.B, rq *queue.Queue, callers []burstCaller, lead time.Duration, kind string, bursts int) {
	const debounce, maxWait = 200 * time.Millisecond, 2 * time.Second
	var upper, lower, fromDue, sinceFirst []time.Duration
	puts, extra := 0, 0
	for n := range bursts {
		bp := debounceBurst(b, rq, callers, lead, fmt.Sprintf("debounce-%d-%d-%d", time.Now().UnixNano(), b.N, n), 10000, time.Second, maxWait)
		puts += len(bp.puts)
		if len(bp.delivered) != 1 || bp.total != 1 {
			b.Errorf("burst %d: %d jobs delivered, %d made; want 1", n, len(bp.delivered), bp.total)
			extra += len(bp.delivered) - 1
			if len(bp.delivered) == 0 {
				continue
			}
		}
		j := bp.delivered[0]
		p := lastPut(b, bp, string(j.Body))
		at := bp.at[j.ID]
		upper = append(upper, at.Sub(p.start.Add(debounce)))
		lower = append(lower, at.Sub(p.end.Add(debounce)))
		if !bp.due.IsZero() {
			fromDue = append(fromDue, at.Sub(bp.due))
		}
		sinceFirst = append(sinceFirst, at.Sub(bp.first))
		if at.Sub(bp.first) > maxWait+50*time.Millisecond {
			b.Errorf("burst %d: delivered %v after the first put, past the max wait", n, at.Sub(bp.first))
		}
	}
	pct := func(d []time.Duration, p float64) time.Duration {
		if len(d) == 0 {
			return 0
		}
		s := slices.Clone(d)
		slices.Sort(s)
		i := int(float64(len(s))*p+0.999999) - 1
		return s[max(i, 0)]
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(pct(upper, 0.5)), "late_p50_ms")
	b.ReportMetric(ms(pct(upper, 0.99)), "late_p99_ms")
	b.ReportMetric(ms(pct(lower, 0.99)), "late_p99_from_return_ms")
	b.ReportMetric(ms(pct(fromDue, 0.5)), "late_p50_from_store_due_ms")
	b.ReportMetric(ms(pct(fromDue, 0.99)), "late_p99_from_store_due_ms")
	b.ReportMetric(float64(extra), "extra_jobs")
	b.Logf("%d bursts, %d puts by %d %s: one job each, delivered after the last put + %v: p50 %.3f ms, p99 %.3f ms (from the put's start); from its return p50 %.3f ms, p99 %.3f ms; after the due time the store gave the job (its instant of the last put + %v), in %d bursts, p50 %.3f ms, p99 %.3f ms, max %.3f ms; latest after the first put %v",
		bursts, puts, len(callers), kind, debounce, ms(pct(upper, 0.5)), ms(pct(upper, 0.99)), ms(pct(lower, 0.5)), ms(pct(lower, 0.99)),
		debounce, len(fromDue), ms(pct(fromDue, 0.5)), ms(pct(fromDue, 0.99)), ms(pct(fromDue, 1)), pct(sinceFirst, 1).Round(time.Microsecond))

	// A burst longer than the max wait.
	bp := debounceBurst(b, rq, callers, lead, fmt.Sprintf("debounce-long-%d-%d", time.Now().UnixNano(), b.N), 30000, 3*time.Second, maxWait)
	if len(bp.delivered) != 2 || bp.total != 2 {
		b.Fatalf("3 s burst: %d jobs delivered, %d made; want 2", len(bp.delivered), bp.total)
	}
	a, c := bp.delivered[0], bp.delivered[1]
	atA, atC := bp.at[a.ID], bp.at[c.ID]
	// The first put of the second job: the earliest put that made it.
	var second putRecord
	for _, p := range bp.puts {
		if p.res.ID == c.ID && !p.res.Duplicate && (second.start.IsZero() || p.start.Before(second.start)) {
			second = p
		}
	}
	if second.start.IsZero() {
		b.Fatalf("no put made the second job %d", c.ID)
	}
	p := lastPut(b, bp, string(c.Body))
	// The put that made the first job: the store counts its max wait from
	// a time between that put's start and its return.
	var made putRecord
	for _, p := range bp.puts {
		if p.res.ID == a.ID && !p.res.Duplicate {
			made = p
		}
	}
	// The store made the second job no earlier than the first job's max
	// wait after its first put, which it stamped after that put began, in
	// whole milliseconds (Redis's clock, floored): the put that made the
	// second job cannot have returned before. (The earliest put of the
	// burst, in another process, may have begun before the one the store
	// took first.)
	if second.end.Before(made.start.Truncate(time.Millisecond).Add(maxWait)) {
		b.Errorf("the second job was made by a put that returned %v after the put that made the first job began, before the max wait", second.end.Sub(made.start))
	}
	b.ReportMetric(ms(atA.Sub(bp.first.Add(maxWait))), "long_first_late_ms")
	b.ReportMetric(ms(atA.Sub(made.end.Add(maxWait))), "long_first_late_from_return_ms")
	b.Logf("3 s burst, %d puts: the first job delivered at the first put + %v (%.3f ms after the max wait; %.3f ms after it counted from the return of the put that made the job), the second made by a put at the first put + %v and delivered %.3f ms after its last put + %v",
		len(bp.puts), atA.Sub(bp.first).Round(time.Microsecond), ms(atA.Sub(bp.first.Add(maxWait))), ms(atA.Sub(made.end.Add(maxWait))), second.start.Sub(bp.first).Round(time.Microsecond), ms(atC.Sub(p.start.Add(debounce))), debounce)
}
