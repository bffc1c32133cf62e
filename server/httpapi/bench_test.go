package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/server/httpapi"
)

// benchClients is the number of concurrent clients of the benchmarks.
const benchClients = 16

// BenchmarkPutReserveDelete measures one job's put, reserve and delete,
// by 16 concurrent clients: over HTTP with keep-alive ("http") and by
// calling the queue in process ("direct"), on each back end. The ratio of
// the two is the cost of the HTTP path.
func BenchmarkPutReserveDelete(b *testing.B) {
	for _, be := range backends[:2] { // the embedded engine and one redis-server
		b.Run(be.Name, func(b *testing.B) {
			b.Run("direct", func(b *testing.B) {
				q, err := queue.New(be.Open(b), nil)
				if err != nil {
					b.Fatal(err)
				}
				defer q.Close()
				parallel(b, func() func() error {
					w := q.WithOwner(fmt.Sprintf("bench-%p", new(int)))
					ctx := context.Background()
					return func() error {
						if _, err := w.Put(ctx, "bench", queue.NewJob{Body: []byte("payload")}); err != nil {
							return err
						}
						j, err := w.Reserve(ctx, queue.ReserveOptions{Tubes: []string{"bench"}, Timeout: 5 * time.Second})
						if err != nil {
							return err
						}
						return w.Delete(ctx, j.ID)
					}
				})
			})
			b.Run("http", func(b *testing.B) {
				ts := startServer(b, be.Open(b), nil)
				tr := &http.Transport{MaxIdleConnsPerHost: benchClients}
				defer tr.CloseIdleConnections()
				hc := &http.Client{Transport: tr}
				parallel(b, func() func() error {
					return func() error {
						if _, err := post(hc, ts.url+"/v1/tubes/bench/jobs", `{"body":"payload"}`, nil, http.StatusCreated); err != nil {
							return err
						}
						body, err := post(hc, ts.url+"/v1/reserve", `{"tubes":["bench"],"timeout_ms":5000}`, nil, http.StatusOK)
						if err != nil {
							return err
						}
						var r httpapi.ReserveReply
						if err := json.Unmarshal(body, &r); err != nil {
							return err
						}
						req, _ := http.NewRequest("DELETE", fmt.Sprintf("%s/v1/jobs/%d", ts.url, r.Job.ID), nil)
						req.Header.Set(httpapi.LeaseHeader, r.Lease)
						_, err = send(hc, req, http.StatusNoContent)
						return err
					}
				})
			})
		})
	}
}

// parallel runs the operation newOp makes, per client, b.N times in all
// across benchClients goroutines.
func parallel(b *testing.B, newOp func() func() error) {
	b.SetParallelism((benchClients + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		op := newOp()
		for pb.Next() {
			if err := op(); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func post(hc *http.Client, url, body string, header map[string]string, want int) ([]byte, error) {
	req, err := http.NewRequest("POST", url, bytes.NewReader([]byte(body)))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	return send(hc, req, want)
}

func send(hc *http.Client, req *http.Request, want int) ([]byte, error) {
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != want {
		return nil, fmt.Errorf("%s %s: %d %s", req.Method, req.URL.Path, resp.StatusCode, body)
	}
	return body, nil
}
