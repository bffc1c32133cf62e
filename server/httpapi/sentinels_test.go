package httpapi

import (
	"go/token"
	"path/filepath"
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
	inTable := map[string]bool{}
	for _, e := range errorTable {
		inTable[e.err.Error()] = true
	}
	for _, pkg := range []string{"queue", "lock", "schedule", "ttlhash", "ratelimit"} {
		files, err := filepath.Glob(filepath.Join("..", "..", pkg, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			for name, msg := range exportedSentinels(t, path) {
				n++
				if !inTable[msg] && notInTable[msg] == "" {
					t.Errorf("%s.%s (%q) is not in errorTable", pkg, name, msg)
				}
			}
		}
		if n == 0 {
			t.Errorf("package %s declares no sentinel errors", pkg)
		}
	}
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
