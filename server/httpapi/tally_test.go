package httpapi

import (
	"context"
	"net/http"
	"testing"

	"github.com/hourglass-io/hourglass/internal/tally"
)

// The worked example of CONTRIBUTING.md ("Adding a primitive"), step 5 in
// this package: what the test-only primitive internal/tally adds to the
// HTTP API's registries. A real primitive writes its primitive value in
// <name>.go, its line in primitives (routes.go) and its sentinels' lines
// in errorTable (errors.go); a test cannot add to those, so the example's
// are here and TestRegistries checks them beside the real ones. Its
// routes are never served: the tally has no store in a Server.
var tallyPrimitive = primitive{
	name:    "tallies",
	pkg:     "internal/tally",
	enabled: func(*Server) bool { return false },
	routes: func(*Server) []route {
		return []route{{method: "GET", path: "/v1/tallies/{name}", command: "get", handle: func(w http.ResponseWriter, r *http.Request) error {
			return tally.Check(r.PathValue("name"), 1)
		}}}
	},
	panel: func(context.Context, *Server) (any, error) { return nil, nil },
}

// tallyErrorLines are the tally's sentinels' lines of errorTable.
var tallyErrorLines = []errorLine{
	{tally.ErrInvalid, http.StatusBadRequest, CodeBadRequest},
	{tally.ErrClosed, http.StatusServiceUnavailable, CodeShuttingDown},
}

// The registries of this layer with the test-only primitive added: its
// package's every sentinel in the error table, its package's prefix among
// those stripped from replies, and its routes. Leaving out one of
// tallyErrorLines, or tallyPrimitive's pkg or routes, fails here.
func TestRegistries(t *testing.T) {
	ps := append(append([]primitive(nil), primitives...), tallyPrimitive)
	table := append(append([]errorLine(nil), errorTable...), tallyErrorLines...)
	for _, miss := range registryMisses(t, ps, table) {
		t.Error(miss)
	}
}
