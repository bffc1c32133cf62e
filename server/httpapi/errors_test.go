package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"testing"

	"github.com/hourglass-io/hourglass/lock"
	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/ratelimit"
)

// TestErrorTableInOpenAPI checks that every code the error table answers
// is one the OpenAPI document's Error schema lists.
func TestErrorTableInOpenAPI(t *testing.T) {
	var doc struct {
		Components struct {
			Schemas struct {
				Error struct {
					Properties struct {
						Error struct {
							Properties struct {
								Code struct {
									Enum []string `json:"enum"`
								} `json:"code"`
							} `json:"properties"`
						} `json:"error"`
					} `json:"properties"`
				} `json:"Error"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(OpenAPI(), &doc); err != nil {
		t.Fatal(err)
	}
	enum := doc.Components.Schemas.Error.Properties.Error.Properties.Code.Enum
	if len(enum) == 0 {
		t.Fatal("the OpenAPI document lists no error codes")
	}
	for _, e := range errorTable {
		if !slices.Contains(enum, e.code) {
			t.Errorf("%v: code %q is not in the OpenAPI document's Error schema", e.err, e.code)
		}
	}
}

// TestErrorTableWrapped checks the replies of errors wrapping others,
// where the table's order decides.
func TestErrorTableWrapped(t *testing.T) {
	for _, c := range []struct {
		err    error
		status int
		code   string
	}{
		{fmt.Errorf("%w: %w", lock.ErrNotObtained, context.Canceled), http.StatusConflict, CodeNotObtained},
		{fmt.Errorf("%w: %w", ratelimit.ErrStore, context.Canceled), http.StatusServiceUnavailable, CodeShuttingDown},
		{fmt.Errorf("%w: %w", ratelimit.ErrStore, errors.New("connection refused")), http.StatusServiceUnavailable, CodeUnavailable},
		{fmt.Errorf("put: %w", queue.ErrInvalidTube), http.StatusBadRequest, CodeBadTube},
		{apiError{http.StatusTeapot, "teapot", "a reply of its own", 0}, http.StatusTeapot, "teapot"},
		{errors.New("the store is down"), http.StatusServiceUnavailable, CodeUnavailable},
		{context.Canceled, http.StatusServiceUnavailable, CodeShuttingDown},
	} {
		ae := asAPIError(c.err)
		if ae.status != c.status || ae.code != c.code {
			t.Errorf("%v: got %d %s, want %d %s", c.err, ae.status, ae.code, c.status, c.code)
		}
	}
}
