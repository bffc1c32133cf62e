package httpapi

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/schedule"
)

// Schedules over HTTP:
//
//	PUT    /v1/schedules/{name}           create or update (idempotent: an unchanged definition changes nothing)
//	GET    /v1/schedules                  list, in name order (after, limit)
//	GET    /v1/schedules/{name}           the schedule: definition, next tick, counts, last fires
//	DELETE /v1/schedules/{name}           delete
//	POST   /v1/schedules/{name}/pause     stop firing
//	POST   /v1/schedules/{name}/resume    fire again from the first tick after now
//	POST   /v1/schedules/{name}/trigger   put the job now, outside the spec
//	GET    /v1/schedules/{name}/next      the next n fire times
//
// The server manages schedules; it does not fire them. Whatever runs a
// schedule.Client's Run over the same store fires them (hourglass serve
// does).

// schedulesPrimitive serves schedules under /v1/schedules.
var schedulesPrimitive = primitive{
	name:    "schedules",
	pkg:     "schedule",
	enabled: func(s *Server) bool { return s.Schedules != nil },
	routes: func(s *Server) []route {
		return []route{
			{"PUT", "/v1/schedules/{name}", "schedule-set", s.scheduleSet},
			{"GET", "/v1/schedules", "schedule-list", s.scheduleList},
			{"GET", "/v1/schedules/{name}", "schedule-get", s.scheduleGet},
			{"DELETE", "/v1/schedules/{name}", "schedule-delete", s.scheduleDelete},
			{"POST", "/v1/schedules/{name}/pause", "schedule-pause", s.scheduleChange((*schedule.Client).Pause)},
			{"POST", "/v1/schedules/{name}/resume", "schedule-resume", s.scheduleChange((*schedule.Client).Resume)},
			{"POST", "/v1/schedules/{name}/trigger", "schedule-trigger", s.scheduleTrigger},
			{"GET", "/v1/schedules/{name}/next", "schedule-next", s.scheduleNext},
		}
	},
	panel: schedulesPanel,
}

// Bounds of the schedules' query parameters.
const (
	// DefaultScheduleList and MaxScheduleList: the schedules one list
	// returns by default and at most (limit).
	DefaultScheduleList = 100
	MaxScheduleList     = 1000
	// DefaultScheduleNext and MaxScheduleNext: the fire times next returns
	// by default and at most (n).
	DefaultScheduleNext = 10
	MaxScheduleNext     = 1000
)

// ScheduleRequest is the JSON body of a set: a schedule's definition, its
// name in the path. It is also one entry of hourglass serve's
// --schedules-file (with a "name").
type ScheduleRequest struct {
	// Spec is a cron expression, a macro or "@every <duration>". Required.
	Spec string `json:"spec"`
	// Zone is an IANA time zone; empty is UTC.
	Zone string `json:"zone,omitempty"`
	// Start and End, RFC 3339, bound the ticks; Start anchors "@every".
	Start string `json:"start,omitempty"`
	End   string `json:"end,omitempty"`
	// Job is the job put on each tick.
	Job ScheduleJobRequest `json:"job"`
	// Misfire is the policy for missed ticks; absent: skip.
	Misfire *ScheduleMisfire `json:"misfire,omitempty"`
	// GraceMS is how late a tick may fire and count as on time; 0: a
	// minute (schedule.DefaultGrace).
	GraceMS int64 `json:"grace_ms,omitempty"`
	// Overlap is what a tick does while the previous job is still in the
	// queue: "allow" (absent), "skip", "buffer_one" or "cancel_previous"
	// (schedule.Overlap).
	Overlap string `json:"overlap,omitempty"`
	// PauseOnFailure pauses the schedule when a tick finds its previous
	// job buried.
	PauseOnFailure bool `json:"pause_on_failure,omitempty"`
}

// ScheduleJobRequest is the job of a ScheduleRequest. At most one of Body
// and BodyBase64.
type ScheduleJobRequest struct {
	Tube       string  `json:"tube"`
	Body       *string `json:"body,omitempty"`
	BodyBase64 *string `json:"body_base64,omitempty"`
	// Priority is absent for queue.DefaultPriority (1024).
	Priority *uint32 `json:"priority,omitempty"`
	// TTRMS is the job's time to run; 0: the queue's default.
	TTRMS int64 `json:"ttr_ms,omitempty"`
}

// ScheduleMisfire is a misfire policy: "skip", "fire_once" or "catch_up"
// with N, the most missed ticks it fires.
type ScheduleMisfire struct {
	Policy string `json:"policy"`
	N      int    `json:"n,omitempty"`
}

// Schedule returns the schedule the request declares under name, checked
// as schedule.Schedule.Validate checks it. An error wraps one of package
// schedule's errors for bad input (ErrInvalidOption for the fields of the
// request itself) and names the field.
func (q *ScheduleRequest) Schedule(name string) (schedule.Schedule, error) {
	sc := schedule.Schedule{Name: name, Spec: q.Spec, Zone: q.Zone}
	var err error
	if sc.Start, err = rfc3339(q.Start, "start"); err != nil {
		return sc, err
	}
	if sc.End, err = rfc3339(q.End, "end"); err != nil {
		return sc, err
	}
	j := q.Job
	sc.Job = schedule.Job{Tube: j.Tube, Priority: priority(j.Priority), Body: []byte{}}
	switch {
	case j.Body != nil && j.BodyBase64 != nil:
		return sc, fmt.Errorf("%w: job: give body or body_base64, not both", schedule.ErrInvalidOption)
	case j.BodyBase64 != nil:
		b, err := base64.StdEncoding.DecodeString(*j.BodyBase64)
		if err != nil {
			return sc, fmt.Errorf("%w: job.body_base64: %v", schedule.ErrInvalidOption, err)
		}
		sc.Job.Body = b
	case j.Body != nil:
		sc.Job.Body = []byte(*j.Body)
	}
	if j.TTRMS < 0 || j.TTRMS > queue.MaxDuration.Milliseconds() || (j.TTRMS > 0 && j.TTRMS < queue.MinTTR.Milliseconds()) {
		return sc, fmt.Errorf("%w: job.ttr_ms is %d, want 0 (the default) or %d to %d (milliseconds)", schedule.ErrInvalidOption, j.TTRMS, queue.MinTTR.Milliseconds(), queue.MaxDuration.Milliseconds())
	}
	sc.Job.TTR = time.Duration(j.TTRMS) * time.Millisecond
	if q.Misfire != nil {
		switch q.Misfire.Policy {
		case "skip", "":
			sc.Misfire = schedule.Skip()
		case "fire_once":
			sc.Misfire = schedule.FireOnce()
		case "catch_up":
			sc.Misfire = schedule.CatchUp(q.Misfire.N)
		default:
			return sc, fmt.Errorf("%w: misfire.policy %q: want skip, fire_once or catch_up", schedule.ErrInvalidOption, q.Misfire.Policy)
		}
		if q.Misfire.N != 0 && q.Misfire.Policy != "catch_up" {
			return sc, fmt.Errorf("%w: misfire.n is for the catch_up policy only", schedule.ErrInvalidOption)
		}
	}
	if q.GraceMS < 0 || q.GraceMS > queue.MaxDuration.Milliseconds() {
		return sc, fmt.Errorf("%w: grace_ms is %d, want 0 (a minute) to %d", schedule.ErrInvalidOption, q.GraceMS, queue.MaxDuration.Milliseconds())
	}
	sc.Grace = time.Duration(q.GraceMS) * time.Millisecond
	if sc.Overlap, err = schedule.ParseOverlap(q.Overlap); err != nil {
		return sc, fmt.Errorf("%w: overlap %q: want allow, skip, buffer_one or cancel_previous", schedule.ErrInvalidOption, q.Overlap)
	}
	sc.PauseOnFailure = q.PauseOnFailure
	if _, err := sc.Validate(); err != nil {
		return sc, err
	}
	return sc, nil
}

// rfc3339 parses an optional RFC 3339 time.
func rfc3339(v, field string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, fmt.Errorf("%w: %s %q: want an RFC 3339 time such as 2026-01-02T15:04:05Z", schedule.ErrInvalidOption, field, v)
	}
	return t, nil
}

// ScheduleState is a schedule in a reply: its definition and the state of
// its ticks. Times are RFC 3339 in the schedule's zone.
type ScheduleState struct {
	Name    string          `json:"name"`
	Spec    string          `json:"spec"`
	Zone    string          `json:"zone"`
	Start   string          `json:"start,omitempty"`
	End     string          `json:"end,omitempty"`
	Job     ScheduleJob     `json:"job"`
	Misfire ScheduleMisfire `json:"misfire"`
	GraceMS int64           `json:"grace_ms"`
	// Overlap is the overlap policy: allow, skip, buffer_one or
	// cancel_previous.
	Overlap        string `json:"overlap"`
	PauseOnFailure bool   `json:"pause_on_failure"`
	// Next is the next tick; absent when the schedule has ended.
	Next     string `json:"next,omitempty"`
	Paused   bool   `json:"paused"`
	Fires    uint64 `json:"fires"`
	Misfires uint64 `json:"misfires"`
	// Skips counts the ticks the overlap policy put nothing for, and
	// those at which the schedule paused itself.
	Skips uint64 `json:"skips"`
	// PauseReason says why the schedule paused itself; absent otherwise.
	PauseReason string `json:"pause_reason,omitempty"`
	// LastJobID is the job of the last fire, the one the overlap policy
	// looks at; 0 before the first.
	LastJobID uint64 `json:"last_job_id"`
	// Last holds the last fires, newest first.
	Last    []ScheduleFire `json:"last"`
	Version uint64         `json:"version"`
}

// ScheduleJob is the job of a schedule in a reply.
type ScheduleJob struct {
	Tube       string  `json:"tube"`
	Priority   uint32  `json:"priority"`
	TTRMS      int64   `json:"ttr_ms"`
	BodyBase64 string  `json:"body_base64"`
	Body       *string `json:"body,omitempty"`
}

// ScheduleFire is one fired tick: the reply of a trigger, and an entry of
// a schedule's last fires.
type ScheduleFire struct {
	Tick       string `json:"tick"`
	JobID      uint64 `json:"job_id"`
	LatenessMS int64  `json:"lateness_ms"`
	// Manual marks a fire by trigger rather than by the spec.
	Manual bool `json:"manual"`
}

// ScheduleList is the reply of a list.
type ScheduleList struct {
	Schedules []ScheduleState `json:"schedules"`
	// NextAfter, when set, is the after of the next page.
	NextAfter string `json:"next_after,omitempty"`
}

// ScheduleTimes is the reply of next.
type ScheduleTimes struct {
	Times []string `json:"times"`
}

// zoneOf returns a schedule's location, UTC when it cannot be loaded.
func zoneOf(name string) *time.Location {
	loc, err := schedule.LoadZone(name)
	if err != nil {
		return time.UTC
	}
	return loc
}

func fmtTime(t time.Time, loc *time.Location) string {
	if t.IsZero() {
		return ""
	}
	return t.In(loc).Format(time.RFC3339Nano)
}

func policyName(p schedule.Policy) ScheduleMisfire {
	switch p.Kind {
	case schedule.PolicyFireOnce:
		return ScheduleMisfire{Policy: "fire_once"}
	case schedule.PolicyCatchUp:
		return ScheduleMisfire{Policy: "catch_up", N: p.N}
	}
	return ScheduleMisfire{Policy: "skip"}
}

func fireOf(f schedule.Fire, loc *time.Location) ScheduleFire {
	return ScheduleFire{Tick: fmtTime(f.Tick, loc), JobID: f.JobID, LatenessMS: f.Lateness.Milliseconds(), Manual: f.Manual}
}

func scheduleStateOf(st schedule.State) ScheduleState {
	loc := zoneOf(st.Zone)
	out := ScheduleState{
		Name: st.Name, Spec: st.Spec, Zone: st.Zone, Start: fmtTime(st.Start, loc), End: fmtTime(st.End, loc),
		Job: ScheduleJob{Tube: st.Job.Tube, Priority: st.Job.Priority, TTRMS: st.Job.TTR.Milliseconds(),
			BodyBase64: base64.StdEncoding.EncodeToString(st.Job.Body)},
		Misfire: policyName(st.Misfire), GraceMS: st.Grace.Milliseconds(),
		Overlap: st.Overlap.String(), PauseOnFailure: st.PauseOnFailure,
		Next: fmtTime(st.Next, loc), Paused: st.Paused, Fires: st.Fires, Misfires: st.Misfires,
		Skips: st.Skips, PauseReason: st.PauseReason, LastJobID: st.LastJob,
		Last: make([]ScheduleFire, 0, len(st.Last)), Version: st.Version,
	}
	if utf8.Valid(st.Job.Body) {
		b := string(st.Job.Body)
		out.Job.Body = &b
	}
	for _, f := range st.Last {
		out.Last = append(out.Last, fireOf(f, loc))
	}
	return out
}

func (s *Server) scheduleSet(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("name")
	var req ScheduleRequest
	// base64 takes 4 bytes per 3, and JSON escapes up to 6 per byte of text.
	if err := readJSON(w, r, schedule.MaxBody*6+maxSmallBody, &req); err != nil {
		return err
	}
	sc, err := req.Schedule(name)
	if err != nil {
		return scheduleFieldError(err)
	}
	st, err := s.Schedules.Set(r.Context(), sc)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, scheduleStateOf(st))
	return nil
}

func (s *Server) scheduleList(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	var err error
	limit := uint64(DefaultScheduleList)
	if v := q.Get("limit"); v != "" {
		if limit, err = queryUint(v, "limit", MaxScheduleList); err != nil {
			return err
		}
		if limit == 0 {
			return badRequest("limit 0: want 1 to %d", MaxScheduleList)
		}
	}
	after := q.Get("after")
	if len(after) > schedule.MaxNameLen {
		return badField("after", "is %d bytes, want at most %d (a schedule name)", len(after), schedule.MaxNameLen)
	}
	sts, err := s.Schedules.List(r.Context(), after, int(limit))
	if err != nil {
		return err
	}
	out := ScheduleList{Schedules: make([]ScheduleState, 0, len(sts))}
	for _, st := range sts {
		out.Schedules = append(out.Schedules, scheduleStateOf(st))
	}
	if len(sts) == int(limit) {
		out.NextAfter = sts[len(sts)-1].Name
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// scheduleCall runs a call on the schedule named in the path.
// A schedule not found is named in the reply.
func (s *Server) scheduleCall(r *http.Request, call func(ctx context.Context, c *schedule.Client, name string) error) error {
	name := r.PathValue("name")
	err := call(r.Context(), s.Schedules, name)
	if errors.Is(err, schedule.ErrNotFound) {
		return fmt.Errorf("schedule %q: %w", name, err)
	}
	return err
}

func (s *Server) scheduleGet(w http.ResponseWriter, r *http.Request) error {
	return s.scheduleCall(r, func(ctx context.Context, c *schedule.Client, name string) error {
		st, err := c.Get(ctx, name)
		if err == nil {
			writeJSON(w, http.StatusOK, scheduleStateOf(st))
		}
		return err
	})
}

func (s *Server) scheduleDelete(w http.ResponseWriter, r *http.Request) error {
	return s.scheduleCall(r, func(ctx context.Context, c *schedule.Client, name string) error {
		err := c.Delete(ctx, name)
		if err == nil {
			w.WriteHeader(http.StatusNoContent)
		}
		return err
	})
}

// scheduleChange returns the handler of a change (Pause, Resume) that
// answers the schedule's state.
func (s *Server) scheduleChange(change func(c *schedule.Client, ctx context.Context, name string) (schedule.State, error)) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		return s.scheduleCall(r, func(ctx context.Context, c *schedule.Client, name string) error {
			st, err := change(c, ctx, name)
			if err == nil {
				writeJSON(w, http.StatusOK, scheduleStateOf(st))
			}
			return err
		})
	}
}

func (s *Server) scheduleTrigger(w http.ResponseWriter, r *http.Request) error {
	return s.scheduleCall(r, func(ctx context.Context, c *schedule.Client, name string) error {
		f, err := c.Trigger(ctx, name)
		if err != nil {
			return err
		}
		loc := time.UTC
		if st, err := c.Get(ctx, name); err == nil {
			loc = zoneOf(st.Zone)
		}
		writeJSON(w, http.StatusOK, fireOf(f, loc))
		return nil
	})
}

func (s *Server) scheduleNext(w http.ResponseWriter, r *http.Request) error {
	n := uint64(DefaultScheduleNext)
	if v := r.URL.Query().Get("n"); v != "" {
		var err error
		if n, err = queryUint(v, "n", MaxScheduleNext); err != nil {
			return err
		}
		if n == 0 {
			return badRequest("n 0: want 1 to %d", MaxScheduleNext)
		}
	}
	return s.scheduleCall(r, func(ctx context.Context, c *schedule.Client, name string) error {
		st, err := c.Get(ctx, name)
		if err != nil {
			return err
		}
		times, err := c.NextTimes(ctx, name, int(n))
		if err != nil {
			return err
		}
		loc := zoneOf(st.Zone)
		out := ScheduleTimes{Times: make([]string, 0, len(times))}
		for _, t := range times {
			out.Times = append(out.Times, fmtTime(t, loc))
		}
		writeJSON(w, http.StatusOK, out)
		return nil
	})
}

// schedulesPanelData is what the schedules panel shows.
type schedulesPanelData struct {
	Schedules []panelSchedule
	More      bool // more schedules than shown
	Max       int
}

type panelSchedule struct {
	ScheduleState
	NextInMS int64 // until the next tick; -1 when there is none
	Policy   string
	// NextAt and Fired (Last, with each tick as a time) are what the
	// dashboard shows, in the zone its reader chose.
	NextAt time.Time
	Fired  []panelFire
}

type panelFire struct {
	ScheduleFire
	At time.Time
}

// maxPanelSchedules bounds the schedules the panel lists.
const maxPanelSchedules = 100

// schedulesPanel lists the first schedules in name order with their next
// tick and last fires.
func schedulesPanel(ctx context.Context, s *Server) (any, error) {
	sts, err := s.Schedules.List(ctx, "", maxPanelSchedules+1)
	if err != nil {
		return nil, err
	}
	d := schedulesPanelData{Max: maxPanelSchedules}
	if len(sts) > maxPanelSchedules {
		sts, d.More = sts[:maxPanelSchedules], true
	}
	now := time.Now()
	for _, st := range sts {
		ps := panelSchedule{ScheduleState: scheduleStateOf(st), NextInMS: -1, Policy: st.Misfire.String()}
		// For people: to the second, with the zone's abbreviation.
		loc := zoneOf(st.Zone)
		ps.Next = panelTime(st.Next, loc)
		ps.Last = ps.Last[:min(len(ps.Last), 3)]
		ps.NextAt = st.Next
		for i := range ps.Last {
			ps.Last[i].Tick = panelTime(st.Last[i].Tick, loc)
			ps.Fired = append(ps.Fired, panelFire{ps.Last[i], st.Last[i].Tick})
		}
		if !st.Next.IsZero() {
			ps.NextInMS = max(st.Next.Sub(now), 0).Milliseconds()
		}
		d.Schedules = append(d.Schedules, ps)
	}
	return d, nil
}

// panelTime writes a time for the dashboard, in loc: 2026-03-29 03:00:00 CEST.
func panelTime(t time.Time, loc *time.Location) string {
	if t.IsZero() {
		return ""
	}
	return t.In(loc).Format("2006-01-02 15:04:05 MST")
}
