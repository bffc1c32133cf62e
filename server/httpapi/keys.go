package httpapi

import (
	"encoding/base64"
	"errors"
	"net/http"

	"github.com/hourglass-io/hourglass/queue"
)

// keyRoutes are the job routes of lookups (docs/keys.md): a job by its id
// or by its tube's unique key, live or kept by its tube's retention.
func (s *Server) keyRoutes() []route {
	return []route{
		{"GET", "/v1/jobs/{id}/lookup", "lookup", s.lookup},
		{"GET", "/v1/tubes/{tube}/keys/{key}", "lookup-key", s.lookupKey},
	}
}

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
	l := JobLookup{JobStats: JobStats{ID: uint64(st.ID), Tube: st.Tube, State: st.State.String(), Priority: st.Priority,
		AgeMS: st.Age.Milliseconds(), DelayMS: st.Delay.Milliseconds(), TTRMS: st.TTR.Milliseconds(),
		TimeLeftMS: st.TimeLeft.Milliseconds(), Reserves: st.Reserves, Timeouts: st.Timeouts,
		Releases: st.Releases, Buries: st.Buries, Kicks: st.Kicks, UniqueKey: st.UniqueKey, JobHistory: historyOf(st)},
		FinishedAt: Timestamp(st.FinishedAt), KeptUntil: Timestamp(st.KeptUntil)}
	if len(st.Result) > 0 {
		l.ResultBase64 = base64.StdEncoding.EncodeToString(st.Result)
	}
	return l
}

func (s *Server) lookup(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	st, err := s.Queue.Lookup(r.Context(), id)
	if err != nil {
		return jobError(id, err)
	}
	writeJSON(w, http.StatusOK, lookupOf(st))
	return nil
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
