package httpapi

import (
	"bytes"
	"cmp"
	"context"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/hourglass-io/hourglass/queue"
)

// The dashboard: page.html is the page; each primitive's panel is the
// template "panel-<name>" in dashboard/<name>.html, rendered with what the
// primitive's panel function returns. static/ holds the CSS and the script
// that reloads the panels every two seconds (GET /dashboard/panels) and
// runs the buttons through the /v1 API. Nothing is loaded from elsewhere.
//
//go:embed dashboard
var dashboardEmbed embed.FS

var (
	dashboardFS, _ = fs.Sub(dashboardEmbed, "dashboard")
	dashboardTmpl  = template.Must(template.New("page.html").Funcs(template.FuncMap{
		"dur":     durMS,
		"preview": preview,
		"bytes":   byteSize,
		"tubeActions": func(t TubeStats, opts []pauseOpt) tubeActions {
			return tubeActions{TubeStats: t, PauseOpts: opts}
		},
		"when":       when,
		"limitsCell": limitsCellOf,
	}).ParseFS(dashboardEmbed, "dashboard/*.html"))
)

// maxPanelTubes bounds the tubes the jobs panel reads (four store calls each).
const maxPanelTubes = 100

type pageData struct {
	Info      DashboardInfo
	Panels    template.HTML
	NeedToken bool
	Views     []dashView
}

// dashView is a view of the dashboard: a primitive's panel, or the
// store's facts; its name is the "view" of GET /dashboard/panels and of
// the page's location (#view=limits).
type dashView struct {
	Name, Label string
	panel       func(ctx context.Context, s *Server) (any, error)
	template    string
}

// views returns the views the Server has, in the navigation's order: the
// tubes first (the default view), the store last.
func (s *Server) views() []dashView {
	labels := map[string]string{"jobs": "Tubes", "limits": "Limits", "hashes": "Hashes", "locks": "Locks", "schedules": "Schedules"}
	var out []dashView
	for _, p := range primitives {
		if p.enabled(s) {
			out = append(out, dashView{Name: p.name, Label: labels[p.name], panel: p.panel, template: "panel-" + p.name})
		}
	}
	return append(out, dashView{Name: "store", Label: "Store", panel: storePanel, template: "panel-store"})
}

// serveDashboard serves the page. Without a token to check, the default
// view is rendered into it; with one, the script asks for it with the
// token.
func (s *Server) serveDashboard(w http.ResponseWriter, r *http.Request) {
	d := pageData{NeedToken: s.AuthToken != "", Views: s.views()}
	if !d.NeedToken {
		d.Info = s.info()
	}
	if !d.NeedToken {
		html, err := s.renderView(r.Context(), "")
		if err != nil {
			s.logger().Warn("dashboard: rendering the panels", "err", err)
		}
		d.Panels = html
	}
	var buf bytes.Buffer
	if err := dashboardTmpl.ExecuteTemplate(&buf, "page.html", d); err != nil {
		s.logger().Error("dashboard: rendering the page", "err", err)
		http.Error(w, "dashboard: internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	// The Content-Security-Policy is set by the guard (guard.go).
	w.Write(buf.Bytes())
}

// servePanels serves one view (?view=, default the tubes) alone, for the
// script's refreshes.
func (s *Server) servePanels(w http.ResponseWriter, r *http.Request) error {
	sr, err := searchOf(r.URL.Query().Get("q"))
	if err != nil {
		return err
	}
	name := r.URL.Query().Get("view")
	if name != "" && !slices.ContainsFunc(s.views(), func(v dashView) bool { return v.Name == name }) {
		return serveMissing(w, missingData{What: "view", Name: name, Why: "This server has no view " + strconv.Quote(name) + "; the views it has are in the bar above."})
	}
	html, err := s.renderView(withSearch(r.Context(), sr), name)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Write([]byte(html))
	return nil
}

// renderView renders the view named name ("": the first).
func (s *Server) renderView(ctx context.Context, name string) (template.HTML, error) {
	views := s.views()
	v := views[0]
	if name != "" {
		i := slices.IndexFunc(views, func(v dashView) bool { return v.Name == name })
		if i < 0 {
			return "", apiError{http.StatusNotFound, CodeNotFound, "httpapi: no dashboard view " + quoteHost(name), 0}
		}
		v = views[i]
	}
	data, err := v.panel(ctx, s)
	if err != nil {
		return "", err
	}
	var buf bytes.Buffer
	if err := dashboardTmpl.ExecuteTemplate(&buf, v.template, data); err != nil {
		return "", fmt.Errorf("dashboard: view %s: %w", v.Name, err)
	}
	return template.HTML(buf.String()), nil
}

// jobsPanelData is what the jobs panel shows.
type jobsPanelData struct {
	Tubes    []TubeStats
	More     bool // more tubes than shown
	Delayed  []panelJob
	Buried   []panelJob
	Reserved []panelJob // soonest end of TTR first, with their holders
	// DelayedCut: the timeline shows only the soonest panelTimeline;
	// ReservedCut likewise.
	DelayedCut, ReservedCut bool
	PauseOpts               []pauseOpt
	// Query is the search the tubes (by name) and the jobs listed (by
	// id, tube or body) were filtered by; Keys the jobs of the tubes
	// listed whose unique key it is.
	Query string
	Keys  []keyMatch
}

// The dashboard lists up to panelJobsPerTube delayed and buried jobs of
// each tube, and the soonest panelTimeline delayed jobs of all tubes.
const (
	panelJobsPerTube = 10
	panelTimeline    = 30
)

type panelJob struct {
	browseJob
	More int64 // on the last job listed of a tube: its other jobs in the same state
}

func jobsPanel(ctx context.Context, s *Server) (any, error) {
	q := s.Queue
	tubes, err := q.Tubes(ctx)
	if err != nil {
		return nil, err
	}
	sr := searchIn(ctx)
	d := jobsPanelData{PauseOpts: pauseOpts, Query: sr.text}
	if len(tubes) > maxPanelTubes {
		tubes, d.More = tubes[:maxPanelTubes], true
	}
	for _, t := range tubes {
		st, err := q.StatsTube(ctx, t)
		if err != nil {
			if isOutcome(err) {
				continue // gone since Tubes
			}
			return nil, err
		}
		if sr.name(t) {
			d.Tubes = append(d.Tubes, tubeStatsOf(st))
		}
		if km, ok, err := sr.keyMatchIn(ctx, q, t); err != nil {
			return nil, err
		} else if ok {
			d.Keys = append(d.Keys, km)
		}
		for _, l := range []struct {
			state queue.State
			n     int64
			to    *[]panelJob
		}{{queue.Delayed, st.Delayed, &d.Delayed}, {queue.Reserved, st.Reserved, &d.Reserved}, {queue.Buried, st.Buried, &d.Buried}} {
			if l.n == 0 {
				continue
			}
			jobs, err := q.PeekStateN(ctx, t, l.state, panelJobsPerTube)
			if err != nil && !isOutcome(err) {
				return nil, err
			}
			if sr.any() {
				jobs = slices.DeleteFunc(jobs, func(j queue.Job) bool { return !sr.job(j) })
			}
			for i, j := range jobs {
				pj := panelJob{browseJob: rowStats(ctx, q, j)}
				if i == len(jobs)-1 && !sr.any() {
					pj.More = l.n - int64(len(jobs))
				}
				*l.to = append(*l.to, pj)
			}
		}
	}
	// Soonest first: a timeline.
	slices.SortStableFunc(d.Delayed, func(a, b panelJob) int { return cmp.Compare(a.DueInMS, b.DueInMS) })
	if len(d.Delayed) > panelTimeline {
		d.Delayed, d.DelayedCut = d.Delayed[:panelTimeline], true
	}
	slices.SortStableFunc(d.Reserved, func(a, b panelJob) int { return cmp.Compare(a.DueInMS, b.DueInMS) })
	if len(d.Reserved) > panelTimeline {
		d.Reserved, d.ReservedCut = d.Reserved[:panelTimeline], true
	}
	return d, nil
}

// isOutcome reports whether err is an outcome (not found, …) rather than a
// failure of the store.
func isOutcome(err error) bool { return err != nil && !storeFailure(err) }

// when writes a time for people as a <time> element: UTC on the server,
// and the script shows it in the zone the reader chose.
func when(t time.Time) template.HTML {
	if t.IsZero() {
		return ""
	}
	u := t.UTC()
	return template.HTML(`<time datetime="` + u.Format("2006-01-02T15:04:05.000Z") + `">` + u.Format("2006-01-02 15:04:05 UTC") + `</time>`)
}

// durMS writes a count of milliseconds for people: 850ms, 12.3s, 4m05s, 2h10m.
func durMS(ms int64) string {
	d := time.Duration(ms) * time.Millisecond
	switch {
	case d < time.Second:
		return fmt.Sprintf("%dms", ms)
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	default:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
}

// preview shows the start of a body: text as it is, else its size.
func preview(b []byte) string {
	const max = 60
	if !utf8.Valid(b) {
		return fmt.Sprintf("(%d bytes of binary)", len(b))
	}
	if len(b) <= max {
		return string(b)
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(b[cut]) {
		cut--
	}
	return string(b[:cut]) + "…"
}

// byteSize writes a size for people: 812 B, 4.0 KiB, 1.5 MiB.
func byteSize(n int) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	default:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
}

// tubeActions is the data of the template "tube-actions": a tube and the
// lengths of pause offered.
type tubeActions struct {
	TubeStats
	PauseOpts []pauseOpt
}
