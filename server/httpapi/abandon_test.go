package httpapi_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/server/httpapi"
)

// Waits whose clients leave give back every slot, whatever order the
// server notices them in: limit 1 per 20 s, an allow, five waits (slots 20
// to 100 s away) abandoned together; the next slot is then the first again.
// 1 per 20 s rather than 2 s leaves a loaded machine time to make the five
// reservations before the first slot comes.
func TestLimitWaitsAbandonedTogetherGiveBack(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open func(testing.TB) queue.Store) {
		ts := startLimitServer(t, open(t), []string{"every20s=1/20s"}, func(s *httpapi.Server) { s.MaxWait = 5 * time.Minute })
		c := ts.c
		if lr, r := c.allow(t, map[string]any{"key": "a", "name": "every20s"}); r.status != http.StatusOK || !lr.Allowed {
			t.Fatalf("the first allow: %d %+v", r.status, lr)
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var wg sync.WaitGroup
		errs := make(chan error, 5)
		for range 5 {
			wg.Go(func() {
				hr, _ := http.NewRequestWithContext(ctx, "POST", ts.url+"/v1/limits/wait", strings.NewReader(`{"key":"a","name":"every20s","max_wait_ms":300000}`))
				hr.Header.Set("Content-Type", "application/json")
				resp, err := http.DefaultClient.Do(hr)
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				errs <- err
			})
		}
		// All five hold their slots once the next free one is beyond 100 s.
		waitFor(t, "the five waits to reserve", func() bool {
			lr, r := c.allow(t, map[string]any{"key": "a", "name": "every20s"})
			return r.status == http.StatusTooManyRequests && lr.RetryAfterMS > 100_000
		})
		cancel()
		wg.Wait()
		close(errs)
		for err := range errs {
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("an abandoned wait returned %v, want context.Canceled", err)
			}
		}
		waitFor(t, "the server to end the waits", func() bool { return limitWaits(t, ts) == 0 })
		lr, r := c.allow(t, map[string]any{"key": "a", "name": "every20s"})
		r.want(t, http.StatusTooManyRequests, httpapi.CodeRateLimited)
		if lr.RetryAfterMS > 20_000 {
			t.Fatalf("after five abandoned waits, retry after %d ms, want at most 20000 (every slot given back)", lr.RetryAfterMS)
		}
	})
}

// Fair lock waits whose clients leave give back their places in line: once
// the holder releases, a try gets the lock at once, passing over no one.
func TestLockWaitsAbandonedGiveBack(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open func(testing.TB) queue.Store) {
		ts := startLockServer(t, open(t), nil)
		c := ts.c
		g := c.obtain(t, "ab", nil)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var wg sync.WaitGroup
		for range 5 {
			wg.Go(func() {
				hr, _ := http.NewRequestWithContext(ctx, "POST", ts.url+lockPath("ab", "obtain"), strings.NewReader(`{"wait_ms":30000,"fair":true}`))
				hr.Header.Set("Content-Type", "application/json")
				if resp, err := http.DefaultClient.Do(hr); err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					t.Errorf("an obtain of a held lock answered %d", resp.StatusCode)
				}
			})
		}
		waitFor(t, "the five obtains to wait", func() bool { return inFlight(t, ts, "locks", "obtain") == 5 })
		cancel()
		wg.Wait()
		waitFor(t, "the server to end the waits", func() bool { return inFlight(t, ts, "locks", "obtain") == 0 })
		c.do(req{method: "POST", path: lockPath("ab", "release"), header: lockToken(g.Token)}).want(t, http.StatusNoContent, "")
		c.obtain(t, "ab", nil) // a try: refused while a live waiter is in line
	})
}
