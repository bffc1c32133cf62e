package httpapi_test

import (
	"bytes"
	"net/http"
	"runtime"
	"strconv"
	"sync"
	"testing"

	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/server/httpapi"
)

// heapInUse returns the live heap after two collections (the second
// empties what sync.Pools kept through the first).
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

func TestMaxReserveTubes(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open func(testing.TB) queue.Store) {
		ts := startServer(t, open(t), func(s *httpapi.Server) { s.MaxReserveTubes = 3 })
		ts.c.do(req{method: "POST", path: "/v1/reserve", json: map[string]any{"tubes": []string{"a", "b", "c", "d"}}}).
			want(t, http.StatusBadRequest, httpapi.CodeTooManyTubes)
		ts.c.do(req{method: "POST", path: "/v1/reserve", json: map[string]any{"tubes": []string{"a", "b", "c"}}}).
			want(t, http.StatusNoContent, "")
	})
}

// TestMaxWaitsFlood floods a server whose long polls are capped: the
// requests beyond the cap are answered 429 at once, the server keeps
// answering, and once the flood is over its memory is given back. It runs
// alone (not in parallel) so that the heap it reads is its own.
func TestMaxWaitsFlood(t *testing.T) {
	for _, b := range backends {
		t.Run(b.Name, func(t *testing.T) { testMaxWaitsFlood(t, b) })
	}
}

func testMaxWaitsFlood(t *testing.T, b backend) {
	const maxWaits, flood = 20, 300
	{
		ts := startHashServer(t, b, nil, func(s *httpapi.Server) { s.MaxWaits = maxWaits })
		// Every request on a connection of its own, closed after the reply,
		// so that no keep-alive connection outlives the flood.
		hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
		defer hc.CloseIdleConnections()
		reserve := func(timeoutMS int) (int, string) {
			hr, _ := http.NewRequest("POST", ts.url+"/v1/reserve",
				bytes.NewReader([]byte(`{"tubes":["flood"],"timeout_ms":`+strconv.Itoa(timeoutMS)+`}`)))
			hr.Header.Set("Content-Type", "application/json")
			resp, err := hc.Do(hr)
			if err != nil {
				return 0, err.Error()
			}
			defer resp.Body.Close()
			var buf bytes.Buffer
			buf.ReadFrom(resp.Body)
			return resp.StatusCode, buf.String()
		}
		base := heapInUse()

		run := func(round int) (peak, after uint64) {
			type result struct {
				status int
				body   string
			}
			results := make(chan result, maxWaits+flood)
			var wg sync.WaitGroup
			for range maxWaits + flood {
				wg.Go(func() {
					st, body := reserve(25000)
					results <- result{st, body}
				})
			}
			// Those beyond the cap come back at once; the others wait.
			for range flood {
				r := <-results
				if r.status != http.StatusTooManyRequests || !bytes.Contains([]byte(r.body), []byte(httpapi.CodeTooManyWaits)) {
					t.Fatalf("a reserve beyond the cap: %d %s, want 429 %s", r.status, r.body, httpapi.CodeTooManyWaits)
				}
			}
			// Still responsive, and the 429 is the document's: a reserve that
			// need not wait is answered, one that would is refused, as is a
			// hash event read that would.
			ts.c.do(req{method: "POST", path: "/v1/reserve", json: map[string]any{"tubes": []string{"other"}}}).want(t, http.StatusNoContent, "")
			if r := ts.c.do(req{method: "POST", path: "/v1/reserve", json: map[string]any{"timeout_ms": 1000}}).
				want(t, http.StatusTooManyRequests, httpapi.CodeTooManyWaits); r.header.Get("Retry-After") != "1" {
				t.Errorf("Retry-After %q, want 1", r.header.Get("Retry-After"))
			}
			ts.c.do(req{method: "POST", path: "/v1/hash-groups/g/read", json: map[string]any{"consumer": "c", "timeout_ms": 1000}}).
				want(t, http.StatusTooManyRequests, httpapi.CodeTooManyWaits)
			ts.c.do(req{method: "GET", path: "/v1/stats"}).want(t, http.StatusOK, "")
			peak = heapInUse()

			// The waiters get the jobs put meanwhile.
			for range maxWaits {
				ts.c.put(t, "flood", map[string]any{"body": "j"})
			}
			for range maxWaits {
				if r := <-results; r.status != http.StatusOK {
					t.Fatalf("a waiting reserve: %d %s, want 200", r.status, r.body)
				}
			}
			wg.Wait()
			// Once they are done, a long poll is admitted again.
			ts.c.do(req{method: "POST", path: "/v1/reserve", json: map[string]any{"tubes": []string{"other"}, "timeout_ms": 10}}).want(t, http.StatusNoContent, "")
			hc.CloseIdleConnections()
			ts.c.hc.CloseIdleConnections()
			waitFor(t, "the flood's connections to close", func() bool {
				return gauge(t, ts.srv.Metrics, httpapi.MetricConnections, map[string]string{"protocol": "http"}) == 0
			})
			after = heapInUse()
			t.Logf("round %d: heap %d KiB before, %d KiB with %d waiting and %d refused, %d KiB after",
				round, base>>10, peak>>10, maxWaits, flood, after>>10)
			return peak, after
		}
		peak, after1 := run(1)
		_, after2 := run(2)
		_, after3 := run(3)
		// What the first floods leave (the store's connection pool grown,
		// the jobs reserved, the metrics' series) stays; a later flood must
		// not add to it. A flood that left its requests behind would hold
		// 320 of them more each round, hundreds of KiB; the allowance for
		// the third round's growth is a quarter of the first flood's peak
		// growth, but at least 128 KiB, the heap's own noise between two
		// reads (the second round may still settle pools the first grew).
		grown := peak - base
		if after3 > after2+max(grown/4, 128<<10) {
			t.Errorf("heap %d KiB after three floods, %d KiB after two, %d KiB after one, baseline %d KiB, peak %d KiB: the floods' memory is held",
				after3>>10, after2>>10, after1>>10, base>>10, peak>>10)
		}
	}
}

// The cap on long polls counts lock obtains that may wait and rate limit
// waits too; an obtain that only tries is not a long poll.
func TestMaxWaitsLocksAndLimits(t *testing.T) {
	store := memStore(t)
	ts := startLimitServer(t, store, []string{"slow=1/1m"}, func(s *httpapi.Server) {
		s.MaxWaits = 1
		s.Locks = lockClient(t, storesOf(t, store).locks)
	})
	done := make(chan int, 1)
	go func() {
		for { // again while a probe below holds the place for its 10 ms
			r := ts.c.do(req{method: "POST", path: "/v1/reserve", json: map[string]any{"tubes": []string{"held"}, "timeout_ms": 20000}})
			if r.status != http.StatusTooManyRequests {
				done <- r.status
				return
			}
		}
	}()
	// The waiting reserve holds the one place.
	waitFor(t, "the reserve to wait", func() bool {
		return ts.c.do(req{method: "POST", path: "/v1/reserve", json: map[string]any{"tubes": []string{"x"}, "timeout_ms": 10}}).status == http.StatusTooManyRequests
	})
	ts.c.do(req{method: "POST", path: lockPath("l", "obtain"), json: map[string]any{"ttl_ms": 10000, "wait_ms": 1000}}).
		want(t, http.StatusTooManyRequests, httpapi.CodeTooManyWaits)
	ts.c.do(req{method: "POST", path: "/v1/limits/wait", json: map[string]any{"key": "k", "name": "slow"}}).
		want(t, http.StatusTooManyRequests, httpapi.CodeTooManyWaits)
	ts.c.do(req{method: "POST", path: lockPath("l", "obtain"), json: map[string]any{"ttl_ms": 10000}}).want(t, http.StatusOK, "")
	ts.c.put(t, "held", map[string]any{"body": "j"})
	if st := <-done; st != http.StatusOK {
		t.Fatalf("the waiting reserve: %d, want 200", st)
	}
	ts.c.do(req{method: "POST", path: "/v1/limits/wait", json: map[string]any{"key": "k", "name": "slow"}}).want(t, http.StatusOK, "")
}
