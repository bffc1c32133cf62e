package httpapi

import (
	"embed"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
)

// The OpenAPI document is written by hand, one fragment per primitive
// (openapi/<name>.json: its paths and component schemas) over a base
// (openapi/base.json: info, security, the Error schema and the shared
// responses), and merged when first served. It is the contract the tests
// check every request and reply against.
//
//go:embed openapi/*.json
var openapiFS embed.FS

var openapiDoc = sync.OnceValues(buildOpenAPI)

// OpenAPI returns the OpenAPI 3 document of the API, as GET
// /v1/openapi.json serves it.
func OpenAPI() []byte {
	b, err := openapiDoc()
	if err != nil {
		panic(err) // the embedded fragments are checked by the tests
	}
	return b
}

// buildOpenAPI merges the base document and every primitive's fragment.
// Two fragments defining the same path or component is an error.
func buildOpenAPI() ([]byte, error) {
	var doc map[string]any
	if err := readFragment("base", &doc); err != nil {
		return nil, err
	}
	for _, p := range primitives {
		var frag map[string]any
		if err := readFragment(p.name, &frag); err != nil {
			return nil, err
		}
		if err := mergeInto(doc, frag, p.name, ""); err != nil {
			return nil, err
		}
	}
	addGuardResponses(doc)
	return json.MarshalIndent(doc, "", "  ")
}

// addGuardResponses adds to every operation the replies of the guard
// (guard.go), which answers before any route: 400 for too many query
// parameters, 421 for a Host not allowed,
// and for a state-changing call 403 cross-site and 415 for a body that is
// not JSON (or raw bytes).
func addGuardResponses(doc map[string]any) {
	paths, _ := doc["paths"].(map[string]any)
	for _, item := range paths {
		ops, _ := item.(map[string]any)
		for method, op := range ops {
			o, ok := op.(map[string]any)
			if !ok {
				continue
			}
			resps, ok := o["responses"].(map[string]any)
			if !ok {
				continue
			}
			add := func(status, name string) {
				if _, ok := resps[status]; !ok {
					resps[status] = map[string]any{"$ref": "#/components/responses/" + name}
				}
			}
			add("400", "BadRequest") // more query parameters than MaxQueryParams
			add("421", "Misdirected")
			if stateChanging(strings.ToUpper(method)) {
				add("403", "CrossSite")
				add("415", "Unsupported")
			}
		}
	}
}

func readFragment(name string, v any) error {
	b, err := openapiFS.ReadFile("openapi/" + name + ".json")
	if err != nil {
		return fmt.Errorf("httpapi: OpenAPI fragment of %s: %w", name, err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("httpapi: OpenAPI fragment of %s: %w", name, err)
	}
	return nil
}

// mergeInto adds the maps of src to dst, recursively; a key both define
// with a value that is not an object on both sides is an error.
func mergeInto(dst, src map[string]any, frag, at string) error {
	for k, sv := range src {
		dv, ok := dst[k]
		if !ok {
			dst[k] = sv
			continue
		}
		dm, dok := dv.(map[string]any)
		sm, sok := sv.(map[string]any)
		if !dok || !sok || at == "/paths" || strings.HasPrefix(at, "/components/") {
			return fmt.Errorf("httpapi: OpenAPI fragment of %s redefines %s/%s", frag, at, k)
		}
		if err := mergeInto(dm, sm, frag, at+"/"+k); err != nil {
			return err
		}
	}
	return nil
}

func serveOpenAPI(w http.ResponseWriter, r *http.Request) {
	b, err := openapiDoc()
	if err != nil {
		writeError(w, r, apiError{http.StatusInternalServerError, CodeInternal, err.Error(), 0})
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}
