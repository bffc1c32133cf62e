package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hourglass-io/hourglass/lock"
	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/ratelimit"
	"github.com/hourglass-io/hourglass/schedule"
	"github.com/hourglass-io/hourglass/ttlhash"
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

// fieldError is an error reply about one field of the request: its JSON
// name (or the path parameter's, or the header's) goes in the reply's
// "field" member.
type fieldError struct {
	apiError
	field string
}

// Unwrap returns the reply, which asAPIError finds.
func (e fieldError) Unwrap() error { return e.apiError }

// badField is a 400 bad_request about field, whose message starts with
// the field's name: badField("delay_ms", "is %d, want 0 or more", n).
func badField(field, format string, a ...any) fieldError {
	return fieldError{badRequest(field+" "+format, a...), field}
}

// withField names the field err is about, unless it names one already.
func withField(err error, field string) error {
	var fe fieldError
	if err == nil || errors.As(err, &fe) {
		return err
	}
	return fieldError{asAPIError(err), field}
}

// errorBody is the JSON of an error reply.
type errorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		// Field is the JSON name of the request's field the error is
		// about (or the path parameter's), when it is about one.
		Field string `json:"field,omitempty"`
	} `json:"error"`
}

// errorTable maps every sentinel error of the primitives (and of the
// server) to its reply, first match wins: the one table of the package,
// which every handler's error goes through (see asAPIError). Order
// matters where one error wraps another: lock.ErrNotObtained wraps the
// context's error of a wait that ended, ratelimit.ErrStore the store's.
// An error not listed is a failure of the store (or a bug): 503
// unavailable, the cause logged and not sent.
var errorTable = []errorLine{
	// queue
	{queue.ErrNotFound, http.StatusNotFound, CodeNotFound},
	{queue.ErrNotReserved, http.StatusConflict, CodeNotReserved},
	{queue.ErrReserved, http.StatusConflict, CodeReserved},
	{queue.ErrNotKickable, http.StatusConflict, CodeNotKickable},
	{queue.ErrJobTooBig, http.StatusRequestEntityTooLarge, CodeTooLarge},
	{queue.ErrInvalidTube, http.StatusBadRequest, CodeBadTube},
	{queue.ErrInvalid, http.StatusBadRequest, CodeBadRequest},
	{queue.ErrFull, http.StatusInsufficientStorage, CodeStoreFull},
	{queue.ErrTimeout, http.StatusServiceUnavailable, CodeUnavailable}, // reserve answers it with 204 first
	{queue.ErrNotReplicated, http.StatusServiceUnavailable, CodeUnavailable},
	{queue.ErrClosed, http.StatusServiceUnavailable, CodeShuttingDown},
	{queue.ErrNoLimits, http.StatusBadRequest, CodeNotSupported},
	{queue.ErrNoKeep, http.StatusBadRequest, CodeNotSupported},
	{queue.ErrNoCancel, http.StatusBadRequest, CodeNotSupported},

	// ttlhash
	{ttlhash.ErrInvalid, http.StatusBadRequest, CodeBadRequest},
	{ttlhash.ErrInvalidName, http.StatusBadRequest, CodeBadRequest},
	{ttlhash.ErrInvalidGroup, http.StatusBadRequest, CodeBadRequest},
	{ttlhash.ErrInvalidEventID, http.StatusBadRequest, CodeBadRequest},
	{ttlhash.ErrTooBig, http.StatusRequestEntityTooLarge, CodeTooLarge},
	{ttlhash.ErrNoGroup, http.StatusNotFound, CodeNotFound},
	{ttlhash.ErrClosed, http.StatusServiceUnavailable, CodeShuttingDown},

	// lock
	{lock.ErrInvalidName, http.StatusBadRequest, CodeBadRequest},
	{lock.ErrInvalidTTL, http.StatusBadRequest, CodeBadRequest},
	{lock.ErrInvalidLimit, http.StatusBadRequest, CodeBadRequest},
	{lock.ErrInvalidOption, http.StatusBadRequest, CodeBadRequest},
	{lock.ErrNotObtained, http.StatusConflict, CodeNotObtained},
	{lock.ErrNotHeld, http.StatusConflict, CodeNotHeld},
	{lock.ErrLeaseExpired, http.StatusConflict, CodeNotHeld}, // causes of a Lock's end: no route returns them
	{lock.ErrReleased, http.StatusConflict, CodeNotHeld},
	{lock.ErrNotReplicated, http.StatusServiceUnavailable, CodeUnavailable},
	{lock.ErrClosed, http.StatusServiceUnavailable, CodeShuttingDown},

	// ratelimit
	{ratelimit.ErrInvalidLimit, http.StatusBadRequest, CodeBadLimit},
	{ratelimit.ErrImpossible, http.StatusBadRequest, CodeImpossible},
	{ratelimit.ErrUnsupported, http.StatusBadRequest, CodeNotSupported},
	{ratelimit.ErrInvalidKey, http.StatusBadRequest, CodeBadRequest},
	{ratelimit.ErrInvalidCost, http.StatusBadRequest, CodeBadRequest},
	{ratelimit.ErrInvalidOption, http.StatusBadRequest, CodeBadRequest},
	{ratelimit.ErrWaitTooLong, http.StatusTooManyRequests, CodeRateLimited}, // wait answers a slot too far with its own reply first
	{ratelimit.ErrClosed, http.StatusServiceUnavailable, CodeShuttingDown},

	// schedule
	{schedule.ErrInvalidName, http.StatusBadRequest, CodeBadRequest},
	{schedule.ErrInvalidSpec, http.StatusBadRequest, CodeBadRequest},
	{schedule.ErrInvalidZone, http.StatusBadRequest, CodeBadRequest},
	{schedule.ErrInvalidOption, http.StatusBadRequest, CodeBadRequest},
	{schedule.ErrNotFound, http.StatusNotFound, CodeNotFound},
	{schedule.ErrConflict, http.StatusServiceUnavailable, CodeUnavailable}, // fires of a spec's ticks (Run's), never a route's
	{schedule.ErrNotDue, http.StatusServiceUnavailable, CodeUnavailable},
	{schedule.ErrClosed, http.StatusServiceUnavailable, CodeShuttingDown},

	// the request's end: the server shutting down (a client gone reads
	// no reply)
	{context.Canceled, http.StatusServiceUnavailable, CodeShuttingDown},

	// failures of a store, wrapped by the primitive
	{ratelimit.ErrStore, http.StatusServiceUnavailable, CodeUnavailable},
}

// errorLine is one line of errorTable: the replies of an error.
type errorLine struct {
	err    error
	status int
	code   string
}

// shuttingDown is the reply of a call the server's shutdown ended.
var shuttingDown = apiError{http.StatusServiceUnavailable, CodeShuttingDown, "the server is shutting down", 0}

// asAPIError returns err's reply: err itself when it is one (a reply of a
// handler's own), else errorTable's. The message of a 503 is the server's,
// never the cause's.
func asAPIError(err error) apiError {
	var ae apiError
	if errors.As(err, &ae) {
		return ae
	}
	for _, e := range errorTable {
		if !errors.Is(err, e.err) {
			continue
		}
		switch e.code {
		case CodeShuttingDown:
			return shuttingDown
		case CodeUnavailable:
			return unavailable
		}
		return apiError{e.status, e.code, userWords(err.Error()), 0}
	}
	return unavailable
}

// tableFields names the field that an error of the table is about, where
// the error says which.
var tableFields = []struct {
	err   error
	field string
}{
	{queue.ErrJobTooBig, "body"},
	{queue.ErrInvalidTube, "tube"},
	{ttlhash.ErrTooBig, "value"},
	{lock.ErrInvalidTTL, "ttl_ms"},
	{lock.ErrInvalidName, "name"},
	{lock.ErrInvalidLimit, "limit"},
	{ratelimit.ErrInvalidKey, "key"},
	{ratelimit.ErrInvalidCost, "cost"},
	{schedule.ErrInvalidSpec, "spec"},
	{schedule.ErrInvalidZone, "zone"},
	{schedule.ErrInvalidName, "name"},
}

// fieldOf is the field err is about, or "".
func fieldOf(err error) string {
	var fe fieldError
	if errors.As(err, &fe) {
		return fe.field
	}
	for _, f := range tableFields {
		if errors.Is(err, f.err) {
			return f.field
		}
	}
	return ""
}

// packagePrefixes start the messages of the primitives' errors, which
// speak to Go callers; a reply speaks to whoever sent the request. They
// are the primitives' packages' names (primitive.pkg) and this package's,
// set once primitives is (a primitive's handlers reach userWords).
var packagePrefixes []string

func init() { packagePrefixes = prefixesOf(primitives) }

// prefixesOf returns the prefixes of the errors of ps's packages and of
// this package.
func prefixesOf(ps []primitive) []string {
	var out []string
	for _, p := range ps {
		pre := path.Base(p.pkg) + ": "
		if !slices.Contains(out, pre) {
			out = append(out, pre)
		}
	}
	return append(out, "httpapi: ")
}

// userWords is a primitive's error message without the names of Go
// packages: "queue: job not found" is "job not found",
// "Spec: schedule: invalid spec: …" is "Spec: invalid spec: …".
func userWords(msg string) string {
	for _, p := range packagePrefixes {
		msg = strings.ReplaceAll(msg, ": "+p, ": ")
		msg = strings.TrimPrefix(msg, p)
	}
	return msg
}

// unavailable is the reply of a failure of the store: the cause goes to
// the server's log.
var unavailable = apiError{http.StatusServiceUnavailable, CodeUnavailable, "the store did not answer (the server's log says why)", 0}

// isBadInput reports whether err is a report of bad input: a 400.
func isBadInput(err error) bool {
	return err != nil && asAPIError(err).status == http.StatusBadRequest
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
	// userWords again: a handler's own message may name its package.
	b.Error.Code, b.Error.Message, b.Error.Field = ae.code, userWords(ae.message), fieldOf(err)
	if ae.retryAfter > 0 {
		secs := (ae.retryAfter + time.Second - 1) / time.Second
		w.Header().Set("Retry-After", strconv.FormatInt(int64(secs), 10))
	}
	if ae.status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="hourglass"`)
	}
	writeJSON(w, ae.status, b)
}

// noContent answers a call that ended with err: a 204 when err is nil.
func noContent(w http.ResponseWriter, err error) error {
	if err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// writeJSON writes v as JSON with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.Encode(v) // the client may be gone: nothing to do about it
}
