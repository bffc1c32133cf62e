package httpapi_test

import (
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/hourglass-io/hourglass/memstore"
	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/server/httpapi"
	"github.com/hourglass-io/hourglass/ttlhash"
)

// A Server's Handler mounted on an httptest server: a put and a reserve.
func Example() {
	store, err := memstore.New(nil)
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	q, _ := queue.New(store, nil)
	defer q.Close()
	srv := &httpapi.Server{Queue: q}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()

	resp, _ := http.Post(ts.URL+"/v1/tubes/emails/jobs", "application/json", strings.NewReader(`{"body":"hello"}`))
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Print(resp.StatusCode, " ", string(b))

	resp, _ = http.Post(ts.URL+"/v1/reserve", "application/json", strings.NewReader(`{"tubes":["emails"],"timeout_ms":1000}`))
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(resp.StatusCode, strings.Contains(string(b), `"body":"hello"`), strings.Contains(string(b), `"lease":"hgl_`))
	// Output:
	// 201 {"id":1,"duplicate":false}
	// 200 true true
}

// With a token, calls without it are refused.
func ExampleServer_authToken() {
	store, err := memstore.New(nil)
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	q, _ := queue.New(store, nil)
	defer q.Close()
	ts := httptest.NewServer((&httpapi.Server{Queue: q, AuthToken: "s3cret"}).Handler())
	defer ts.Close()

	resp, _ := http.Get(ts.URL + "/v1/stats")
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Print(resp.StatusCode, " ", string(b))

	req, _ := http.NewRequest("GET", ts.URL+"/v1/stats", nil)
	req.Header.Set("Authorization", "Bearer s3cret")
	resp, _ = http.DefaultClient.Do(req)
	resp.Body.Close()
	fmt.Println(resp.StatusCode)
	// Output:
	// 401 {"error":{"code":"unauthorized","message":"missing or wrong bearer token"}}
	// 200
}

// Expiring hash fields: a field set with a TTL, read back with its
// deadline, and its expiry event read by a consumer group.
func ExampleServer_hashes() {
	store, err := memstore.New(nil)
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	q, _ := queue.New(store, nil)
	defer q.Close()
	hashes, _ := ttlhash.New(store.Hashes(), nil)
	ts := httptest.NewServer((&httpapi.Server{Queue: q, Hashes: hashes}).Handler())
	defer ts.Close()

	post := func(path, body string) string {
		resp, _ := http.Post(ts.URL+path, "application/json", strings.NewReader(body))
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return fmt.Sprint(resp.StatusCode, " ", string(b))
	}
	fmt.Println(strings.TrimSpace(post("/v1/hash-groups/audit", "")))
	fmt.Print(post("/v1/hashes/sessions/fields", `{"fields":[{"name":"s1","value":"alice"}],"ttl_ms":20}`))
	// The embedded engine expires the field on its own timer; the read
	// waits for the event.
	ev := post("/v1/hash-groups/audit/read", `{"consumer":"w1","timeout_ms":5000}`)
	fmt.Println(strings.Contains(ev, `"field":"s1"`), strings.Contains(ev, `"value_base64":"YWxpY2U="`))
	// Output:
	// 204
	// 200 {"added":1}
	// true true
}
