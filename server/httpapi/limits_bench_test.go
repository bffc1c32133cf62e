package httpapi_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hourglass-io/hourglass/ratelimit"
	"github.com/hourglass-io/hourglass/server/httpapi"
)

// BenchmarkLimitAllow measures rate limit decisions by 16 concurrent
// clients, each on keys of its own among 1,000: over HTTP with keep-alive
// against a Server on a real listener ("http": POST /v1/limits/allow with a
// named limit) and by calling the Limiter in process ("direct"), on the
// embedded engine and on one redis-server. It reports decisions per
// second; the ratio of the two ns/op is the cost of the HTTP path.
func BenchmarkLimitAllow(b *testing.B) {
	const spec = "100/1s,burst=100"
	limits, err := httpapi.ParseLimits(spec)
	if err != nil {
		b.Fatal(err)
	}
	var next atomic.Int64
	key := func() string { return fmt.Sprintf("user:%d", next.Add(1)%1000) }
	for _, be := range backends[:2] { // the embedded engine and one redis-server
		b.Run(be.Name, func(b *testing.B) {
			b.Run("direct", func(b *testing.B) {
				l, err := ratelimit.New(storesOf(b, be.Open(b)).limits, nil)
				if err != nil {
					b.Fatal(err)
				}
				ctx := context.Background()
				parallel(b, func() func() error {
					return func() error {
						_, err := l.Allow(ctx, key(), limits...)
						return err
					}
				})
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
			})
			b.Run("http", func(b *testing.B) {
				ts := startLimitServer(b, be.Open(b), []string{"bench=" + spec}, nil)
				tr := &http.Transport{MaxIdleConnsPerHost: benchClients}
				defer tr.CloseIdleConnections()
				hc := &http.Client{Transport: tr}
				parallel(b, func() func() error {
					return func() error {
						return allowOverHTTP(hc, ts.url, `{"key":"`+key()+`","name":"bench"}`)
					}
				})
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
			})
		})
	}
}

// allowOverHTTP sends one allow; a 200 and a 429 are both decisions.
func allowOverHTTP(hc *http.Client, base, body string) error {
	req, err := http.NewRequest("POST", base+"/v1/limits/allow", strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusTooManyRequests {
		return fmt.Errorf("allow: status %d", resp.StatusCode)
	}
	return nil
}
