package httpapi

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/hourglass-io/hourglass/queue"
)

// Lookups (docs/keys.md) are routes of the jobs primitive (jobs.go): a job
// by its id or by its tube's unique key, live or kept by its tube's
// retention.

// JobLookup describes a job found by a lookup: what JobStats says of a
// live one, and of a kept one (state "finished") its result, when it
// ended and when its tube drops it.
type JobLookup struct {
	JobStats
	// ResultBase64 is the result the job was finished with, base64
	// (absent when none or the job is live).
	ResultBase64 string `json:"result_base64,omitempty"`
	// FinishedAt is when a kept job ended, KeptUntil when its tube drops
	// it; null for a live job.
	FinishedAt Timestamp `json:"finished_at"`
	KeptUntil  Timestamp `json:"kept_until"`
}

func lookupOf(st queue.JobStats) JobLookup {
	l := JobLookup{JobStats: jobStatsOf(st), FinishedAt: Timestamp(st.FinishedAt), KeptUntil: Timestamp(st.KeptUntil)}
	if len(st.Result) > 0 {
		l.ResultBase64 = base64.StdEncoding.EncodeToString(st.Result)
	}
	return l
}

func (s *Server) lookup(w http.ResponseWriter, r *http.Request) error {
	return readJob(w, r, s.Queue.Lookup, func(st queue.JobStats) { writeJSON(w, http.StatusOK, lookupOf(st)) })
}

func (s *Server) lookupKey(w http.ResponseWriter, r *http.Request) error {
	tube, key := r.PathValue("tube"), r.PathValue("key")
	st, err := s.Queue.LookupKey(r.Context(), tube, key)
	if errors.Is(err, queue.ErrNotFound) {
		return apiError{http.StatusNotFound, CodeNotFound, sprintf("no job with key %q in tube %s", key, tube), 0}
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, lookupOf(st))
	return nil
}

// KeptJob is one job of a tube's list of kept jobs (GET
// /v1/tubes/{tube}/kept): its key, how it ended, when, and the first
// queue.KeptPreviewLen bytes of its result.
type KeptJob struct {
	ID        uint64 `json:"id"`
	UniqueKey string `json:"unique_key,omitempty"`
	// Ended is "finished" or "cancelled"; LastError the reason of the
	// cancel, or of the last release or bury that gave one.
	Ended      string    `json:"ended"`
	LastError  string    `json:"last_error,omitempty"`
	FinishedAt Timestamp `json:"finished_at"`
	KeptUntil  Timestamp `json:"kept_until"`
	// ResultBase64 is the first bytes of the result, base64 (absent for
	// none); ResultBytes the whole result's length (GET
	// /v1/jobs/{id}/lookup has it all).
	ResultBase64 string `json:"result_base64,omitempty"`
	ResultBytes  int    `json:"result_bytes"`
}

// KeptList is a page of a tube's kept jobs, and the cursor of the next
// page ("" when this is the last).
type KeptList struct {
	Jobs []KeptJob `json:"jobs"`
	Next string    `json:"next"`
}

// defaultKeptList is how many kept jobs a page has when the request
// does not say.
const defaultKeptList = 50

func keptJobOf(k queue.KeptJob) KeptJob {
	out := KeptJob{ID: uint64(k.ID), UniqueKey: k.UniqueKey, Ended: "finished", LastError: k.LastError,
		FinishedAt: Timestamp(k.FinishedAt), KeptUntil: Timestamp(k.KeptUntil), ResultBytes: k.ResultLen}
	if k.Cancelled {
		out.Ended = "cancelled"
	}
	if len(k.Result) > 0 {
		out.ResultBase64 = base64.StdEncoding.EncodeToString(k.Result)
	}
	return out
}

// keptPage reads a page of tube's kept jobs from the query's limit and
// cursor.
func (s *Server) keptPage(ctx context.Context, tube string, q url.Values) (KeptList, error) {
	limit := defaultKeptList
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > queue.MaxKeptList {
			return KeptList{}, badField("limit", "%q: want 1 to %d", v, queue.MaxKeptList)
		}
		limit = n
	}
	from, err := queue.ParseKeptCursor(q.Get("cursor"))
	if err != nil {
		return KeptList{}, badField("cursor", "%q: want the next of an earlier page", q.Get("cursor"))
	}
	jobs, next, err := s.Queue.ListKept(ctx, tube, from, limit)
	if err != nil {
		return KeptList{}, err
	}
	out := KeptList{Jobs: make([]KeptJob, len(jobs)), Next: next.String()}
	for i, k := range jobs {
		out.Jobs[i] = keptJobOf(k)
	}
	return out, nil
}

// listKept lists a page of the jobs a tube keeps after they ended, the
// one dropped last first (docs/keys.md).
func (s *Server) listKept(w http.ResponseWriter, r *http.Request) error {
	l, err := s.keptPage(r.Context(), r.PathValue("tube"), r.URL.Query())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, l)
	return nil
}

// FinishRequest is the JSON body of a finish (optional): the result, as
// text or as base64, at most queue.MaxResultLen bytes.
type FinishRequest struct {
	Result       *string `json:"result,omitempty"`
	ResultBase64 *string `json:"result_base64,omitempty"`
}

// finish ends a job as a delete does (with the lease of a reserved one)
// and, when its tube has a retention, keeps it with the result.
func (s *Server) finish(w http.ResponseWriter, r *http.Request) error {
	var result []byte
	decode := func() error {
		var req FinishRequest
		if err := readJSON(w, r, int64(queue.MaxResultLen)*6+maxSmallBody, &req); err != nil {
			return err
		}
		switch {
		case req.Result != nil && req.ResultBase64 != nil:
			return badRequest("give result or result_base64, not both")
		case req.ResultBase64 != nil:
			b, err := base64.StdEncoding.DecodeString(*req.ResultBase64)
			if err != nil {
				return badField("result_base64", "is not base64: %v", err)
			}
			result = b
		case req.Result != nil:
			result = []byte(*req.Result)
		}
		if len(result) > queue.MaxResultLen {
			return badField("result", "is %d bytes, want at most %d", len(result), queue.MaxResultLen)
		}
		return nil
	}
	return s.jobCall(w, r, leaseIfGiven, decode, func(ctx context.Context, q *queue.Queue, id queue.ID) error {
		return q.Finish(ctx, id, result)
	})
}

// Retention is a tube's retention: how long it keeps its finished jobs,
// 0 for not at all.
type Retention struct {
	RetentionMS int64 `json:"retention_ms"`
}

func (s *Server) getRetention(w http.ResponseWriter, r *http.Request) error {
	d, err := s.Queue.Retention(r.Context(), r.PathValue("tube"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, Retention{RetentionMS: d.Milliseconds()})
	return nil
}

func (s *Server) setRetention(w http.ResponseWriter, r *http.Request) error {
	var req Retention
	if err := readJSON(w, r, maxSmallBody, &req); err != nil {
		return err
	}
	if max := queue.MaxRetention.Milliseconds(); req.RetentionMS < 0 || req.RetentionMS > max {
		return badField("retention_ms", "is %d, want 0 to %d (milliseconds)", req.RetentionMS, max)
	}
	return noContent(w, s.Queue.SetRetention(r.Context(), r.PathValue("tube"), time.Duration(req.RetentionMS)*time.Millisecond))
}
