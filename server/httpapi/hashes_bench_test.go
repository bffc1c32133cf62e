package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/ttlhash"
)

// BenchmarkHashSetGet measures a set of one field with a TTL and a get of
// it, by 16 concurrent clients: over HTTP with keep-alive ("http") and by
// calling ttlhash in process ("direct"), on the embedded engine and one
// redis-server.
func BenchmarkHashSetGet(b *testing.B) {
	for _, be := range backends[:2] {
		b.Run(be.Name, func(b *testing.B) {
			b.Run("direct", func(b *testing.B) {
				hs := storesOf(b, be.Open(b)).hashes
				h, err := ttlhash.New(hs, nil)
				if err != nil {
					b.Fatal(err)
				}
				var n atomic.Int64
				parallel(b, func() func() error {
					hash := h.Hash(fmt.Sprintf("bench-%d", n.Add(1)))
					ctx := context.Background()
					return func() error {
						if _, err := hash.SetTTL(ctx, "f", []byte("payload"), time.Minute); err != nil {
							return err
						}
						_, _, err := hash.Get(ctx, "f")
						return err
					}
				})
			})
			b.Run("http", func(b *testing.B) {
				ts := startHashServer(b, be, nil, nil)
				tr := &http.Transport{MaxIdleConnsPerHost: benchClients}
				defer tr.CloseIdleConnections()
				hc := &http.Client{Transport: tr}
				var n atomic.Int64
				parallel(b, func() func() error {
					path := fmt.Sprintf("%s/v1/hashes/bench-%d/fields", ts.url, n.Add(1))
					return func() error {
						if _, err := post(hc, path, `{"fields":[{"name":"f","value":"payload"}],"ttl_ms":60000}`, nil, http.StatusOK); err != nil {
							return err
						}
						req, _ := http.NewRequest("GET", path+"?field=f", nil)
						_, err := send(hc, req, http.StatusOK)
						return err
					}
				})
			})
		})
	}
}
