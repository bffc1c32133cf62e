package httpapi

import (
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"
)

// What a browser may send to the server from a page of another site, and
// how the server refuses it (guard, in front of every route):
//
//   - The Host of every request must be one the server answers to
//     (Server.AllowedHosts; by default the loopback names and the host the
//     server listens on): a page that rebinds its own DNS name to 127.0.0.1
//     names its own host, and is refused (403 forbidden_host).
//   - A request that changes state (any method but GET, HEAD, OPTIONS) is
//     refused (403 cross_site) when the browser says it comes from another
//     site (Sec-Fetch-Site other than same-origin or none) or names an
//     Origin other than the server's own.
//   - Its body, when it has one, must be application/json or
//     application/octet-stream (415): the media types a page can send
//     without the browser asking the server first are text/plain, forms
//     and multipart.
//
// Every reply carries X-Content-Type-Options: nosniff, and the API's and
// the metrics' Cache-Control: no-store.

// loopbackHosts are the names the server answers to by default.
var loopbackHosts = []string{"localhost", "127.0.0.1", "::1"}

// guard wraps h with the checks above.
func (s *Server) guard(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		if strings.HasPrefix(r.URL.Path, "/v1/") || r.URL.Path == "/metrics" {
			w.Header().Set("Cache-Control", "no-store")
		}
		if err := s.checkRequest(r); err != nil {
			writeError(w, r, err)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// checkRequest applies the host, site and media-type rules to r, and
// refuses a path or query that is not UTF-8, or a query the server could
// not read whole (Go's parser keeps at most 10,000 parameters).
func (s *Server) checkRequest(r *http.Request) error {
	if !s.hostAllowed(r.Host) {
		return apiError{http.StatusForbidden, CodeForbiddenHost, "httpapi: host " + quote(r.Host) + " is not one this server answers to (see --allowed-hosts)", 0}
	}
	if !utf8.ValidString(r.URL.Path) {
		return badRequest("httpapi: the path is not UTF-8")
	}
	if r.URL.RawQuery != "" {
		q, err := url.ParseQuery(r.URL.RawQuery)
		if err != nil {
			return badRequest("httpapi: the query cannot be read whole: %v", err)
		}
		for k, vs := range q {
			if !utf8.ValidString(k) {
				return badRequest("httpapi: a query parameter's name is not UTF-8")
			}
			for _, v := range vs {
				if !utf8.ValidString(v) {
					return badRequest("httpapi: query parameter %s is not UTF-8", k)
				}
			}
		}
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return nil
	}
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		return apiError{http.StatusForbidden, CodeCrossSite, "httpapi: a " + site + " request may not change state", 0}
	}
	if origin := r.Header.Get("Origin"); origin != "" {
		u, err := url.Parse(origin)
		if err != nil || u.Host == "" || !strings.EqualFold(u.Host, r.Host) {
			return apiError{http.StatusForbidden, CodeCrossSite, "httpapi: a request from origin " + quote(origin) + " may not change state", 0}
		}
	}
	if r.ContentLength != 0 || len(r.TransferEncoding) > 0 {
		ct, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
		if err != nil || (ct != "application/json" && ct != "application/octet-stream") {
			return apiError{http.StatusUnsupportedMediaType, CodeUnsupported, "httpapi: a body must be application/json or application/octet-stream, not " + quote(r.Header.Get("Content-Type")), 0}
		}
	}
	return nil
}

// hostAllowed reports whether the server answers to host (a Host header:
// a name or address, with or without a port).
func (s *Server) hostAllowed(host string) bool {
	name := host
	if h, _, err := net.SplitHostPort(host); err == nil {
		name = h
	}
	name = strings.TrimSuffix(strings.Trim(name, "[]"), ".")
	allowed := s.AllowedHosts
	if allowed == nil {
		s.mu.Lock()
		allowed = append(append([]string(nil), loopbackHosts...), s.listenHosts...)
		s.mu.Unlock()
	}
	for _, a := range allowed {
		if a == "*" || strings.EqualFold(strings.Trim(a, "[]"), name) {
			return true
		}
	}
	return false
}

// listening notes the host of an address the server serves on, for the
// default AllowedHosts: an unspecified address (0.0.0.0, ::) answers to any
// name, which the server cannot know, so it allows every host.
func (s *Server) listening(addr net.Addr) {
	host := addr.String()
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "*"
	}
	s.mu.Lock()
	s.listenHosts = append(s.listenHosts, host)
	s.mu.Unlock()
}

func quote(s string) string {
	if len(s) > 100 {
		s = s[:100] + "…"
	}
	return `"` + s + `"`
}
