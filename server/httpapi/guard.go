package httpapi

import (
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
)

// DefaultAllowedHosts are the Host header names a Server answers when
// Server.AllowedHosts is nil: the loopback names. Serve adds the host its
// listener's address names (unless it is an unspecified address such as
// 0.0.0.0, which names no host).
var DefaultAllowedHosts = []string{"localhost", "127.0.0.1", "::1"}

// The codes of the replies of the guard (see guard).
const (
	CodeMisdirected = "misdirected_host" // 421: a Host header not in the allowed hosts
	CodeCrossSite   = "cross_site"       // 403: a state-changing request a browser sent from another site
)

// contentSecurityPolicy is the dashboard page's: its own scripts, styles
// and fetches, nothing inline, no frames, no forms.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// hostSet is the set of Host names a Server answers.
type hostSet struct {
	mu    sync.RWMutex
	any   bool
	names map[string]bool
}

// add adds a host name (or "*": every host).
func (h *hostSet) add(name string) {
	name = normHost(name)
	if name == "" {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if name == "*" {
		h.any = true
		return
	}
	if h.names == nil {
		h.names = make(map[string]bool)
	}
	h.names[name] = true
}

// allows reports whether the Host header hostport names an allowed host.
func (h *hostSet) allows(hostport string) bool {
	name := hostOf(hostport)
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.any || h.names[name]
}

// hostOf returns the host of a Host header ("[::1]:7480" → "::1"),
// lower-cased.
func hostOf(hostport string) string {
	if host, _, err := net.SplitHostPort(hostport); err == nil {
		return normHost(host)
	}
	return normHost(hostport)
}

// normHost lower-cases a host name and strips an IPv6 literal's brackets
// and a fully qualified name's final dot.
func normHost(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	s = strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")
	if len(s) > 1 {
		s = strings.TrimSuffix(s, ".")
	}
	return s
}

// addListener adds the host a listener's address names, unless it names
// every interface (0.0.0.0, ::), which names no host.
func (h *hostSet) addListener(l net.Listener) {
	host, _, err := net.SplitHostPort(l.Addr().String())
	if err != nil {
		return
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		return
	}
	h.add(host)
}

// MaxQueryParams is the most query parameters a request may carry: what
// net/url parses (it drops those beyond). More is 400 bad_request, never a
// silently shortened list.
const MaxQueryParams = 10000

// queryParams counts the parameters of a raw query as net/url splits them.
func queryParams(raw string) int {
	if raw == "" {
		return 0
	}
	return strings.Count(raw, "&") + 1
}

// stateChanging reports whether a request of this method may change state.
func stateChanging(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return true
}

// guard wraps the whole handler: the Host allow-list (against DNS
// rebinding), the refusal of state-changing requests a browser could send
// from another site without a preflight, and the security headers.
func (s *Server) guard(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("X-Content-Type-Options", "nosniff")
		if !strings.HasPrefix(r.URL.Path, "/dashboard/static/") {
			hd.Set("Cache-Control", "no-store")
		}
		if r.URL.Path == "/" {
			hd.Set("Content-Security-Policy", contentSecurityPolicy)
			hd.Set("X-Frame-Options", "DENY")
			hd.Set("Referrer-Policy", "no-referrer")
		}
		if err := s.checkRequest(r); err != nil {
			writeError(w, r, err)
			s.Metrics.observe("http", "http", "refused", 0, err)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// checkRequest returns the error reply of a request the guard refuses.
func (s *Server) checkRequest(r *http.Request) error {
	// /healthz answers every host: load balancers and orchestrators probe
	// it by address, and it tells nothing but up or down.
	if r.URL.Path != "/healthz" && !s.hosts.allows(r.Host) {
		return apiError{http.StatusMisdirectedRequest, CodeMisdirected, "host " + quoteHost(r.Host) + " is not an allowed host (hourglass serve --allowed-hosts)", 0}
	}
	if n := queryParams(r.URL.RawQuery); n > MaxQueryParams {
		return badRequest("%d query parameters: want at most %d", n, MaxQueryParams)
	}
	if !stateChanging(r.Method) {
		return nil
	}
	if r.Header.Get("Sec-Fetch-Site") == "cross-site" {
		return apiError{http.StatusForbidden, CodeCrossSite, "a cross-site request may not change state (Sec-Fetch-Site: cross-site)", 0}
	}
	if origin, ok := r.Header["Origin"]; ok {
		if len(origin) != 1 || !sameHost(origin[0], r.Host) {
			return apiError{http.StatusForbidden, CodeCrossSite, "a request from another origin may not change state (Origin does not match Host)", 0}
		}
	}
	ct := r.Header.Get("Content-Type")
	if _, has := r.Header["Content-Type"]; has || r.ContentLength != 0 {
		mt, _, err := mime.ParseMediaType(ct)
		if ct == "" || err != nil || (mt != "application/json" && mt != "application/octet-stream") {
			if ct == "" {
				ct = "none"
			}
			return apiError{http.StatusUnsupportedMediaType, CodeUnsupported, "a request body must be application/json (or application/octet-stream where the API takes raw bytes), not " + quoteHost(ct), 0}
		}
	}
	return nil
}

// sameHost reports whether origin (a URL) names the host and port of the
// Host header.
func sameHost(origin, host string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	oh, op := u.Hostname(), u.Port()
	if op == "" {
		switch u.Scheme {
		case "http":
			op = "80"
		case "https":
			op = "443"
		}
	}
	hh, hp, err := net.SplitHostPort(host)
	if err != nil {
		hh, hp = host, ""
	}
	if hp == "" {
		hp = op // the Host header leaves the scheme's default port out
	}
	return normHost(oh) == normHost(hh) && op == hp
}

// quoteHost quotes a client's value for an error message, cut short.
func quoteHost(s string) string {
	if len(s) > 100 {
		s = s[:100] + "…"
	}
	return sprintf("%q", s)
}
