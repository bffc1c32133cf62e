package httpapi

import (
	"net/http"
	"time"

	"github.com/hourglass-io/hourglass/internal/buildinfo"
)

// DashboardInfo is what the dashboard's header shows: which server this
// is and for how long it has run (GET /dashboard/info).
type DashboardInfo struct {
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
	bi := buildinfo.Read()
	writeJSON(w, http.StatusOK, DashboardInfo{Version: bi.Version, Commit: bi.Commit, GoVersion: bi.GoVersion,
		Store: s.StoreKind, StartedMS: s.started.UnixMilli(), UptimeMS: time.Since(s.started).Milliseconds()})
	return nil
}
