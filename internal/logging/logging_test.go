package logging

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"testing/slogtest"
	"time"
)

func TestDedup(t *testing.T) {
	var buf bytes.Buffer
	h, err := New(&buf, "text", slog.LevelDebug)
	if err != nil {
		t.Fatal(err)
	}
	d := NewDedup(h, 10*time.Second)
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	log := func(at time.Duration, level slog.Level, msg string) {
		r := slog.NewRecord(t0.Add(at), level, msg, 0)
		r.AddAttrs(slog.String("addr", "127.0.0.1:6379"))
		if err := d.WithAttrs([]slog.Attr{slog.String("store", "redis")}).Handle(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 37 {
		log(time.Duration(i)*250*time.Millisecond, slog.LevelWarn, "redis unavailable")
	}
	log(time.Second, slog.LevelWarn, "another warning")
	log(2*time.Second, slog.LevelInfo, "connection closed")
	log(3*time.Second, slog.LevelInfo, "connection closed")
	log(12*time.Second, slog.LevelWarn, "redis unavailable")
	log(13*time.Second, slog.LevelWarn, "redis unavailable")
	log(30*time.Second, slog.LevelWarn, "redis unavailable")

	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	want := []string{
		`msg="redis unavailable" store=redis addr=127.0.0.1:6379`,
		`msg="another warning"`,
		`msg="connection closed"`,
		`msg="connection closed"`,
		`msg="redis unavailable (repeated 37 times in 12s)" store=redis addr=127.0.0.1:6379`,
		`msg="redis unavailable (repeated 2 times in 18s)"`,
	}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), buf.String())
	}
	for i, w := range want {
		if !strings.Contains(lines[i], w) {
			t.Errorf("line %d = %q, want it to contain %q", i, lines[i], w)
		}
	}
}

func TestNewFormats(t *testing.T) {
	var buf bytes.Buffer
	h, err := New(&buf, "json", slog.LevelInfo)
	if err != nil {
		t.Fatal(err)
	}
	slog.New(h).Debug("hidden")
	slog.New(h).Info("shown", "n", 1)
	var m map[string]any
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil || m["msg"] != "shown" || m["n"] != 1.0 {
		t.Fatalf("json output %q: %v", buf.String(), err)
	}
	if _, err := New(&buf, "xml", slog.LevelInfo); err == nil {
		t.Fatal("format xml accepted")
	}
}

// Dedup is a well-behaved slog.Handler.
func TestDedupHandler(t *testing.T) {
	var buf bytes.Buffer
	slogtest.Run(t, func(*testing.T) slog.Handler {
		buf.Reset()
		return NewDedup(slog.NewJSONHandler(&buf, nil), time.Minute)
	}, func(t *testing.T) map[string]any {
		var m map[string]any
		if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		return m
	})
}
