package logging

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"
)

// New returns a handler writing to w in format "text" or "json", dropping
// records below level.
func New(w io.Writer, format string, level slog.Leveler) (slog.Handler, error) {
	opts := &slog.HandlerOptions{Level: level}
	switch format {
	case "text", "":
		return slog.NewTextHandler(w, opts), nil
	case "json":
		return slog.NewJSONHandler(w, opts), nil
	}
	return nil, fmt.Errorf("logging: format %q: want text or json", format)
}

// Dedup is a slog.Handler that rate-limits repeated warnings. Records at
// slog.LevelWarn and above with the same level and message as one passed
// less than Window ago are dropped and counted; the first such record
// after the window has passed goes through with the count in its message:
// "redis unavailable (repeated 37 times in 10s)". Records below
// LevelWarn always pass. Time is each record's Time, so a run that stops
// reports its count with its next occurrence.
//
// Handlers derived with WithAttrs and WithGroup share the counts. It is
// safe for concurrent use.
type Dedup struct {
	next   slog.Handler
	window time.Duration
	state  *dedupState
}

type dedupState struct {
	mu   sync.Mutex
	runs map[dedupKey]*run
}

type dedupKey struct {
	level slog.Level
	msg   string
}

// run is a message's current window.
type run struct {
	start      time.Time
	suppressed int
}

// NewDedup returns a Dedup passing records to next, folding identical
// warnings within window (10s when window is 0 or less).
func NewDedup(next slog.Handler, window time.Duration) *Dedup {
	if window <= 0 {
		window = 10 * time.Second
	}
	return &Dedup{next: next, window: window, state: &dedupState{runs: map[dedupKey]*run{}}}
}

// Enabled reports whether the next handler handles level.
func (d *Dedup) Enabled(ctx context.Context, level slog.Level) bool {
	return d.next.Enabled(ctx, level)
}

// Handle passes r on, or counts and drops it when it repeats a warning
// passed within the window.
func (d *Dedup) Handle(ctx context.Context, r slog.Record) error {
	if r.Level < slog.LevelWarn {
		return d.next.Handle(ctx, r)
	}
	t := r.Time
	if t.IsZero() {
		t = time.Now()
	}
	k := dedupKey{r.Level, r.Message}
	st := d.state
	st.mu.Lock()
	ru := st.runs[k]
	if ru != nil && t.Sub(ru.start) < d.window {
		ru.suppressed++
		st.mu.Unlock()
		return nil
	}
	suppressed, since := 0, time.Duration(0)
	if ru != nil {
		suppressed, since = ru.suppressed, t.Sub(ru.start)
	}
	st.runs[k] = &run{start: t}
	if len(st.runs) > 1024 {
		// Forget windows that have ended, so that many distinct
		// messages cannot grow the map without bound.
		for key, old := range st.runs {
			if t.Sub(old.start) >= d.window && old.suppressed == 0 {
				delete(st.runs, key)
			}
		}
	}
	st.mu.Unlock()
	if suppressed > 0 {
		r2 := slog.NewRecord(r.Time, r.Level, fmt.Sprintf("%s (repeated %d times in %v)", r.Message, suppressed+1, since.Round(time.Second)), r.PC)
		r.Attrs(func(a slog.Attr) bool { r2.AddAttrs(a); return true })
		r = r2
	}
	return d.next.Handle(ctx, r)
}

// WithAttrs returns a Dedup over next.WithAttrs(attrs), sharing the counts.
func (d *Dedup) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &Dedup{next: d.next.WithAttrs(attrs), window: d.window, state: d.state}
}

// WithGroup returns a Dedup over next.WithGroup(name), sharing the counts.
func (d *Dedup) WithGroup(name string) slog.Handler {
	return &Dedup{next: d.next.WithGroup(name), window: d.window, state: d.state}
}
