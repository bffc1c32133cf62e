//go:build unix

package main

import (
	"fmt"
	"html"
	"os"
	"slices"
	"strings"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// writeTraceSVG draws the spans of one trace as a timeline: a row per span
// (indented under its parent, in order of start), its bar to scale, its
// service and duration, and for each consumer span the gap since its
// parent ended (a job's wait in the queue), dashed. docs/tracing-trace.svg
// is one, from a run of TestTraceAcrossProcesses with HG_TRACE_SVG set.
func writeTraceSVG(path string, spans []*tracepb.Span, service map[string]string) error {
	byID := map[string]*tracepb.Span{}
	for _, s := range spans {
		byID[sid(s.SpanId)] = s
	}
	depth := func(s *tracepb.Span) int {
		d := 0
		for p := byID[sid(s.ParentSpanId)]; p != nil; p = byID[sid(p.ParentSpanId)] {
			d++
		}
		return d
	}
	// Depth-first, children in order of start.
	var order []*tracepb.Span
	var visit func(parent string)
	visit = func(parent string) {
		var kids []*tracepb.Span
		for _, s := range spans {
			p := sid(s.ParentSpanId)
			if p == parent || (parent == "" && byID[p] == nil) {
				kids = append(kids, s)
			}
		}
		slices.SortFunc(kids, func(a, b *tracepb.Span) int {
			if a.StartTimeUnixNano < b.StartTimeUnixNano {
				return -1
			}
			return 1
		})
		for _, k := range kids {
			order = append(order, k)
			visit(sid(k.SpanId))
		}
	}
	visit("")
	t0, t1 := order[0].StartTimeUnixNano, order[0].EndTimeUnixNano
	for _, s := range order {
		t0, t1 = min(t0, s.StartTimeUnixNano), max(t1, s.EndTimeUnixNano)
	}
	const (
		width, labelW, right, rowH, top = 1000, 330, 20, 26, 50
	)
	chartW := float64(width - labelW - right)
	x := func(t uint64) float64 { return labelW + chartW*float64(t-t0)/float64(t1-t0) }
	height := top + rowH*len(order) + 30
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="10" y="20" font-size="14" font-weight="bold">trace %x — %d spans from %d processes, %v in all</text>`+"\n",
		order[0].TraceId, len(order), countServices(order, service), time.Duration(t1-t0).Round(time.Microsecond))
	// A scale every 50 ms.
	for ms := uint64(0); t0+ms*1e6 <= t1; ms += 50 {
		xx := x(t0 + ms*1e6)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/><text x="%.1f" y="%d" fill="#888" font-size="10">%d ms</text>`+"\n",
			xx, top-12, xx, height-25, xx+2, top-14, ms)
	}
	colors := map[tracepb.Span_SpanKind]string{
		tracepb.Span_SPAN_KIND_SERVER: "#7aa6d8", tracepb.Span_SPAN_KIND_PRODUCER: "#e0a050",
		tracepb.Span_SPAN_KIND_CONSUMER: "#6cbf84", tracepb.Span_SPAN_KIND_INTERNAL: "#b48ad8",
	}
	for i, s := range order {
		y := top + i*rowH
		name := s.Name
		if len(name) > 34 {
			name = name[:33] + "…"
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`+"\n", 10+14*depth(s), y+15, html.EscapeString(name))
		fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#666" font-size="10" text-anchor="end">%s</text>`+"\n", labelW-6, y+15, html.EscapeString(service[sid(s.SpanId)]))
		x0, x1 := x(s.StartTimeUnixNano), x(s.EndTimeUnixNano)
		c := colors[s.Kind]
		if c == "" {
			c = "#b48ad8"
		}
		fmt.Fprintf(&b, `<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s" rx="2"/>`+"\n", x0, y+3, max(x1-x0, 1.5), rowH-8, c)
		d := time.Duration(s.EndTimeUnixNano - s.StartTimeUnixNano)
		label := fmtDur(d)
		left := x0 // where a label put before the bar ends
		if p := byID[sid(s.ParentSpanId)]; p != nil && (s.Kind == tracepb.Span_SPAN_KIND_CONSUMER || s.Name == "command") && s.StartTimeUnixNano > p.EndTimeUnixNano {
			pe := x(p.EndTimeUnixNano)
			left = pe
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#444" stroke-dasharray="3,3"/>`+"\n", pe, y+rowH/2, x0, y+rowH/2)
			label += ", waited " + fmtDur(time.Duration(s.StartTimeUnixNano-p.EndTimeUnixNano)) + " in the tube"
		}
		if v, ok := attrOf(s, "hourglass.ratelimit.decision"); ok {
			label += fmt.Sprintf(", %v", v)
		}
		if v, ok := attrOf(s, "hourglass.lock.fence"); ok {
			label += fmt.Sprintf(", fence %v", v)
		}
		tx, anchor, fill := x1+4, "start", "black"
		switch {
		case x1 <= width-220:
		case x1-x0 > 200: // inside the bar
			tx, anchor, fill = x1-4, "end", "white"
		default:
			tx, anchor = left-4, "end"
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" font-size="10" text-anchor="%s" fill="%s">%s</text>`+"\n", tx, y+15, anchor, fill, html.EscapeString(label))
	}
	fmt.Fprintf(&b, `<text x="10" y="%d" fill="#666" font-size="10">bars: blue server, orange producer, green consumer, purple internal; dashed: the job's wait in the tube</text>`+"\n", height-8)
	b.WriteString("</svg>\n")
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

func fmtDur(d time.Duration) string {
	if d < time.Millisecond {
		return fmt.Sprintf("%d µs", d.Microseconds())
	}
	return fmt.Sprintf("%.1f ms", float64(d)/1e6)
}

func countServices(spans []*tracepb.Span, service map[string]string) int {
	seen := map[string]bool{}
	for _, s := range spans {
		seen[service[sid(s.SpanId)]] = true
	}
	return len(seen)
}
