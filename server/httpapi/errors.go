package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/hourglass-io/hourglass/queue"
)

// Error codes: the stable "code" of an error reply. Clients branch on the
// code, never on the message.
const (
	CodeBadRequest   = "bad_request"            // 400: malformed JSON, a bad parameter or argument
	CodeBadTube      = "bad_tube"               // 400: a tube name queue.CheckTube refuses
	CodeBadLease     = "bad_lease"              // 400: a lease token that is not one reserve could have issued
	CodeUnauthorized = "unauthorized"           // 401: missing or wrong bearer token
	CodeNotFound     = "not_found"              // 404: no such job (or no job in the asked state), tube or route
	CodeNotAllowed   = "method_not_allowed"     // 405
	CodeNotReserved  = "not_reserved"           // 409: the lease does not hold the job (wrong token, or its TTR ran out)
	CodeReserved     = "reserved"               // 409: someone else holds the job
	CodeNotKickable  = "not_kickable"           // 409: kick of a job neither buried nor delayed
	CodeTooLarge     = "too_large"              // 413: a body beyond the limit
	CodeUnsupported  = "unsupported_media_type" // 415
	CodeRateLimited  = "rate_limited"           // 429: with Retry-After (used by limits)
	CodeTooManyWaits = "too_many_waits"         // 429: as many long polls wait as Server.MaxWaits allows; with Retry-After
	CodeTooManyTubes = "too_many_tubes"         // 400: a reserve naming more tubes than Server.MaxReserveTubes
	CodeStoreFull    = "store_full"             // 507: the store holds as many jobs as it may
	CodeUnavailable  = "unavailable"            // 503: the store did not answer
	CodeShuttingDown = "shutting_down"          // 503: the server is stopping
	CodeInternal     = "internal"               // 500
)

// apiError is an error reply: a status, a code and a message.
type apiError struct {
	status     int
	code       string
	message    string
	retryAfter time.Duration // 429: the Retry-After header, rounded up to seconds
}

func (e apiError) Error() string { return e.code + ": " + e.message }

func badRequest(format string, a ...any) apiError {
	return apiError{http.StatusBadRequest, CodeBadRequest, sprintf(format, a...), 0}
}

// errorBody is the JSON of an error reply.
type errorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// asAPIError maps an error of the queue (or of the server) to its reply.
// The one table of the package: every handler goes through it.
func asAPIError(err error) apiError {
	var ae apiError
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.Is(err, queue.ErrNotFound):
		return apiError{http.StatusNotFound, CodeNotFound, err.Error(), 0}
	case errors.Is(err, queue.ErrNotReserved):
		return apiError{http.StatusConflict, CodeNotReserved, err.Error(), 0}
	case errors.Is(err, queue.ErrReserved):
		return apiError{http.StatusConflict, CodeReserved, err.Error(), 0}
	case errors.Is(err, queue.ErrNotKickable):
		return apiError{http.StatusConflict, CodeNotKickable, err.Error(), 0}
	case errors.Is(err, queue.ErrJobTooBig):
		return apiError{http.StatusRequestEntityTooLarge, CodeTooLarge, err.Error(), 0}
	case errors.Is(err, queue.ErrInvalidTube):
		return apiError{http.StatusBadRequest, CodeBadTube, err.Error(), 0}
	case errors.Is(err, queue.ErrInvalid):
		return apiError{http.StatusBadRequest, CodeBadRequest, err.Error(), 0}
	case errors.Is(err, queue.ErrFull):
		return apiError{http.StatusInsufficientStorage, CodeStoreFull, err.Error(), 0}
	case errors.Is(err, queue.ErrClosed), errors.Is(err, context.Canceled):
		return apiError{http.StatusServiceUnavailable, CodeShuttingDown, "httpapi: the server is shutting down", 0}
	default:
		return apiError{http.StatusServiceUnavailable, CodeUnavailable, "httpapi: the store did not answer (the server's log says why)", 0}
	}
}

// storeFailure reports whether err is a failure of the store rather than an
// outcome: what the store-errors metric counts.
func storeFailure(err error) bool {
	return err != nil && asAPIError(err).code == CodeUnavailable
}

// writeError writes err as a JSON error reply.
func writeError(w http.ResponseWriter, r *http.Request, err error) {
	if rw, ok := err.(interface{ writeReply(http.ResponseWriter) }); ok {
		rw.writeReply(w) // an error with a reply of its own (a limited allow)
		return
	}
	ae := asAPIError(err)
	var b errorBody
	b.Error.Code, b.Error.Message = ae.code, ae.message
	if ae.retryAfter > 0 {
		secs := (ae.retryAfter + time.Second - 1) / time.Second
		w.Header().Set("Retry-After", strconv.FormatInt(int64(secs), 10))
	}
	if ae.status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="hourglass"`)
	}
	writeJSON(w, ae.status, b)
}

// writeJSON writes v as JSON with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.Encode(v) // the client may be gone: nothing to do about it
}
