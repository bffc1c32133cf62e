package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
	"github.com/hourglass-io/hourglass/internal/testkit/backendtest"
	"github.com/hourglass-io/hourglass/internal/testkit/redistest"
	"github.com/hourglass-io/hourglass/internal/testkit/storetest"
	"github.com/hourglass-io/hourglass/lock"
	"github.com/hourglass-io/hourglass/memstore"
	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/ratelimit"
	"github.com/hourglass-io/hourglass/redisstore"
	"github.com/hourglass-io/hourglass/schedule"
	"github.com/hourglass-io/hourglass/server/httpapi"
	"github.com/hourglass-io/hourglass/ttlhash"
)

func TestMain(m *testing.M) {
	storetest.RunDebounceChild(httpPutter)       // a putter process of BenchmarkDebounceProcesses
	storetest.RunWindowsChild(httpWindowsClient) // a caller process of BenchmarkKeyWindowsProcesses
	redistest.Main(m)
}

// backend is a store to run the server on.
type backend = backendtest.Backend

// backends are the stores to run the server on.
var backends = []backend{backendtest.MemoryBackend, backendtest.RedisBackend, backendtest.ClusterBackend}

var (
	memStore     = backendtest.MemoryBackend.Open
	redisStore   = backendtest.RedisBackend.Open
	clusterStore = backendtest.ClusterBackend.Open
)

// forEachBackend runs f as a subtest on each back end.
// stores are the other primitives' stores of a back end.
type stores struct {
	limits ratelimit.Store
	hashes ttlhash.Store
	locks  lock.Store
	// schedules is the store of schedules.
	schedules schedule.Store
}

// storesOf returns the other primitives' stores of the back end whose job
// store is s.
func storesOf(t testing.TB, s queue.Store) stores {
	t.Helper()
	switch s := s.(type) {
	case *memstore.Store:
		return stores{s.RateLimits(), s.Hashes(), s.Locks(), s.Schedules()}
	case *redisstore.Store:
		return stores{s.RateLimits(), s.Hashes(), s.Locks(), s.Schedules()}
	}
	t.Fatalf("no stores of the other primitives beside a %T", s)
	return stores{}
}

// lockClient returns a lock.Client of st, as a Server's Locks.
func lockClient(t testing.TB, st lock.Store) *lock.Client {
	t.Helper()
	c, err := lock.New(st, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// scheduleClient returns a schedule.Client of st, as a Server's Schedules.
func scheduleClient(t testing.TB, st schedule.Store) *schedule.Client {
	t.Helper()
	c, err := schedule.New(st, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func forEachBackend(t *testing.T, f func(t *testing.T, open func(testing.TB) queue.Store)) {
	for _, b := range backends {
		t.Run(b.Name, func(t *testing.T) { f(t, b.Open) })
	}
}

// testServer is a Server serving on 127.0.0.1 for one test.
type testServer struct {
	srv *httpapi.Server
	q   *queue.Queue
	url string
	c   *client
}

// startServer serves a fresh queue on store; configure may set fields.
// The server is shut down when the test ends.
func startServer(t testing.TB, store queue.Store, configure func(*httpapi.Server)) *testServer {
	t.Helper()
	q, err := queue.New(store, &queue.Options{MaxJobSize: 4096})
	if err != nil {
		t.Fatal(err)
	}
	srv := &httpapi.Server{Queue: q, Logger: backendtest.Logger(t, slog.LevelInfo)}
	if configure != nil {
		configure(srv)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv.Handler() // sets the defaults (Metrics) before the test reads them
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	ts := &testServer{srv: srv, q: q, url: "http://" + l.Addr().String()}
	ts.c = newClient(t, ts.url, srv.AuthToken)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if err := <-served; !errors.Is(err, httpapi.ErrServerClosed) {
			t.Errorf("Serve returned %v, want ErrServerClosed", err)
		}
		q.Close()
	})
	return ts
}

// The OpenAPI document, loaded once and checked.
var (
	specOnce   sync.Once
	specRouter routers.Router
	specErr    error
)

func spec(t testing.TB) routers.Router {
	t.Helper()
	specOnce.Do(func() {
		loader := openapi3.NewLoader()
		doc, err := loader.LoadFromData(httpapi.OpenAPI())
		if err != nil {
			specErr = err
			return
		}
		if err := doc.Validate(loader.Context); err != nil {
			specErr = err
			return
		}
		doc.Servers = nil // the tests' servers listen on any port
		specRouter, specErr = legacy.NewRouter(doc)
	})
	if specErr != nil {
		t.Fatalf("the OpenAPI document: %v", specErr)
	}
	return specRouter
}

// client calls the server and checks every request and reply of a /v1
// route against the OpenAPI document.
type client struct {
	t     testing.TB
	base  string
	token string
	hc    *http.Client
}

func newClient(t testing.TB, base, token string) *client {
	return &client{t: t, base: base, token: token, hc: &http.Client{Timeout: 60 * time.Second}}
}

// reply is a response, its body read.
type reply struct {
	status int
	header http.Header
	body   []byte
}

// decode decodes the JSON body into v.
func (r reply) decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decoding %s: %v", r.body, err)
	}
}

// errCode returns the code of an error reply, "" when the body is not one.
func (r reply) errCode() string {
	var e struct {
		Error struct{ Code string } `json:"error"`
	}
	json.Unmarshal(r.body, &e)
	return e.Error.Code
}

// req describes a request.
type req struct {
	method, path string
	json         any    // marshalled as the body, application/json
	raw          []byte // the body as it is, with contentType
	contentType  string
	header       map[string]string
	// offSpec: the request is deliberately outside what the document
	// allows (bad input); only the reply is checked.
	offSpec bool
}

// do sends r and returns the reply, failing the test when the request
// (unless offSpec) or the reply does not match the document.
func (c *client) do(r req) reply {
	c.t.Helper()
	var body []byte
	ct := r.contentType
	if r.json != nil {
		b, err := json.Marshal(r.json)
		if err != nil {
			c.t.Fatal(err)
		}
		body, ct = b, "application/json"
	} else if r.raw != nil {
		body = r.raw
	}
	hr, err := http.NewRequest(r.method, c.base+r.path, bytes.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	if ct != "" {
		hr.Header.Set("Content-Type", ct)
	}
	if c.token != "" {
		hr.Header.Set("Authorization", "Bearer "+c.token)
	}
	for k, v := range r.header {
		hr.Header.Set(k, v)
	}
	resp, err := c.hc.Do(hr)
	if err != nil {
		c.t.Fatalf("%s %s: %v", r.method, r.path, err)
	}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		c.t.Fatalf("%s %s: reading the reply: %v", r.method, r.path, err)
	}
	out := reply{status: resp.StatusCode, header: resp.Header, body: got}
	if strings.HasPrefix(r.path, "/v1/") {
		c.check(r, hr, body, out)
	}
	return out
}

// check validates a request and its reply against the OpenAPI document.
func (c *client) check(r req, hr *http.Request, body []byte, out reply) {
	c.t.Helper()
	hr.Body = io.NopCloser(bytes.NewReader(body))
	route, params, err := spec(c.t).FindRoute(hr)
	if err != nil {
		if r.offSpec {
			return
		}
		c.t.Fatalf("%s %s: not in the OpenAPI document: %v", r.method, r.path, err)
	}
	opts := &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, IncludeResponseStatus: true}
	in := &openapi3filter.RequestValidationInput{Request: hr, PathParams: params, Route: route, Options: opts}
	if !r.offSpec {
		if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil {
			c.t.Fatalf("%s %s: the request does not match the OpenAPI document: %v", r.method, r.path, err)
		}
	}
	rin := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: out.status, Header: out.header, Options: opts}
	rin.SetBodyBytes(out.body)
	if err := openapi3filter.ValidateResponse(context.Background(), rin); err != nil {
		c.t.Fatalf("%s %s: the reply %d %s does not match the OpenAPI document: %v", r.method, r.path, out.status, out.body, err)
	}
}

// want fails the test unless the reply has status (and, for an error,
// code).
func (r reply) want(t testing.TB, status int, code string) reply {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d (%s), want %d", r.status, r.body, status)
	}
	if code != "" && r.errCode() != code {
		t.Fatalf("error code %q (%s), want %q", r.errCode(), r.body, code)
	}
	return r
}
