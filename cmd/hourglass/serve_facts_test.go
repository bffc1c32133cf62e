package main

import (
	"context"
	"strings"
	"testing"

	"github.com/hourglass-io/hourglass"
	"github.com/hourglass-io/hourglass/internal/testkit/redistest"
)

func factsOf(t *testing.T, b *hourglass.Backend) map[string]string {
	t.Helper()
	f := storeFacts(b)
	if f == nil {
		t.Fatalf("no facts for a %s store", b.Kind)
	}
	fs, err := f(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, x := range fs {
		out[x.Name] = x.Value
	}
	return out
}

// TestStoreFacts: the dashboard's store view names Redis's version,
// memory and clients (each master's on a Cluster), and the embedded
// engine's log.
func TestStoreFacts(t *testing.T) {
	ctx := context.Background()
	open := func(url string) *hourglass.Backend {
		t.Helper()
		b, err := hourglass.Open(ctx, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		return b
	}
	rs := redistest.Standalone(t)
	f := factsOf(t, open("redis://"+rs.Addr+"/0"))
	if !strings.HasPrefix(f["Redis version"], "7.") || f["memory used"] == "" || f["clients"] == "" {
		t.Errorf("Redis facts %v, want its version, memory used and clients", f)
	}
	cl := redistest.ClusterClient(t)
	n := 0
	for name := range factsOf(t, &hourglass.Backend{Kind: "redis", Redis: cl}) {
		if strings.HasSuffix(name, " Redis version") {
			n++
		}
	}
	if n != 3 {
		t.Errorf("a Cluster's facts name %d versions, want one per master (3)", n)
	}
	dir := t.TempDir()
	f = factsOf(t, open("file://"+dir))
	if f["directory"] != dir || f["log since the last snapshot"] == "" || f["last snapshot"] != "none yet" {
		t.Errorf("file store facts %v", f)
	}
	if f := factsOf(t, open("mem://")); !strings.Contains(f["engine"], "in memory") {
		t.Errorf("memory store facts %v", f)
	}
}
