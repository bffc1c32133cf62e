package httpapi

import (
	"context"
	"crypto/subtle"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// A primitive is what one of hourglass's primitives adds to the server: its
// routes under /v1, its fragment of the OpenAPI document and its panel of
// the dashboard. Each primitive lives in a file of its own (jobs.go) and is
// listed in primitives; adding one (as rate limits, expiring hashes, locks
// and schedules were) is adding such a file, an openapi/<name>.json
// fragment, a dashboard/<name>.html template and a line here. See
// docs/http-api.md, "Adding a primitive".
type primitive struct {
	// name is the metrics label "primitive", the OpenAPI fragment's file
	// name (openapi/<name>.json) and the dashboard template's
	// (dashboard/<name>.html, defining "panel-<name>").
	name string
	// pkg is the Go package whose sentinels the primitive's routes
	// return, as a path from the module's root ("queue"): each of its
	// sentinels has a line in errorTable (TestRegistries checks), and its
	// messages' prefix in packagePrefixes is made from it.
	pkg string
	// enabled reports whether the Server has what the primitive needs (its
	// store); a disabled primitive serves no route and shows no panel.
	enabled func(s *Server) bool
	// routes returns the primitive's routes.
	routes func(s *Server) []route
	// panel returns the data its dashboard template renders.
	panel func(ctx context.Context, s *Server) (any, error)
}

// primitives served, in the dashboard's order.
var primitives = []primitive{
	jobsPrimitive,
	limitsPrimitive,
	hashesPrimitive,
	locksPrimitive,
	schedulesPrimitive,
}

// route is one endpoint of a primitive.
type route struct {
	method  string // GET, PUT, POST, DELETE
	path    string // an http.ServeMux pattern path: /v1/jobs/{id}
	command string // the metrics label "command": put, reserve, …
	handle  func(w http.ResponseWriter, r *http.Request) error
}

// routes builds the handler of every route.
func (s *Server) routes() *http.ServeMux {
	mux := http.NewServeMux()
	for _, p := range primitives {
		if !p.enabled(s) {
			continue
		}
		for _, rt := range p.routes(s) {
			mux.Handle(rt.method+" "+rt.path, s.api(p.name, rt.command, rt.handle))
		}
	}
	mux.Handle("GET /v1/openapi.json", http.HandlerFunc(serveOpenAPI))
	mux.Handle("/v1/", s.api("http", "unknown", func(w http.ResponseWriter, r *http.Request) error {
		if a := allowed(mux, r); a != "" {
			w.Header().Set("Allow", a)
			return apiError{http.StatusMethodNotAllowed, CodeNotAllowed, "httpapi: method " + r.Method + " not allowed on " + r.URL.Path, 0}
		}
		return apiError{http.StatusNotFound, CodeNotFound, "httpapi: no route " + r.Method + " " + r.URL.Path, 0}
	}))
	mux.Handle("GET /metrics", s.authorized(s.Metrics.handler()))
	mux.HandleFunc("GET /healthz", s.healthz)
	mux.Handle("GET /dashboard/panels", s.api("dashboard", "panels", s.servePanels))
	mux.Handle("GET /dashboard/info", s.api("dashboard", "info", s.serveInfo))
	if s.Queue != nil {
		mux.Handle("GET /dashboard/browse", s.api("dashboard", "browse", s.serveBrowse))
		mux.Handle("GET /dashboard/job", s.api("dashboard", "job", s.serveJob))
		mux.Handle("GET /dashboard/series", s.api("dashboard", "series", s.serveSeries))
		mux.Handle("POST /dashboard/tubes/{tube}/delete-buried", s.api("dashboard", "delete-buried", s.deleteBuried))
	}
	mux.HandleFunc("GET /{$}", s.serveDashboard)
	mux.Handle("GET /dashboard/static/", http.StripPrefix("/dashboard/", http.FileServerFS(dashboardFS)))
	return mux
}

// api wraps a route's handler: authorization, the metrics, errors as JSON.
func (s *Server) api(prim, command string, h func(w http.ResponseWriter, r *http.Request) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		inFlight := s.Metrics.inFlight.WithLabelValues(prim, command)
		inFlight.Inc()
		defer inFlight.Dec()
		var err error
		if !s.checkToken(r) {
			err = apiError{http.StatusUnauthorized, CodeUnauthorized, "httpapi: missing or wrong bearer token", 0}
		} else {
			err = h(w, r)
		}
		if err != nil {
			if storeFailure(err) {
				s.logger().Warn("store failure", "primitive", prim, "command", command, "err", err)
			}
			writeError(w, r, err)
		}
		s.Metrics.observe("http", prim, command, time.Since(start), err)
	})
}

// authorized wraps a plain handler with the bearer-token check.
func (s *Server) authorized(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.checkToken(r) {
			writeError(w, r, apiError{http.StatusUnauthorized, CodeUnauthorized, "httpapi: missing or wrong bearer token", 0})
			return
		}
		h.ServeHTTP(w, r)
	})
}

// checkToken reports whether r carries the bearer token, or none is needed.
// The comparison takes the same time whatever the tokens' contents.
func (s *Server) checkToken(r *http.Request) bool {
	if s.AuthToken == "" {
		return true
	}
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return false
	}
	// No trimming: net/http already drops the spaces and tabs around a
	// header's value, and any other space around the token is a wrong token.
	return subtle.ConstantTimeCompare([]byte(got), []byte(s.AuthToken)) == 1
}

// healthz answers 200 "ok" when the store answers, 503 otherwise.
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	check := s.Health
	if check == nil {
		check = func(ctx context.Context) error { _, err := s.Queue.Stats(ctx); return err }
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if err := check(ctx); err != nil {
		s.logger().Warn("health check failed", "err", err)
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintln(w, "store unavailable")
		return
	}
	fmt.Fprintln(w, "ok")
}

// allowed lists the methods the mux serves r's path with.
func allowed(mux *http.ServeMux, r *http.Request) string {
	var ms []string
	for _, m := range []string{http.MethodGet, http.MethodPut, http.MethodPost, http.MethodDelete} {
		r2 := r.Clone(r.Context())
		r2.Method = m
		if _, p := mux.Handler(r2); p != "" && p != "/v1/" {
			ms = append(ms, m)
			if m == http.MethodGet {
				ms = append(ms, http.MethodHead) // a GET route serves HEAD
			}
		}
	}
	return strings.Join(ms, ", ")
}

// notAllowed returns the methods r's path is served for (its Allow
// header) when r's own method is not one of them, else "".
func notAllowed(mux *http.ServeMux, r *http.Request) string {
	if _, p := mux.Handler(r); p != "" && p != "/v1/" {
		return ""
	}
	return allowed(mux, r)
}

// longPoll returns the context of a long poll: r's, ended by Shutdown too.
// When the poll waits, it takes one of the server's places for waits
// first (enterWait), or fails with too_many_waits; done gives back what
// it took.
func (s *Server) longPoll(r *http.Request, waits bool) (ctx context.Context, done func(), err error) {
	leave := func() {}
	if waits {
		if leave, err = s.enterWait(); err != nil {
			return nil, nil, err
		}
	}
	ctx, cancel := context.WithCancel(r.Context())
	stop := context.AfterFunc(s.stop, cancel)
	return ctx, func() { stop(); cancel(); leave() }, nil
}

// pollErr is the error of a long poll (one made under longPoll's
// context) that ended with err: shutting_down when the server's shutdown
// ended it (stopped), else err.
func (s *Server) pollErr(r *http.Request, err error) error {
	if s.stopped(r) {
		return shuttingDown
	}
	return err
}

// stopped reports whether the server's shutdown, not the client, ended
// the long poll of r: the one shutdown check of the long polls.
func (s *Server) stopped(r *http.Request) bool {
	return r.Context().Err() == nil && s.stop.Err() != nil
}

func sprintf(format string, a ...any) string { return fmt.Sprintf(format, a...) }
