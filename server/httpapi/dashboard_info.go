package httpapi

import (
	"net/http"
	"strings"
	"time"

	"github.com/hourglass-io/hourglass/internal/buildinfo"
)

// DashboardInfo is what the dashboard's header shows: which server this
// is and for how long it has run (GET /dashboard/info).
type DashboardInfo struct {
	// Label is what the header shows: the version and the commit, each
	// once ("v1.2.3 · 4f2a9c1d0e7b", or "4f2a9c1" when a build from a
	// checkout is versioned by its commit).
	Label     string `json:"label"`
	Version   string `json:"version"`
	Commit    string `json:"commit,omitempty"`
	GoVersion string `json:"go_version"`
	Store     string `json:"store,omitempty"` // Server.StoreKind
	// StartedMS is when the server started, in Unix milliseconds;
	// UptimeMS how long ago that was, by the server's clock.
	StartedMS int64 `json:"started_ms"`
	UptimeMS  int64 `json:"uptime_ms"`
}

func (s *Server) serveInfo(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, s.info())
	return nil
}

func (s *Server) info() DashboardInfo {
	bi := buildinfo.Read()
	return DashboardInfo{Label: versionLabel(bi.Version, bi.Commit), Version: bi.Version, Commit: bi.Commit, GoVersion: bi.GoVersion,
		Store: s.StoreKind, StartedMS: s.started.UnixMilli(), UptimeMS: time.Since(s.started).Milliseconds()}
}

// versionLabel writes a build's version and commit once each: a version
// that is the commit, or that names it (git describe's "v1.2-3-g4f2a9c1"),
// is shown alone; a commit alone by its first 12 characters.
func versionLabel(version, commit string) string {
	c := strings.TrimSuffix(commit, "-dirty")
	short := c[:min(len(c), 12)]
	if strings.HasSuffix(commit, "-dirty") {
		short += "-dirty"
	}
	switch {
	case commit == "":
		return version
	case version == "" || version == "unknown" || version == "(devel)":
		return short
	case strings.HasPrefix(c, strings.TrimSuffix(version, "-dirty")) || strings.HasPrefix(version, c[:min(len(c), 7)]) ||
		strings.Contains(version, "-g"+c[:min(len(c), 7)]):
		return version
	}
	return version + " · " + short
}
