package httpapi

import (
	"fmt"
	"go/token"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hourglass-io/hourglass/internal/errscan"
	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/schedule"
	"github.com/hourglass-io/hourglass/ttlhash"
)

// notInTable are the sentinels of the primitives that no handler can
// return, each with why.
var notInTable = map[string]string{
	ttlhash.ErrNoTopic.Error():  "a Listen on a topic the store does not announce: the server's own bug, never a request's",
	schedule.ErrNoTopic.Error(): "a Listen on a topic the store does not announce: the server's own bug, never a request's",
	queue.ErrCancelled.Error():  "the cause of a cancelled job's Worker context, never an operation's error",
}

// Every sentinel error a primitive's package declares (every exported
// errors.New variable of its non-test files) has its line in errorTable,
// or is listed in notInTable with its reason: a new sentinel cannot fall
// through to a 503 unnoticed.
func TestEverySentinelInErrorTable(t *testing.T) {
	for _, miss := range registryMisses(t, primitives, errorTable) {
		t.Error(miss)
	}
}

// registryMisses returns what the primitives ps miss of the registries of
// this layer: a package (primitive.pkg) whose sentinels each have a line
// in table (or notInTable) and whose name prefixes the messages that
// userWords strips (packagePrefixes, made by prefixesOf), a name, and
// routes.
func registryMisses(t *testing.T, ps []primitive, table []errorLine) []string {
	t.Helper()
	inTable := map[string]bool{}
	for _, e := range table {
		inTable[e.err.Error()] = true
	}
	prefixes := prefixesOf(ps)
	var misses []string
	for _, p := range ps {
		if p.name == "" || p.enabled == nil || p.routes == nil || p.panel == nil {
			misses = append(misses, fmt.Sprintf("primitive %q: a name, enabled, routes and panel are each required", p.name))
		}
		if p.pkg == "" {
			misses = append(misses, fmt.Sprintf("primitive %q: no package (pkg)", p.name))
			continue
		}
		if !slices.Contains(prefixes, path.Base(p.pkg)+": ") {
			misses = append(misses, fmt.Sprintf("primitive %q: its package's prefix is not stripped from replies", p.name))
		}
		files, err := filepath.Glob(filepath.Join("..", "..", filepath.FromSlash(p.pkg), "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, file := range files {
			if strings.HasSuffix(file, "_test.go") {
				continue
			}
			for name, msg := range exportedSentinels(t, file) {
				n++
				if !inTable[msg] && notInTable[msg] == "" {
					misses = append(misses, fmt.Sprintf("%s.%s (%q) is not in errorTable", p.pkg, name, msg))
				}
			}
		}
		if n == 0 {
			misses = append(misses, fmt.Sprintf("package %s declares no sentinel errors", p.pkg))
		}
	}
	return misses
}

// exportedSentinels returns the messages of the exported errors.New
// variables of a Go file, by name.
func exportedSentinels(t *testing.T, path string) map[string]string {
	t.Helper()
	all, err := errscan.Sentinels(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for name, msg := range all {
		if token.IsExported(name) {
			out[name] = msg
		}
	}
	return out
}
