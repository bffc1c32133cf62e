package httpapi

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hourglass-io/hourglass/queue"
	"go.opentelemetry.io/otel/trace"
)

// jobsPrimitive serves the job queue under /v1.
var jobsPrimitive = primitive{
	name:    "jobs",
	pkg:     "queue",
	enabled: func(s *Server) bool { return s.Queue != nil },
	routes: func(s *Server) []route {
		return []route{
			{"POST", "/v1/tubes/{tube}/jobs", "put", s.put},
			{"POST", "/v1/reserve", "reserve", s.reserve},
			{"GET", "/v1/jobs/{id}", "peek", s.peek},
			{"GET", "/v1/jobs/{id}/body", "peek-body", s.peekBody},
			{"DELETE", "/v1/jobs/{id}", "delete", s.delete},
			{"POST", "/v1/jobs/{id}/release", "release", s.release},
			{"POST", "/v1/jobs/{id}/bury", "bury", s.bury},
			{"POST", "/v1/jobs/{id}/touch", "touch", s.touch},
			{"POST", "/v1/jobs/{id}/kick", "kick-job", s.kickJob},
			{"GET", "/v1/jobs/{id}/stats", "stats-job", s.statsJob},
			{"GET", "/v1/tubes", "tubes", s.tubes},
			{"GET", "/v1/tubes/{tube}", "stats-tube", s.statsTube},
			{"GET", "/v1/tubes/{tube}/peek/{state}", "peek-state", s.peekState},
			{"POST", "/v1/tubes/{tube}/kick", "kick", s.kick},
			{"POST", "/v1/tubes/{tube}/pause", "pause-tube", s.pause},
			{"GET", "/v1/stats", "stats", s.stats},
			// tube limits (tubelimits.go)
			{"GET", "/v1/tube-limits", "tube-limits", s.listTubeLimits},
			{"GET", "/v1/tubes/{tube}/limits", "get-tube-limits", s.getTubeLimits},
			{"PUT", "/v1/tubes/{tube}/limits", "set-tube-limits", s.setTubeLimits},
			{"DELETE", "/v1/tubes/{tube}/limits", "clear-tube-limits", s.clearTubeLimits},
			// cancels, and the long poll in which a lease's holder waits to
			// hear that its job was cancelled (cancel.go)
			{"POST", "/v1/jobs/{id}/cancel", "cancel", s.cancelJob},
			{"POST", "/v1/jobs/{id}/watch", "watch", s.watch},
			// lookups (docs/keys.md, keys.go): a job by its id or by its
			// tube's unique key, live or kept by its tube's retention
			{"GET", "/v1/jobs/{id}/lookup", "lookup", s.lookup},
			{"GET", "/v1/tubes/{tube}/keys/{key}", "lookup-key", s.lookupKey},
			{"GET", "/v1/tubes/{tube}/kept", "list-kept", s.listKept},
			{"POST", "/v1/jobs/{id}/finish", "finish", s.finish},
			{"GET", "/v1/tubes/{tube}/retention", "get-retention", s.getRetention},
			{"PUT", "/v1/tubes/{tube}/retention", "set-retention", s.setRetention},
		}
	},
	panel: jobsPanel,
}

// LeaseHeader carries the lease token of a reservation on the calls that
// act on it (delete, release, bury, touch).
const LeaseHeader = "Hourglass-Lease"

// leasePrefix starts every lease token; the rest is 32 hex digits (128
// random bits). The token is the reservation's owner in the store.
const leasePrefix = "hgl_"

// noLease is the owner of calls made without a lease: no reserve uses it
// (it is not a valid token), so it holds no job.
const noLease = leasePrefix

func newLease() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return leasePrefix + hex.EncodeToString(b[:])
}

func validLease(s string) bool {
	if len(s) != len(leasePrefix)+32 || s[:len(leasePrefix)] != leasePrefix {
		return false
	}
	for _, c := range s[len(leasePrefix):] {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// leaseUse says what a call on a job does with the request's lease.
type leaseUse int

const (
	noLeaseUse    leaseUse = iota // none: the server's queue
	leaseIfGiven                  // the holder's view when a lease is given (delete)
	leaseRequired                 // the holder's view; a call without a lease is refused
)

// jobCall serves a call on the job of the path's {id} that answers 204 No
// Content, checking in this order: the id; the body, when decode is not
// nil; the lease, as use says; then call, on the holder's view of the
// queue (or the server's).
func (s *Server) jobCall(w http.ResponseWriter, r *http.Request, use leaseUse, decode func() error,
	call func(ctx context.Context, q *queue.Queue, id queue.ID) error) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	if decode != nil {
		if err := decode(); err != nil {
			return err
		}
	}
	q := s.Queue
	if use != noLeaseUse {
		if q, err = s.holder(r, use == leaseRequired); err != nil {
			return err
		}
	}
	return noContent(w, jobError(id, call(r.Context(), q, id)))
}

// readJob serves a read of the job the path names: reply writes what read
// returned; read's error is worded with the job's ID.
func readJob[T any](w http.ResponseWriter, r *http.Request, read func(context.Context, queue.ID) (T, error), reply func(T)) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	v, err := read(r.Context(), id)
	if err != nil {
		return jobError(id, err)
	}
	reply(v)
	return nil
}

// jobError words the queue's outcomes about job id with its ID.
func jobError(id queue.ID, err error) error {
	switch {
	case errors.Is(err, queue.ErrNotFound):
		return apiError{http.StatusNotFound, CodeNotFound, sprintf("job %d not found", id), 0}
	case errors.Is(err, queue.ErrNotReserved):
		return apiError{http.StatusConflict, CodeNotReserved, sprintf("job %d is not reserved under this lease (released, buried or deleted already, its TTR ran out, or never reserved with it)", id), 0}
	case errors.Is(err, queue.ErrReserved):
		return apiError{http.StatusConflict, CodeReserved, sprintf("job %d is reserved by another client", id), 0}
	case errors.Is(err, queue.ErrNotKickable):
		return apiError{http.StatusConflict, CodeNotKickable, sprintf("job %d is neither buried nor delayed", id), 0}
	}
	return err
}

// holder returns the queue view of r's lease; required says a call without
// one is refused.
func (s *Server) holder(r *http.Request, required bool) (*queue.Queue, error) {
	l := r.Header.Get(LeaseHeader)
	if l == "" {
		if required {
			return nil, apiError{http.StatusBadRequest, CodeBadLease, "the " + LeaseHeader + " header is required: the lease token reserve returned", 0}
		}
		return s.Queue.WithOwner(noLease), nil
	}
	if !validLease(l) {
		return nil, apiError{http.StatusBadRequest, CodeBadLease, "" + LeaseHeader + " is not a lease token", 0}
	}
	return s.Queue.WithOwner(l), nil
}

// Job is a job in a reply.
type Job struct {
	ID       uint64 `json:"id"`
	Tube     string `json:"tube"`
	Priority uint32 `json:"priority"`
	TTRMS    int64  `json:"ttr_ms"`
	Reserves uint32 `json:"reserves"`
	// BodyBase64 is the body, base64 (standard, padded): always there.
	BodyBase64 string `json:"body_base64"`
	// Body is the body as a string when it is valid UTF-8.
	Body *string `json:"body,omitempty"`
	// UniqueKey is the key the job was put with, when it was put with one
	// (a schedule's job carries "schedule:<name>:<tick unix ms>").
	UniqueKey string `json:"unique_key,omitempty"`
	// Traceparent and Tracestate are the W3C trace context the job was put
	// with (docs/tracing.md), when it was put with one: a worker starts its
	// span as a child of Traceparent.
	Traceparent string `json:"traceparent,omitempty"`
	Tracestate  string `json:"tracestate,omitempty"`
}

func jobOf(j queue.Job) Job {
	out := Job{ID: uint64(j.ID), Tube: j.Tube, Priority: j.Priority, TTRMS: j.TTR.Milliseconds(), Reserves: j.Reserves,
		BodyBase64: base64.StdEncoding.EncodeToString(j.Body), UniqueKey: j.UniqueKey}
	out.Traceparent, out.Tracestate, _ = strings.Cut(j.TraceContext, ";")
	if utf8.Valid(j.Body) {
		b := string(j.Body)
		out.Body = &b
	}
	return out
}

// PutRequest is the JSON body of a put. At most one of Body and BodyBase64.
type PutRequest struct {
	Body       *string `json:"body,omitempty"`
	BodyBase64 *string `json:"body_base64,omitempty"`
	// Priority is absent for queue.DefaultPriority (1024).
	Priority  *uint32 `json:"priority,omitempty"`
	DelayMS   int64   `json:"delay_ms"`
	TTRMS     int64   `json:"ttr_ms"`
	UniqueKey string  `json:"unique_key,omitempty"`
	// Group puts the job into that group of the tube: the tube
	// "tube;group" (docs/tube-limits.md, "Groups").
	Group string `json:"group,omitempty"`
	// Windows on the unique key (docs/keys.md): UniqueKept makes the put
	// a duplicate also of a kept job with the key; UniqueForMS is a
	// window from this put in which a put with the key is a duplicate.
	UniqueKept  bool  `json:"unique_kept,omitempty"`
	UniqueForMS int64 `json:"unique_for_ms,omitempty"`
	// Debounce (docs/keys.md): what the put does to a delayed job holding
	// its unique key: "replace" (its body and priority), "extend" (its
	// delay restarted from now, never past MaxWaitMS after its first put)
	// or "both" (a debounce); "" for neither. DuplicateLive makes the put
	// a duplicate of a ready, reserved or buried job with the key rather
	// than a new job.
	Debounce      string `json:"debounce,omitempty"`
	MaxWaitMS     int64  `json:"max_wait_ms,omitempty"`
	DuplicateLive bool   `json:"duplicate_live,omitempty"`
}

// PutReply is the reply to a put.
type PutReply struct {
	ID        uint64 `json:"id"`
	Duplicate bool   `json:"duplicate"`
	// For a duplicate: the state of the job it found (finished for one
	// its tube keeps, docs/keys.md), and the result that one was finished
	// with, base64 (absent when none).
	State        string `json:"state,omitempty"`
	ResultBase64 string `json:"result_base64,omitempty"`
	// Debounced: the put changed the delayed job id (PutRequest.Debounce).
	Debounced bool `json:"debounced,omitempty"`
}

// debounceModes are the values of a put's debounce.
var debounceModes = map[string]queue.DebounceMode{
	"":        0,
	"replace": queue.DebounceReplace,
	"extend":  queue.DebounceExtend,
	"both":    queue.DebounceReplace | queue.DebounceExtend,
}

// putDebounce sets nj's debounce from a put's fields.
func putDebounce(nj *queue.NewJob, mode string, maxWaitMS int64, dupLive bool) error {
	m, ok := debounceModes[mode]
	if !ok {
		return badField("debounce", "is %q, want replace, extend or both", mode)
	}
	if err := checkMS("max_wait_ms", maxWaitMS); err != nil {
		return err
	}
	nj.Debounce, nj.MaxWait, nj.DuplicateLive = m, ms(maxWaitMS), dupLive
	return nil
}

// queryBool reads a boolean query parameter: absent, "false" or "true".
func queryBool(v, name string) (bool, error) {
	switch v {
	case "", "false":
		return false, nil
	case "true":
		return true, nil
	}
	return false, badField(name, "is %q, want true or false", v)
}

func (s *Server) put(w http.ResponseWriter, r *http.Request) error {
	tube := r.PathValue("tube")
	max := s.Queue.MaxJobSize()
	var nj queue.NewJob
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch ct {
	case "application/octet-stream":
		body, err := readBody(w, r, int64(max))
		if err != nil {
			return err
		}
		q := r.URL.Query()
		pri := uint64(queue.DefaultPriority)
		if v := q.Get("priority"); v != "" {
			if pri, err = queryUint(v, "priority", 1<<32-1); err != nil {
				return err
			}
		}
		delay, err := queryUint(q.Get("delay_ms"), "delay_ms", maxMS)
		if err != nil {
			return err
		}
		ttr, err := queryUint(q.Get("ttr_ms"), "ttr_ms", maxMS)
		if err != nil {
			return err
		}
		if err := checkTTR(int64(ttr)); err != nil {
			return err
		}
		uniqueFor, err := queryUint(q.Get("unique_for_ms"), "unique_for_ms", maxMS)
		if err != nil {
			return err
		}
		kept, err := queryBool(q.Get("unique_kept"), "unique_kept")
		if err != nil {
			return err
		}
		maxWait, err := queryUint(q.Get("max_wait_ms"), "max_wait_ms", maxMS)
		if err != nil {
			return err
		}
		dupLive, err := queryBool(q.Get("duplicate_live"), "duplicate_live")
		if err != nil {
			return err
		}
		nj = queue.NewJob{Body: body, Priority: uint32(pri), Delay: ms(int64(delay)), TTR: ms(int64(ttr)), UniqueKey: q.Get("unique_key"), Group: q.Get("group"),
			UniqueKept: kept, UniqueFor: ms(int64(uniqueFor))}
		if err := putDebounce(&nj, q.Get("debounce"), int64(maxWait), dupLive); err != nil {
			return err
		}
	case "application/json", "":
		var req PutRequest
		// base64 takes 4 bytes per 3, and JSON escapes up to 6 per byte of text.
		if err := readJSON(w, r, int64(max)*6+maxSmallBody, &req); err != nil {
			return err
		}
		var body []byte
		switch {
		case req.Body != nil && req.BodyBase64 != nil:
			return badRequest("give body or body_base64, not both")
		case req.BodyBase64 != nil:
			b, err := base64.StdEncoding.DecodeString(*req.BodyBase64)
			if err != nil {
				return badField("body_base64", "is not base64: %v", err)
			}
			body = b
		case req.Body != nil:
			body = []byte(*req.Body)
		}
		if err := checkMS("delay_ms", req.DelayMS); err != nil {
			return err
		}
		if err := checkTTR(req.TTRMS); err != nil {
			return err
		}
		if err := checkMS("unique_for_ms", req.UniqueForMS); err != nil {
			return err
		}
		nj = queue.NewJob{Body: body, Priority: priority(req.Priority), Delay: ms(req.DelayMS), TTR: ms(req.TTRMS), UniqueKey: req.UniqueKey, Group: req.Group,
			UniqueKept: req.UniqueKept, UniqueFor: ms(req.UniqueForMS)}
		if err := putDebounce(&nj, req.Debounce, req.MaxWaitMS, req.DuplicateLive); err != nil {
			return err
		}
	default:
		return apiError{http.StatusUnsupportedMediaType, CodeUnsupported, "a put takes application/json or application/octet-stream, not " + ct, 0}
	}
	if len(nj.UniqueKey) > 1024 {
		return badField("unique_key", "is %d bytes, want at most %d", len(nj.UniqueKey), 1024)
	}
	if err := putTrace(r, &nj); err != nil {
		return err
	}
	res, err := s.Queue.PutMany(r.Context(), tube, []queue.NewJob{nj})
	if err != nil {
		return err
	}
	status := http.StatusCreated
	if res[0].Duplicate {
		status = http.StatusOK
	}
	w.Header().Set("Location", "/v1/jobs/"+res[0].ID.String())
	reply := PutReply{ID: uint64(res[0].ID), Duplicate: res[0].Duplicate, Debounced: res[0].Debounced}
	if res[0].Duplicate && res[0].State != 0 {
		reply.State = res[0].State.String()
	}
	if len(res[0].Result) > 0 {
		reply.ResultBase64 = base64.StdEncoding.EncodeToString(res[0].Result)
	}
	writeJSON(w, status, reply)
	return nil
}

// putTrace gives nj the W3C trace context of the put's traceparent and
// tracestate headers (docs/tracing.md), unless the request's context has
// a span already (the server traces its handlers: the headers are that
// span's parent, and the put's span the job's): the Queue then takes it
// from the context. A traceparent that is not one is refused.
func putTrace(r *http.Request, nj *queue.NewJob) error {
	tp := r.Header.Get("traceparent")
	if tp == "" || trace.SpanContextFromContext(r.Context()).IsValid() {
		return nil
	}
	tc := tp
	if ts := r.Header.Get("tracestate"); ts != "" {
		tc += ";" + ts
	}
	if err := queue.CheckTraceContext(tc); err != nil {
		return badField("traceparent", "with tracestate: %v", err)
	}
	nj.TraceContext = tc
	return nil
}

// maxMS is the longest delay or TTR in milliseconds: queue.MaxDuration.
const maxMS = uint64(queue.MaxDuration / time.Millisecond)

// checkMS checks a field of milliseconds against the queue's range, in
// milliseconds.
func checkMS(field string, n int64) error {
	if n < 0 || uint64(n) > maxMS {
		return badField(field, "is %d, want 0 to %d (milliseconds)", n, maxMS)
	}
	return nil
}

// checkTTR checks a job's ttr_ms: 0 for the server's default, else at
// least a second.
func checkTTR(n int64) error {
	if n != 0 && (n < queue.MinTTR.Milliseconds() || uint64(n) > maxMS) {
		return badField("ttr_ms", "is %d, want 0 (the server's default) or %d to %d (milliseconds)", n, queue.MinTTR.Milliseconds(), maxMS)
	}
	return nil
}

// ms is a count of milliseconds as a Duration, saturating far beyond any
// limit the queue accepts, so that the queue names the field in its error.
func ms(n int64) time.Duration {
	if n > int64(queue.MaxDuration/time.Millisecond)+1 {
		n = int64(queue.MaxDuration/time.Millisecond) + 1
	}
	return time.Duration(n) * time.Millisecond
}

// ReserveRequest is the JSON body of a reserve.
type ReserveRequest struct {
	// Tubes to take a job from; default ["default"].
	Tubes []string `json:"tubes,omitempty"`
	// TimeoutMS is how long to wait for a job: 0 does not wait. It is cut
	// to the server's maximum wait.
	TimeoutMS int64 `json:"timeout_ms"`
	// Explain asks a reserve that gets no job to say which tubes had
	// ready jobs that their pause or limits held back, in the 204's
	// Hourglass-Held-Back header (HeaderHeldBack). It costs a look at each
	// tube after the reserve, which is why it is asked for.
	Explain bool `json:"explain,omitempty"`
}

// ReserveReply is the reply to a reserve that got a job.
type ReserveReply struct {
	// Lease is the token that the calls acting on the reservation carry
	// in the Hourglass-Lease header. The reservation lasts the job's TTR
	// from now; touch renews it.
	Lease string `json:"lease"`
	Job   Job    `json:"job"`
}

func (s *Server) reserve(w http.ResponseWriter, r *http.Request) error {
	var req ReserveRequest
	if err := readJSON(w, r, maxSmallBody, &req); err != nil {
		return err
	}
	if req.TimeoutMS < 0 {
		return badField("timeout_ms", "is %d, want 0 or more", req.TimeoutMS)
	}
	if n := orInt(s.MaxReserveTubes, DefaultMaxReserveTubes); len(req.Tubes) > n {
		return apiError{http.StatusBadRequest, CodeTooManyTubes, sprintf("%d tubes, want at most %d", len(req.Tubes), n), 0}
	}
	timeout := min(ms(req.TimeoutMS), s.maxWait())
	ctx, done, err := s.longPoll(r, timeout != 0)
	if err != nil {
		return err
	}
	defer done()
	if timeout == 0 {
		timeout = -1 // one attempt
	}
	lease := newLease()
	q := s.Queue.WithOwner(lease)
	j, err := q.Reserve(ctx, queue.ReserveOptions{Tubes: req.Tubes, Timeout: timeout})
	if errors.Is(err, queue.ErrTimeout) {
		if req.Explain {
			if hs := s.explainEmpty(r.Context(), req.Tubes); len(hs) > 0 {
				w.Header().Set(HeaderHeldBack, heldBackHeader(hs))
			}
		}
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	if err != nil {
		return s.pollErr(r, err)
	}
	// The lease is the job's TTR: nothing here returns the job early.
	writeJSON(w, http.StatusOK, ReserveReply{Lease: lease, Job: jobOf(j)})
	s.Metrics.lateness(w, r.Context(), s.Queue, j)
	return nil
}

func (s *Server) peek(w http.ResponseWriter, r *http.Request) error {
	// StatsJob: the job and its history in one look.
	return readJob(w, r, s.Queue.StatsJob, func(st queue.JobStats) {
		writeJSON(w, http.StatusOK, JobView{Job: jobOf(st.Job()), State: st.State.String(), JobHistory: historyOf(st)})
	})
}

// JobView is a job as GET /v1/jobs/{id} shows it: the job, its state and
// its history.
type JobView struct {
	Job
	State string `json:"state"`
	JobHistory
}

// JobHistory is what a job keeps of its past: how often it was tried, the
// last error a worker gave when it released or buried it, and when each
// transition last happened. Times are RFC 3339 in UTC with milliseconds
// ("2030-01-02T03:04:05.678Z"), null for never.
type JobHistory struct {
	Attempts    uint32    `json:"attempts"`   // reserves, this one included when reserved
	LastError   string    `json:"last_error"` // at most queue.MaxReasonLen bytes; "" for none
	LastErrorAt Timestamp `json:"last_error_at"`
	PutAt       Timestamp `json:"put_at"`
	ReservedAt  Timestamp `json:"reserved_at"`
	ReleasedAt  Timestamp `json:"released_at"`
	BuriedAt    Timestamp `json:"buried_at"`
	KickedAt    Timestamp `json:"kicked_at"`
	TimedOutAt  Timestamp `json:"timed_out_at"` // when the TTR of the last reservation that timed out ran out
	// Errors is the history of the errors of its attempts, oldest first
	// (queue.JobStats.Errors: the last queue.MaxErrors within
	// queue.MaxErrorBytes of reasons); left out when it has none.
	Errors []AttemptError `json:"errors,omitempty"`
}

// AttemptError is one entry of a job's error history.
type AttemptError struct {
	At      Timestamp `json:"at"`
	Attempt uint32    `json:"attempt"` // the reserve it ended (1: the first)
	Reason  string    `json:"reason"`
}

func historyOf(st queue.JobStats) JobHistory {
	h := JobHistory{Attempts: st.Reserves, LastError: st.LastError, LastErrorAt: Timestamp(st.LastErrorAt),
		PutAt: Timestamp(st.PutAt), ReservedAt: Timestamp(st.ReservedAt), ReleasedAt: Timestamp(st.ReleasedAt),
		BuriedAt: Timestamp(st.BuriedAt), KickedAt: Timestamp(st.KickedAt), TimedOutAt: Timestamp(st.TimedOutAt)}
	for _, e := range st.Errors {
		h.Errors = append(h.Errors, AttemptError{At: Timestamp(e.At), Attempt: e.Attempt, Reason: e.Reason})
	}
	return h
}

// Timestamp is a time in JSON as RFC 3339 in UTC with milliseconds, or
// null for the zero Time (never).
type Timestamp time.Time

// TimestampFormat is the layout of a Timestamp.
const TimestampFormat = "2006-01-02T15:04:05.000Z07:00"

// MarshalJSON implements json.Marshaler.
func (t Timestamp) MarshalJSON() ([]byte, error) {
	if time.Time(t).IsZero() {
		return []byte("null"), nil
	}
	return []byte(`"` + time.Time(t).UTC().Format(TimestampFormat) + `"`), nil
}

// UnmarshalJSON implements json.Unmarshaler: null is the zero Time.
func (t *Timestamp) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*t = Timestamp{}
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return err
	}
	*t = Timestamp(v)
	return nil
}

// peekBody serves a job's body as it is: application/octet-stream.
func (s *Server) peekBody(w http.ResponseWriter, r *http.Request) error {
	return readJob(w, r, s.Queue.Peek, func(j queue.Job) {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Length", strconv.Itoa(len(j.Body)))
		w.Header().Set("Cache-Control", "no-store")
		w.Write(j.Body)
	})
}

func (s *Server) delete(w http.ResponseWriter, r *http.Request) error {
	return s.jobCall(w, r, leaseIfGiven, nil, func(ctx context.Context, q *queue.Queue, id queue.ID) error {
		return q.Delete(ctx, id)
	})
}

// ReleaseRequest is the JSON body of a release (optional: without it the
// job keeps its priority and is ready at once).
type ReleaseRequest struct {
	// Priority is the job's new priority; absent, it keeps the one it has.
	Priority *uint32 `json:"priority,omitempty"`
	DelayMS  int64   `json:"delay_ms"`
	// Reason, when given, becomes the job's last_error (cut to
	// queue.MaxReasonLen bytes at the end of a whole character); without
	// one the job keeps the last error it had.
	Reason string `json:"reason,omitempty"`
}

func (s *Server) release(w http.ResponseWriter, r *http.Request) error {
	var req ReleaseRequest
	decode := func() error {
		if err := readJSON(w, r, maxSmallBody, &req); err != nil {
			return err
		}
		return checkMS("delay_ms", req.DelayMS)
	}
	return s.jobCall(w, r, leaseRequired, decode, func(ctx context.Context, q *queue.Queue, id queue.ID) error {
		return q.ReleaseWith(ctx, id, queue.ReleaseOptions{Priority: req.Priority, Delay: ms(req.DelayMS), Reason: req.Reason})
	})
}

// BuryRequest is the JSON body of a bury (optional: without a priority
// the job keeps its own).
type BuryRequest struct {
	Priority *uint32 `json:"priority,omitempty"`
	// Reason is as ReleaseRequest's.
	Reason string `json:"reason,omitempty"`
}

// priority is p, or queue.DefaultPriority when p is nil (absent).
func priority(p *uint32) uint32 {
	if p == nil {
		return queue.DefaultPriority
	}
	return *p
}

func (s *Server) bury(w http.ResponseWriter, r *http.Request) error {
	var req BuryRequest
	decode := func() error { return readJSON(w, r, maxSmallBody, &req) }
	return s.jobCall(w, r, leaseRequired, decode, func(ctx context.Context, q *queue.Queue, id queue.ID) error {
		return q.BuryWith(ctx, id, queue.BuryOptions{Priority: req.Priority, Reason: req.Reason})
	})
}

func (s *Server) touch(w http.ResponseWriter, r *http.Request) error {
	return s.jobCall(w, r, leaseRequired, nil, func(ctx context.Context, q *queue.Queue, id queue.ID) error {
		_, err := q.Touch(ctx, id)
		return err
	})
}

func (s *Server) kickJob(w http.ResponseWriter, r *http.Request) error {
	return s.jobCall(w, r, noLeaseUse, nil, func(ctx context.Context, q *queue.Queue, id queue.ID) error {
		return q.KickJob(ctx, id)
	})
}

// KickRequest is the JSON body of a tube's kick.
type KickRequest struct {
	// Bound is the most jobs to kick. Required.
	Bound int `json:"bound"`
}

// KickReply is the reply to a tube's kick.
type KickReply struct {
	Kicked int `json:"kicked"`
}

func (s *Server) kick(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Bound *int `json:"bound"` // KickRequest's, required
	}
	if err := readJSON(w, r, maxSmallBody, &req); err != nil {
		return err
	}
	if req.Bound == nil {
		return badField("bound", "is required: the most jobs to kick")
	}
	if *req.Bound < 0 {
		return badField("bound", "is %d, want 0 or more", *req.Bound)
	}
	n, err := s.Queue.Kick(r.Context(), r.PathValue("tube"), *req.Bound)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, KickReply{Kicked: n})
	return nil
}

// PauseRequest is the JSON body of a tube's pause.
type PauseRequest struct {
	// DelayMS is how long the pause lasts; 0 ends a pause. Required: a
	// body without it is refused, so an empty one never ends a pause.
	DelayMS int64 `json:"delay_ms"`
}

func (s *Server) pause(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		DelayMS *int64 `json:"delay_ms"` // PauseRequest's, required
	}
	if err := readJSON(w, r, maxSmallBody, &req); err != nil {
		return err
	}
	if req.DelayMS == nil {
		return badField("delay_ms", "is required (0 ends a pause)")
	}
	if err := checkMS("delay_ms", *req.DelayMS); err != nil {
		return err
	}
	return noContent(w, s.Queue.PauseTube(r.Context(), r.PathValue("tube"), ms(*req.DelayMS)))
}

func (s *Server) peekState(w http.ResponseWriter, r *http.Request) error {
	tube := r.PathValue("tube")
	var peek func(context.Context, string) (queue.Job, error)
	switch r.PathValue("state") {
	case "ready":
		peek = s.Queue.PeekReady
	case "delayed":
		peek = s.Queue.PeekDelayed
	case "buried":
		peek = s.Queue.PeekBuried
	default:
		return badField("state", "%q: want ready, delayed or buried", r.PathValue("state"))
	}
	j, err := peek(r.Context(), tube)
	if errors.Is(err, queue.ErrNotFound) {
		return apiError{http.StatusNotFound, CodeNotFound, sprintf("no %s job in tube %s", r.PathValue("state"), tube), 0}
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, jobOf(j))
	return nil
}

// JobStats describes a job.
type JobStats struct {
	ID         uint64 `json:"id"`
	Tube       string `json:"tube"`
	State      string `json:"state"`
	Priority   uint32 `json:"priority"`
	AgeMS      int64  `json:"age_ms"`
	DelayMS    int64  `json:"delay_ms"`
	TTRMS      int64  `json:"ttr_ms"`
	TimeLeftMS int64  `json:"time_left_ms"`
	Reserves   uint32 `json:"reserves"`
	Timeouts   uint32 `json:"timeouts"`
	Releases   uint32 `json:"releases"`
	Buries     uint32 `json:"buries"`
	Kicks      uint32 `json:"kicks"`
	UniqueKey  string `json:"unique_key,omitempty"`
	JobHistory
}

func jobStatsOf(st queue.JobStats) JobStats {
	return JobStats{ID: uint64(st.ID), Tube: st.Tube, State: st.State.String(), Priority: st.Priority,
		AgeMS: st.Age.Milliseconds(), DelayMS: st.Delay.Milliseconds(), TTRMS: st.TTR.Milliseconds(),
		TimeLeftMS: st.TimeLeft.Milliseconds(), Reserves: st.Reserves, Timeouts: st.Timeouts,
		Releases: st.Releases, Buries: st.Buries, Kicks: st.Kicks, UniqueKey: st.UniqueKey, JobHistory: historyOf(st)}
}

func (s *Server) statsJob(w http.ResponseWriter, r *http.Request) error {
	return readJob(w, r, s.Queue.StatsJob, func(st queue.JobStats) { writeJSON(w, http.StatusOK, jobStatsOf(st)) })
}

// TubeStats describes a tube.
type TubeStats struct {
	Name            string `json:"name"`
	Urgent          int64  `json:"urgent"`
	Ready           int64  `json:"ready"`
	Reserved        int64  `json:"reserved"`
	Delayed         int64  `json:"delayed"`
	Buried          int64  `json:"buried"`
	TotalJobs       int64  `json:"total_jobs"`
	Deletes         int64  `json:"deletes"`
	Pauses          int64  `json:"pauses"`
	Paused          bool   `json:"paused"`
	PauseMS         int64  `json:"pause_ms"`
	PauseTimeLeftMS int64  `json:"pause_time_left_ms"`
	// Limits are the tube's limits (absent when none); LimitHolds counts
	// the reserves that got fewer jobs than asked while they held back
	// the tube's ready jobs (docs/tube-limits.md).
	Limits     *TubeLimits `json:"limits,omitempty"`
	LimitHolds int64       `json:"limit_holds"`
	// Cancels counts the tube's jobs cancelled (POST /v1/jobs/{id}/cancel).
	Cancels int64 `json:"cancels"`
	// Groups, GroupReady and GroupReserved describe the tube's groups
	// (queue.TubeStats), absent when it has none.
	Groups        int64 `json:"groups,omitempty"`
	GroupReady    int64 `json:"group_ready,omitempty"`
	GroupReserved int64 `json:"group_reserved,omitempty"`
	// HeldBack says why the tube's ready jobs are not handed out now, in
	// GET /v1/tubes/{tube}: its pause or its cap reached (a rate is named
	// only by a reserve's explain); absent when nothing holds them.
	HeldBack *HeldBack `json:"held_back,omitempty"`
}

func tubeStatsOf(st queue.TubeStats) TubeStats {
	return TubeStats{Name: st.Name, Urgent: st.Urgent, Ready: st.Ready, Reserved: st.Reserved, Delayed: st.Delayed,
		Buried: st.Buried, TotalJobs: st.TotalJobs, Deletes: st.Deletes, Pauses: st.Pauses, Paused: st.Pause > 0,
		PauseMS: st.Pause.Milliseconds(), PauseTimeLeftMS: st.PauseTimeLeft.Milliseconds(),
		Limits: tubeLimitsField(st.Limits), LimitHolds: st.LimitHolds, Cancels: st.Cancels,
		Groups: st.Groups, GroupReady: st.GroupReady, GroupReserved: st.GroupReserved}
}

func (s *Server) statsTube(w http.ResponseWriter, r *http.Request) error {
	st, err := s.Queue.StatsTube(r.Context(), r.PathValue("tube"))
	if errors.Is(err, queue.ErrNotFound) {
		return apiError{http.StatusNotFound, CodeNotFound, sprintf("tube %s not found", r.PathValue("tube")), 0}
	}
	if err != nil {
		return err
	}
	ts := tubeStatsOf(st)
	ts.HeldBack = heldBack(r.Context(), s.Queue, st, false)
	writeJSON(w, http.StatusOK, ts)
	return nil
}

// TubesReply lists the tubes.
type TubesReply struct {
	Tubes []string `json:"tubes"`
}

func (s *Server) tubes(w http.ResponseWriter, r *http.Request) error {
	ts, err := s.Queue.Tubes(r.Context())
	if err != nil {
		return err
	}
	if ts == nil {
		ts = []string{}
	}
	writeJSON(w, http.StatusOK, TubesReply{Tubes: ts})
	return nil
}

// Stats describes the whole store.
type Stats struct {
	Urgent    int64 `json:"urgent"`
	Ready     int64 `json:"ready"`
	Reserved  int64 `json:"reserved"`
	Delayed   int64 `json:"delayed"`
	Buried    int64 `json:"buried"`
	TotalJobs int64 `json:"total_jobs"`
	Timeouts  int64 `json:"timeouts"`
	Tubes     int64 `json:"tubes"`
}

func (s *Server) stats(w http.ResponseWriter, r *http.Request) error {
	st, err := s.Queue.Stats(r.Context())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, Stats{Urgent: st.Urgent, Ready: st.Ready, Reserved: st.Reserved, Delayed: st.Delayed,
		Buried: st.Buried, TotalJobs: st.TotalJobs, Timeouts: st.Timeouts, Tubes: st.Tubes})
	return nil
}

// pathID parses the {id} of the path.
func pathID(r *http.Request) (queue.ID, error) {
	n, err := strconv.ParseUint(r.PathValue("id"), 10, 64)
	if err != nil || n == 0 || n > uint64(queue.MaxID) {
		return 0, badField("id", "%q: want a job id, a whole number from 1 to %d", r.PathValue("id"), queue.MaxID)
	}
	return queue.ID(n), nil
}

func queryUint(v, name string, max uint64) (uint64, error) {
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil || n > max {
		return 0, badField(name, "%q: want a whole number from 0 to %d", v, max)
	}
	return n, nil
}

// readBody reads r's body, at most max bytes: more is 413 too_large.
func readBody(w http.ResponseWriter, r *http.Request, max int64) ([]byte, error) {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, apiError{http.StatusRequestEntityTooLarge, CodeTooLarge, sprintf("body longer than %d bytes", max), 0}
		}
		return nil, badRequest("reading the body: %v", err)
	}
	return b, nil
}

// readJSON decodes r's JSON body, at most max bytes, into v. An empty body
// leaves v as it is; unknown fields are refused.
func readJSON(w http.ResponseWriter, r *http.Request, max int64, v any) error {
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct != "" && ct != "application/json" {
		return apiError{http.StatusUnsupportedMediaType, CodeUnsupported, "want application/json, not " + ct, 0}
	}
	b, err := readBody(w, r, max)
	if err != nil || len(b) == 0 {
		return err
	}
	if !utf8.Valid(b) {
		// encoding/json would turn each bad byte into U+FFFD: two
		// different names would become one, a body would change.
		return badRequest("the JSON body is not valid UTF-8 (send bytes as base64, or a put's body as application/octet-stream)")
	}
	if loneSurrogate(b) {
		// encoding/json would turn it into U+FFFD, likewise.
		return badRequest("the JSON body escapes half of a UTF-16 surrogate pair (\\uD800–\\uDFFF alone), which is no character")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err, v)
	}
	if dec.More() {
		return badRequest("the JSON body holds more than one value")
	}
	return nil
}

// loneSurrogate reports whether a JSON text holds an escape \uD800–\uDFFF
// that is not half of a surrogate pair. Backslashes appear only inside
// strings, each starting an escape.
func loneSurrogate(b []byte) bool {
	hex4 := func(i int) (rune, bool) {
		if i+6 > len(b) || b[i] != '\\' || b[i+1] != 'u' {
			return 0, false
		}
		v, err := strconv.ParseUint(string(b[i+2:i+6]), 16, 16)
		return rune(v), err == nil
	}
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' {
			continue
		}
		r, ok := hex4(i)
		if !ok {
			i++ // a two-byte escape: \\ \" \n …
			continue
		}
		switch {
		case r >= 0xD800 && r < 0xDC00:
			lo, ok := hex4(i + 6)
			if !ok || lo < 0xDC00 || lo > 0xDFFF {
				return true
			}
			i += 11
		case r >= 0xDC00 && r <= 0xDFFF:
			return true
		default:
			i += 5
		}
	}
	return false
}
