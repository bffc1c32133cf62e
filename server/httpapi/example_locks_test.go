package httpapi_test

import (
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/hourglass-io/hourglass/lock"
	"github.com/hourglass-io/hourglass/memstore"
	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/server/httpapi"
)

// Locks over HTTP: obtain, a refused second obtain, release by the owner
// token only.
func ExampleServer_locks() {
	store, err := memstore.New(nil)
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	q, _ := queue.New(store, nil)
	defer q.Close()
	locks, _ := lock.New(store.Locks(), nil)
	ts := httptest.NewServer((&httpapi.Server{Queue: q, Locks: locks}).Handler())
	defer ts.Close()

	obtain := func() (int, httpapi.LockGrant) {
		resp, err := http.Post(ts.URL+"/v1/locks/nightly-report/obtain", "application/json", strings.NewReader(`{"ttl_ms":60000}`))
		if err != nil {
			panic(err)
		}
		defer resp.Body.Close()
		var g httpapi.LockGrant
		json.NewDecoder(resp.Body).Decode(&g)
		return resp.StatusCode, g
	}
	release := func(token string) int {
		req, _ := http.NewRequest("POST", ts.URL+"/v1/locks/nightly-report/release", nil)
		req.Header.Set(httpapi.LockTokenHeader, token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}

	status, g := obtain()
	fmt.Println("obtain:", status, g.TTLMS, g.Fence > 0)
	status, _ = obtain()
	fmt.Println("obtain again:", status)
	fmt.Println("release by another token:", release("someone-else"))
	fmt.Println("release by the owner:", release(g.Token))
	status, g2 := obtain()
	fmt.Println("obtain after the release:", status, g2.Fence > g.Fence)
	// Output:
	// obtain: 200 60000 true
	// obtain again: 409
	// release by another token: 409
	// release by the owner: 204
	// obtain after the release: 200 true
}
