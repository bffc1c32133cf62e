package httpapi

import (
	"net/http"
	"time"

	"github.com/hourglass-io/hourglass/queue"
)

// Cancels are routes of the jobs primitive (jobs.go): cancel a job, and the
// long poll in which a lease's holder waits to hear that its job was
// cancelled.

// CancelRequest is the JSON body of a cancel (optional).
type CancelRequest struct {
	// Reason travels to the job's holder (a Worker's handler context, a
	// watch's reply), cut to queue.MaxReasonLen bytes at the end of a
	// whole character.
	Reason string `json:"reason,omitempty"`
}

// CancelReply is the reply to a cancel.
type CancelReply struct {
	ID uint64 `json:"id"`
	// Was is the state the job was in: "ready", "delayed", "buried", or
	// "reserved" (its holder was told).
	Was string `json:"was"`
}

func (s *Server) cancelJob(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	var req CancelRequest
	if err := readJSON(w, r, maxSmallBody, &req); err != nil {
		return err
	}
	was, err := s.Queue.Cancel(r.Context(), id, req.Reason)
	if err != nil {
		return jobError(id, err)
	}
	writeJSON(w, http.StatusOK, CancelReply{ID: uint64(id), Was: was.String()})
	return nil
}

// WatchRequest is the JSON body of a watch.
type WatchRequest struct {
	// TimeoutMS is how long to wait for a cancel, cut to the server's
	// maximum wait; 0 checks once.
	TimeoutMS int64 `json:"timeout_ms"`
}

// WatchReply is the reply of a watch that heard its job cancelled.
type WatchReply struct {
	Cancelled bool   `json:"cancelled"`
	Reason    string `json:"reason"`
}

// watch waits, as a long poll, until the job the lease holds is cancelled
// (200 with the reason) or the timeout passes with the job still held
// (204). A job that is gone is 404 not_found, one the lease does not hold
// 409 not_reserved: either way the holder's work on it is moot.
func (s *Server) watch(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	var req WatchRequest
	if err := readJSON(w, r, maxSmallBody, &req); err != nil {
		return err
	}
	if req.TimeoutMS < 0 {
		return badField("timeout_ms", "is %d, want 0 or more", req.TimeoutMS)
	}
	q, err := s.holder(r, true)
	if err != nil {
		return err
	}
	cs, ok := s.Queue.Store().(queue.CancelStore)
	if !ok {
		return queue.ErrNoCancel
	}
	timeout := min(ms(req.TimeoutMS), s.maxWait())
	ctx, done, err := s.longPoll(r, timeout > 0)
	if err != nil {
		return err
	}
	defer done()
	// The job's tube, and that the lease holds it.
	st, err := s.Queue.StatsJob(ctx, id)
	if err != nil {
		return jobError(id, err)
	}
	if st.State != queue.Reserved || st.ReservedBy != q.Owner() {
		return jobError(id, queue.ErrNotReserved)
	}
	heard := make(chan string, 1)
	stop, err := cs.ListenCancel(ctx, st.Tube, func(got queue.ID, reason string) {
		if got == id {
			select {
			case heard <- reason:
			default:
			}
		}
	})
	if err != nil {
		return s.pollErr(r, err)
	}
	defer stop()
	// Listening now: a cancel made before is seen by this second look.
	if st, err = s.Queue.StatsJob(ctx, id); err != nil || st.State != queue.Reserved || st.ReservedBy != q.Owner() {
		if err == nil {
			err = queue.ErrNotReserved
		}
		return jobError(id, err)
	}
	var expire <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		expire = t.C
	} else {
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	select {
	case reason := <-heard:
		writeJSON(w, http.StatusOK, WatchReply{Cancelled: true, Reason: reason})
		return nil
	case <-expire:
		w.WriteHeader(http.StatusNoContent)
		return nil
	case <-ctx.Done():
		return s.pollErr(r, ctx.Err())
	}
}
