package faulttest

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/internal/testkit/redistest"
)

// decisionAt is one decision a limiter process reported.
type decisionAt struct {
	at      time.Time
	outcome byte // 'A' admitted, 'R' refused, 'E' error
	failed  bool // the store failed (the policy answered)
}

// Four processes share a limit of 100 a second (burst 100), each asking
// 250 times a second, while Redis crashes and restarts without persistence
// (its state lost) a second into a 3-second run. Under each failure policy
// the test checks what the policy promises during the outage, that the
// processes go back to Redis once it answers, and what the restart costs:
// the state it lost lets one more burst through.
func TestLimitsThroughRedisRestart(t *testing.T) {
	const (
		procs = 4
		limit = 100
		every = 4 * time.Millisecond
		span  = 3 * time.Second
	)
	for _, policy := range []string{"closed", "open", "local"} {
		t.Run(policy, func(t *testing.T) {
			srv := redistest.Standalone(t)
			start := time.Now().Add(2 * time.Second).Truncate(time.Millisecond)
			var kids []*child
			for i := range procs {
				kids = append(kids, startChild(t, "limiter", "HG_ADDR="+srv.Addr, "HG_POLICY="+policy,
					"HG_KEY=shared", "HG_LIMIT="+strconv.Itoa(limit), "HG_EVERY="+every.String(), "HG_FOR="+span.String(),
					fmt.Sprintf("HG_START=%d", start.UnixMilli()), fmt.Sprintf("HG_ID=%d", i)))
			}
			// The crash a second into the run: wait for the processes to
			// report decisions past that point, then restart.
			var all [][]decisionAt
			crashAt := start.Add(time.Second)
			for _, k := range kids {
				var ds []decisionAt
				for {
					d := parseDecision(t, k.next(t, "d", 30*time.Second))
					ds = append(ds, d)
					if d.at.After(crashAt) {
						break
					}
				}
				all = append(all, ds)
			}
			// Down until every process has decided 60 times without
			// Redis (about a quarter of a second), then up again with
			// nothing.
			down := time.Now()
			srv.Crash()
			for i, k := range kids {
				for n := 0; n < 60; {
					d := parseDecision(t, k.next(t, "d", 30*time.Second))
					all[i] = append(all[i], d)
					if d.failed {
						n++
					}
				}
			}
			if err := srv.Start(); err != nil {
				t.Fatal(err)
			}
			up := time.Now()
			for i, k := range kids {
				for {
					l := k.next(t, "", 30*time.Second)
					if l == "end" {
						break
					}
					all[i] = append(all[i], parseDecision(t, strings.TrimPrefix(l, "d ")))
				}
				k.wait(t, 10*time.Second)
			}

			var merged []decisionAt
			for _, ds := range all {
				merged = append(merged, ds...)
			}
			sort.Slice(merged, func(i, j int) bool { return merged[i].at.Before(merged[j].at) })
			var admitted, failed, admittedFailed, refusedFailed int
			var lastFailure time.Time
			for _, d := range merged {
				if d.outcome == 'A' {
					admitted++
				}
				if d.failed {
					failed++
					lastFailure = d.at
					switch d.outcome {
					case 'A':
						admittedFailed++
					case 'R', 'E':
						refusedFailed++
					}
				}
			}
			if failed == 0 {
				t.Fatal("no decision met the outage: the test did not test it")
			}
			back := lastFailure.Sub(up)
			t.Logf("policy %s: %d decisions, %d admitted (%d without Redis), %d failed calls; Redis down %v, failures until %v after it answered",
				policy, len(merged), admitted, admittedFailed, failed, up.Sub(down).Round(time.Millisecond), back.Round(time.Millisecond))
			if back > 2*time.Second {
				t.Errorf("decisions still failed %v after Redis answered again", back)
			}
			// What the policy promises while Redis is down.
			switch policy {
			case "closed":
				if admittedFailed != 0 {
					t.Errorf("FailClosed admitted %d without the store", admittedFailed)
				}
			case "open":
				if refusedFailed != 0 {
					t.Errorf("FailOpen refused %d without the store", refusedFailed)
				}
			case "local":
				// Each process applies the whole limit by itself: at most a
				// burst and the rate over the outage each.
				outage := lastFailure.Sub(down)
				if bound := procs * (limit + int(float64(limit)*outage.Seconds()) + 1); admittedFailed > bound {
					t.Errorf("FailLocal admitted %d without the store in %v, more than %d", admittedFailed, outage, bound)
				}
			}
			// Over the run, with Redis deciding: the rate, a burst at the
			// start and one more for the state the crash lost (and, for
			// the open and local policies, what they admitted alone).
			if bound := int(float64(limit)*span.Seconds()) + 2*limit + admittedFailed + procs; admitted > bound {
				t.Errorf("%d admitted over %v, more than %d", admitted, span, bound)
			}
		})
	}
}

func parseDecision(t *testing.T, l string) decisionAt {
	t.Helper()
	f := strings.Fields(l)
	if len(f) != 3 || len(f[1]) != 1 {
		t.Fatalf("a decision line %q", l)
	}
	us, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		t.Fatalf("a decision line %q: %v", l, err)
	}
	return decisionAt{at: time.UnixMicro(us), outcome: f[1][0], failed: f[2] == "1"}
}
