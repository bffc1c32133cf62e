package httpapi

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/hourglass-io/hourglass/queue"
)

// The dashboard's job browser (GET /dashboard/browse), job page
// (GET /dashboard/job) and bulk delete of buried jobs
// (POST /dashboard/tubes/{tube}/delete-buried). The first two serve HTML
// fragments that the script shows in place of the panels.
//
// Listing: queue.Store offers PeekStateN, up to queue.MaxPeekN jobs of a
// tube in one state, in the store's order, and no cursor. The browser reads that window, orders it by job ID and pages
// through it 50 at a time with an "after ID" or "before ID" cursor, so
// a page does not shift when jobs are put meanwhile. A state holding more
// than queue.MaxPeekN jobs shows the first MaxPeekN in the store's order
// (the next to be reserved, the soonest due, the soonest end of TTR, the
// oldest buried); the search by ID finds any job.

// browsePage is the most jobs a page of the browser lists.
const browsePage = 50

// States the browser knows, in its tabs' order.
var browseStates = []queue.State{queue.Ready, queue.Delayed, queue.Reserved, queue.Buried}

type browseData struct {
	Tube   string
	State  string
	Stats  TubeStats
	Tabs   []browseTab
	Jobs   []browseJob
	Count  int64 // jobs in the state, by the tube's stats
	Window int   // jobs listed in all (at most queue.MaxPeekN)
	Cut    bool  // Count > Window: the window is the store's first
	From   int   // 1-based position of the page's first job in the window
	To     int
	// Prev and Next are the cursors of the neighbouring pages, 0: none.
	Prev, Next uint64
	PauseOpts  []pauseOpt
	// Query is the search (by id, tube or body) the window was filtered
	// by; Matched counts the jobs of the window that match it.
	Query   string
	Matched int
	// Key is the tube's job whose unique key the search is, live or kept.
	Key *keyMatch
}

type browseTab struct {
	State  string
	Count  int64
	Active bool
}

type browseJob struct {
	Job     queue.Job
	DueInMS int64 // delayed: until it is ready; reserved: until its TTR runs out; -1 unknown
	// From the job's stats, for the jobs not ready: its last error and
	// when it was given, and who holds it (reserved).
	LastError   string
	LastErrorAt time.Time
	Holder      Holder
}

// rowStats fills in what a row of a job list shows from the job's stats:
// its last error, its time left and its holder. A job gone since its
// listing keeps what the listing said.
func rowStats(ctx context.Context, q *queue.Queue, j queue.Job) browseJob {
	bj := browseJob{Job: j, DueInMS: -1}
	if st, err := q.StatsJob(ctx, j.ID); err == nil {
		bj.LastError, bj.LastErrorAt, bj.Holder = st.LastError, st.LastErrorAt, holderOf(st.ReservedBy)
		if st.State == queue.Delayed || st.State == queue.Reserved {
			bj.DueInMS = st.TimeLeft.Milliseconds()
		}
	}
	return bj
}

type pauseOpt struct {
	Label string
	MS    int64
}

// pauseOpts are the lengths of pause the dashboard offers.
var pauseOpts = []pauseOpt{{"for 5 minutes", 5 * 60e3}, {"for 1 hour", 3600e3}, {"for 1 day", 86400e3},
	{"until resumed", queue.MaxDuration.Milliseconds()}}

func stateNamed(s string) (queue.State, bool) {
	for _, st := range browseStates {
		if st.String() == s {
			return st, true
		}
	}
	return 0, false
}

// cursor parses the after or before parameter: 0 when absent.
func cursor(v, name string) (uint64, error) {
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil || n > uint64(queue.MaxID) {
		return 0, badRequest("httpapi: %s %q: want a job id from 0 to %d", name, v, queue.MaxID)
	}
	return n, nil
}

func (s *Server) serveBrowse(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	tube := q.Get("tube")
	if err := queue.CheckTube(tube); err != nil {
		return err
	}
	stateName := q.Get("state")
	if stateName == "" {
		stateName = "ready"
	}
	state, ok := stateNamed(stateName)
	if !ok {
		return badRequest("httpapi: state %q: want ready, delayed, reserved or buried", stateName)
	}
	after, err := cursor(q.Get("after"), "after")
	if err != nil {
		return err
	}
	before, err := cursor(q.Get("before"), "before")
	if err != nil {
		return err
	}
	if after != 0 && before != 0 {
		return badRequest("httpapi: give after or before, not both")
	}
	sr, err := searchOf(q.Get("q"))
	if err != nil {
		return err
	}
	ctx := r.Context()
	st, err := s.Queue.StatsTube(ctx, tube)
	if errors.Is(err, queue.ErrNotFound) {
		return serveMissing(w, missingData{What: "tube", Name: tube,
			Why: "The store knows no tube " + strconv.Quote(tube) + ": a tube is there while it holds jobs or a client uses or watches it."})
	}
	if err != nil {
		return err
	}
	d := browseData{Tube: tube, State: stateName, Stats: tubeStatsOf(st), PauseOpts: pauseOpts, Query: sr.text}
	if km, ok, err := sr.keyMatchIn(ctx, s.Queue, tube); err != nil {
		return err
	} else if ok {
		d.Key = &km
	}
	counts := map[queue.State]int64{queue.Ready: st.Ready, queue.Delayed: st.Delayed, queue.Reserved: st.Reserved, queue.Buried: st.Buried}
	for _, bs := range browseStates {
		d.Tabs = append(d.Tabs, browseTab{State: bs.String(), Count: counts[bs], Active: bs == state})
	}
	d.Count = counts[state]
	jobs, err := s.Queue.PeekStateN(ctx, tube, state, queue.MaxPeekN)
	if err != nil {
		return err
	}
	slices.SortFunc(jobs, func(a, b queue.Job) int { return cmp.Compare(a.ID, b.ID) })
	d.Window, d.Cut = len(jobs), d.Count > int64(len(jobs))
	if sr.any() {
		jobs = slices.DeleteFunc(jobs, func(j queue.Job) bool { return !sr.job(j) })
		d.Matched = len(jobs)
	}
	// The page: the first browsePage after the cursor, or the last
	// browsePage before it.
	lo := 0
	switch {
	case before != 0:
		hi, _ := slices.BinarySearchFunc(jobs, queue.ID(before), func(j queue.Job, id queue.ID) int { return cmp.Compare(j.ID, id) })
		lo = max(hi-browsePage, 0)
	case after != 0:
		lo, _ = slices.BinarySearchFunc(jobs, queue.ID(after)+1, func(j queue.Job, id queue.ID) int { return cmp.Compare(j.ID, id) })
	}
	hi := min(lo+browsePage, len(jobs))
	page := jobs[lo:hi]
	if len(page) > 0 {
		d.From, d.To = lo+1, hi
		if lo > 0 {
			d.Prev = uint64(page[0].ID)
		}
		if hi < len(jobs) {
			d.Next = uint64(page[len(page)-1].ID)
		}
	}
	for _, j := range page {
		bj := browseJob{Job: j, DueInMS: -1}
		if state != queue.Ready {
			bj = rowStats(ctx, s.Queue, j)
		}
		d.Jobs = append(d.Jobs, bj)
	}
	return renderFragment(w, http.StatusOK, "browse", d)
}

// renderFragment renders the template name with data as an HTML reply
// of the given status.
func renderFragment(w http.ResponseWriter, status int, name string, data any) error {
	var buf bytes.Buffer
	if err := dashboardTmpl.ExecuteTemplate(&buf, name, data); err != nil {
		return fmt.Errorf("dashboard: %s: %w", name, err)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
	return nil
}

// jobPageData is what the job page shows.
type jobPageData struct {
	Job    queue.Job
	Stats  queue.JobStats
	State  string
	Holder Holder // reserved: who holds it
	// The body: Text when it is UTF-8 (JSON indented), else Hex (a dump)
	// and Base64; each of at most jobPageBody bytes of it.
	Size   int
	Text   string
	JSON   bool
	Hex    string
	Base64 string
	Cut    bool
	// Extra holds what queue.JobStats says beyond the fields the page
	// names (see jobExtras).
	Extra []jobField
	// Errors are the errors of its attempts the store keeps, newest
	// first (see jobErrors): at most MaxErrors, whose reasons take at
	// most ErrorBytes together, each at most ReasonBytes.
	Errors                             []attemptError
	MaxErrors, ErrorBytes, ReasonBytes int
	// Finished: a job its tube keeps after it ended, with its Result
	// (FinishedAt and KeptUntil are among Extra).
	Finished bool
	Result   shownBytes
}

// shownBytes is bytes as the job page shows them: Text when UTF-8 (JSON
// indented), else Hex (a dump of the first jobPageHex bytes).
type shownBytes struct {
	Size int
	Text string
	JSON bool
	Hex  string
}

func pageText(b []byte) shownBytes {
	out := shownBytes{Size: len(b)}
	switch {
	case len(b) == 0:
	case utf8.Valid(b):
		var ind bytes.Buffer
		if json.Valid(b) && json.Indent(&ind, b, "", "  ") == nil {
			out.Text, out.JSON = ind.String(), true
		} else {
			out.Text = string(b)
		}
	default:
		out.Hex = hex.Dump(b[:min(len(b), jobPageHex)])
	}
	return out
}

// attemptError is an error a job was released or buried with.
type attemptError struct {
	At      time.Time
	Attempt int64 // the reserve it ended (1: the first); 0 when not known
	Reason  string
}

// jobErrors returns the errors of st's attempts that the store keeps,
// newest first: its error history (queue.JobStats.Errors). A job with a
// last error but no history (stored before the stores kept one, or whose
// last error is a cancel's reason) shows its last error, whose attempt is
// the job's last reserve when the error came after it (a release or bury
// ends the reservation it is given in), unknown when the job was reserved
// again since.
func jobErrors(st queue.JobStats) []attemptError {
	if len(st.Errors) > 0 {
		out := make([]attemptError, 0, len(st.Errors))
		for i := len(st.Errors) - 1; i >= 0; i-- {
			e := st.Errors[i]
			out = append(out, attemptError{At: e.At, Attempt: int64(e.Attempt), Reason: e.Reason})
		}
		return out
	}
	if st.LastError == "" {
		return nil
	}
	e := attemptError{At: st.LastErrorAt, Reason: st.LastError}
	if !st.LastErrorAt.Before(st.ReservedAt) && st.Reserves > 0 {
		e.Attempt = int64(st.Reserves)
	}
	return []attemptError{e}
}

// jobPageBody is the most bytes of a body the job page shows.
const jobPageBody = 64 << 10

// jobPageHex is the most bytes of a binary body shown as a hex dump.
const jobPageHex = 4 << 10

type jobField struct {
	Name  string
	Value string
	At    time.Time // a time: shown in the zone the reader chose
}

func (s *Server) serveJob(w http.ResponseWriter, r *http.Request) error {
	n, err := strconv.ParseUint(r.URL.Query().Get("id"), 10, 64)
	if err != nil || n == 0 || n > uint64(queue.MaxID) {
		return badRequest("httpapi: job id %q: want a whole number from 1 to %d", r.URL.Query().Get("id"), queue.MaxID)
	}
	id := queue.ID(n)
	st, err := s.Queue.StatsJob(r.Context(), id) // the job and its stats in one look
	if errors.Is(err, queue.ErrNotFound) {
		// A job its tube keeps after it finished (docs/keys.md).
		if kst, kerr := s.Queue.Lookup(r.Context(), id); kerr == nil {
			st, err = kst, nil
		}
	}
	if errors.Is(err, queue.ErrNotFound) {
		return serveMissing(w, missingData{What: "job", Name: "#" + strconv.FormatUint(n, 10),
			Why: "The store holds no job #" + strconv.FormatUint(n, 10) + ": it was deleted (a job is deleted once its work is done) or was never put."})
	}
	if err != nil {
		return err
	}
	j := st.Job()
	d := jobPageData{Job: j, Stats: st, State: st.State.String(), Holder: holderOf(st.ReservedBy), Size: len(j.Body), Extra: jobExtras(st),
		Errors: jobErrors(st), MaxErrors: queue.MaxErrors, ErrorBytes: queue.MaxErrorBytes, ReasonBytes: queue.MaxReasonLen}
	if st.State == queue.Finished {
		d.Finished = true
		d.Result = pageText(st.Result)
	}
	body := j.Body
	if len(body) > jobPageBody {
		body, d.Cut = body[:jobPageBody], true
	}
	if utf8.Valid(j.Body) {
		var ind bytes.Buffer
		if !d.Cut && json.Valid(body) && json.Indent(&ind, body, "", "  ") == nil {
			d.Text, d.JSON = ind.String(), true
		} else {
			d.Text = string(body)
		}
	} else {
		d.Hex = hex.Dump(body[:min(len(body), jobPageHex)])
		d.Base64 = base64.StdEncoding.EncodeToString(body)
	}
	return renderFragment(w, http.StatusOK, "job", d)
}

// knownJobStats are the fields of queue.JobStats the job page names.
var knownJobStats = map[string]bool{"ID": true, "Tube": true, "State": true, "Priority": true, "Age": true,
	"Delay": true, "TTR": true, "TimeLeft": true, "Reserves": true, "Timeouts": true, "Releases": true,
	"Buries": true, "Kicks": true,
	// Shown elsewhere: the body below the facts, the holder by holderOf
	// (an HTTP lease's owner is its token, never shown whole).
	"Body": true, "ReservedBy": true,
	// In the errors' table (jobErrors).
	"LastError": true, "LastErrorAt": true, "Errors": true,
	// A kept job's result, in a section of its own.
	"Result": true}

// jobExtras returns the fields of st the page does not name, those that
// are set: what the store records beyond beanstalkd's stats-job (a last
// error, when the job changed state). A field added to queue.JobStats
// shows on the page with no change here: strings as they are, times as
// times, durations as durations. To give one a place of its own, name it
// in knownJobStats and in the template "job".
func jobExtras(st queue.JobStats) []jobField { return extraFields(st, knownJobStats) }

// extraFields returns the exported fields of the struct v that known does
// not name and that are not zero, named for people ("LastError" is
// "last error").
func extraFields(v any, known map[string]bool) []jobField {
	var out []jobField
	rv := reflect.ValueOf(v)
	for i := range rv.NumField() {
		f := rv.Type().Field(i)
		if !f.IsExported() || known[f.Name] || rv.Field(i).IsZero() {
			continue
		}
		var s string
		var at time.Time
		switch x := rv.Field(i).Interface().(type) {
		case time.Time:
			s, at = x.UTC().Format("2006-01-02 15:04:05.000 UTC"), x
		case time.Duration:
			s = durMS(x.Milliseconds())
		case fmt.Stringer:
			s = x.String()
		default:
			s = fmt.Sprint(x)
		}
		out = append(out, jobField{Name: spaced(f.Name), Value: s, At: at})
	}
	return out
}

// spaced writes a Go name as words: "LastErrorAt" is "last error at",
// "HTTPStatus" "HTTP status".
func spaced(name string) string {
	var b strings.Builder
	rs := []rune(name)
	for i, r := range rs {
		upper := unicode.IsUpper(r)
		if i > 0 && upper && (!unicode.IsUpper(rs[i-1]) || i+1 < len(rs) && unicode.IsLower(rs[i+1])) {
			b.WriteByte(' ')
		}
		if upper && i+1 < len(rs) && unicode.IsLower(rs[i+1]) {
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Bulk delete of buried jobs: each request deletes at most maxDeleteBuried
// jobs, in store calls of deleteBuriedBatch; the script repeats it until
// none is left.
const (
	maxDeleteBuried   = 1000
	deleteBuriedBatch = 100
)

// DeleteBuriedRequest is the JSON body of POST
// /dashboard/tubes/{tube}/delete-buried.
type DeleteBuriedRequest struct {
	// Max is the most jobs to delete, 1 to 1000.
	Max int `json:"max"`
}

// DeleteBuriedReply says what a delete of buried jobs did.
type DeleteBuriedReply struct {
	Deleted int   `json:"deleted"`
	Buried  int64 `json:"buried"` // buried jobs left in the tube
}

func (s *Server) deleteBuried(w http.ResponseWriter, r *http.Request) error {
	tube := r.PathValue("tube")
	if err := queue.CheckTube(tube); err != nil {
		return err
	}
	var req DeleteBuriedRequest
	if err := readJSON(w, r, maxSmallBody, &req); err != nil {
		return err
	}
	if req.Max < 1 || req.Max > maxDeleteBuried {
		return badRequest("httpapi: max is %d, want 1 to %d", req.Max, maxDeleteBuried)
	}
	n, err := deleteBuried(r.Context(), s.Queue.WithOwner(noLease), tube, req.Max)
	if err != nil {
		return err
	}
	st, err := s.Queue.StatsTube(r.Context(), tube)
	if err != nil && !isOutcome(err) {
		return err
	}
	writeJSON(w, http.StatusOK, DeleteBuriedReply{Deleted: n, Buried: st.Buried})
	return nil
}

// deleteBuried deletes up to max of tube's oldest buried jobs. A job
// kicked between its listing and its delete is deleted all the same (ready
// or delayed); one reserved meanwhile is not.
func deleteBuried(ctx context.Context, q *queue.Queue, tube string, max int) (int, error) {
	deleted := 0
	for deleted < max {
		jobs, err := q.PeekStateN(ctx, tube, queue.Buried, min(deleteBuriedBatch, max-deleted))
		if err != nil || len(jobs) == 0 {
			return deleted, err
		}
		ids := make([]queue.ID, len(jobs))
		for i, j := range jobs {
			ids[i] = j.ID
		}
		errs, err := q.DeleteMany(ctx, ids)
		if err != nil {
			return deleted, err
		}
		gone := 0
		for _, e := range errs {
			if e == nil {
				gone++
			}
		}
		deleted += gone
		if gone == 0 {
			return deleted, nil // others took them meanwhile
		}
	}
	return deleted, nil
}
