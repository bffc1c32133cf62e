package httpapi

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/hourglass-io/hourglass/queue"
)

// The dashboard's search and its not-found page.
//
// Search: the header's one field. A job id (123 or #123) opens the job's
// page; other text is also looked up as a unique key (queue.LookupKey) in
// each tube listed (the tubes view) or in the tube shown (its page), which
// finds the key's job live or kept after it finished, and it filters the
// jobs listed, by id, tube or body: the
// tubes view's tubes and job lists (GET /dashboard/panels?view=jobs&q=…)
// or, on a tube's page, the tube's window of up to queue.MaxPeekN jobs
// (GET /dashboard/browse?…&q=…). The store has no index of bodies: the
// search reads only what the view already lists.

// maxSearch bounds the text searched for, in bytes.
const maxSearch = 200

// search is what a view's jobs are matched against; the zero search
// matches everything.
type search struct {
	text  string // as typed, trimmed
	lower []byte // lower-cased, for bodies and names
}

func searchOf(q string) (search, error) {
	q = strings.TrimSpace(q)
	if len(q) > maxSearch {
		return search{}, badRequest("httpapi: search of %d bytes: want at most %d", len(q), maxSearch)
	}
	return search{text: q, lower: bytes.ToLower([]byte(q))}, nil
}

func (s search) any() bool { return s.text != "" }

// job reports whether j matches: its id (with or without #), or text
// within its tube's name or its body, in any case.
func (s search) job(j queue.Job) bool {
	if !s.any() {
		return true
	}
	if strconv.FormatUint(uint64(j.ID), 10) == strings.TrimPrefix(s.text, "#") {
		return true
	}
	return s.name(j.Tube) || bytes.Contains(bytes.ToLower(j.Body), s.lower)
}

// name reports whether the name of a tube holds the text, in any case.
func (s search) name(n string) bool {
	return !s.any() || strings.Contains(strings.ToLower(n), string(s.lower))
}

// The search of a panel travels in its context: only the tubes view
// reads it (other views ignore it).
type searchKey struct{}

func withSearch(ctx context.Context, s search) context.Context {
	return context.WithValue(ctx, searchKey{}, s)
}

func searchIn(ctx context.Context) search {
	s, _ := ctx.Value(searchKey{}).(search)
	return s
}

// keyMatch is the job a search found as a tube's unique key: live, or
// kept by its tube after it finished.
type keyMatch struct {
	Tube   string
	ID     queue.ID
	State  string
	Result int // bytes of a kept job's result
}

// keyMatchIn looks the search's text up as a unique key of tube. No job
// with the key, or text that cannot be a key, is no match.
func (s search) keyMatchIn(ctx context.Context, q *queue.Queue, tube string) (keyMatch, bool, error) {
	if !s.any() || len(s.text) > queue.MaxUniqueKey {
		return keyMatch{}, false, nil
	}
	st, err := q.LookupKey(ctx, tube, s.text)
	if err != nil {
		if isOutcome(err) || errors.Is(err, queue.ErrInvalid) || errors.Is(err, queue.ErrNoKeep) {
			return keyMatch{}, false, nil
		}
		return keyMatch{}, false, err
	}
	return keyMatch{Tube: tube, ID: st.ID, State: st.State.String(), Result: len(st.Result)}, true, nil
}

// missingData is the not-found page: "No job #12", and why.
type missingData struct {
	What, Name, Why string
	Tube            string // a tube to go back to
}

// serveMissing answers 404 with the not-found page, which the script
// shows as it shows a view.
func serveMissing(w http.ResponseWriter, d missingData) error {
	return renderFragment(w, http.StatusNotFound, "missing", d)
}
