package httpapi

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/hourglass-io/hourglass/ratelimit"
)

// limitsPrimitive serves the rate limits under /v1/limits.
var limitsPrimitive = primitive{
	name:    "limits",
	pkg:     "ratelimit",
	enabled: func(s *Server) bool { return s.Limiter != nil },
	routes: func(s *Server) []route {
		return []route{
			{"POST", "/v1/limits/allow", "allow", s.limitAllow},
			{"POST", "/v1/limits/wait", "wait", s.limitWait},
			{"GET", "/v1/limits", "limits", s.limitList},
		}
	},
	panel: limitsPanel,
}

// Error codes of the rate limits.
const (
	CodeBadLimit     = "bad_limit"     // 400: a limit ratelimit.Limit.Validate refuses, or limits of different algorithms
	CodeImpossible   = "impossible"    // 400: the cost exceeds a limit's burst: no wait would admit it
	CodeNotSupported = "not_supported" // 400: wait with a window algorithm (sliding-log, sliding-window)
	CodeUnknownLimit = "unknown_limit" // 404: a name the server's configuration does not have
)

// AllowRequest is the JSON body of an allow: N events (default 1) on Key
// under Limits, or under the server's limit Name (one of the two).
type AllowRequest struct {
	Key    string  `json:"key"`
	N      *int    `json:"n,omitempty"`
	Name   string  `json:"name,omitempty"`
	Limits []Limit `json:"limits,omitempty"`
}

// WaitRequest is the JSON body of a wait: an AllowRequest and the longest
// wait accepted, cut to the server's MaxWait (absent: MaxWait).
type WaitRequest struct {
	AllowRequest
	MaxWaitMS *int64 `json:"max_wait_ms,omitempty"`
}

// LimitReply is the reply of an allow (200 when allowed, 429 when not) and
// of a wait. A 429 carries the error too, and the Retry-After header (in
// seconds, rounded up).
type LimitReply struct {
	Allowed bool `json:"allowed"`
	// Remaining (allow) is how many more events would pass now.
	Remaining int `json:"remaining"`
	// RetryAfterMS is how long until the same call could pass (rounded up
	// to a millisecond); 0 when allowed.
	RetryAfterMS int64 `json:"retry_after_ms"`
	// ResetAfterMS (allow) is how long until the key is idle again.
	ResetAfterMS int64 `json:"reset_after_ms"`
	// WaitedMS (wait) is how long the call waited for its slot.
	WaitedMS *int64 `json:"waited_ms,omitempty"`
	// Error is there on a 429.
	Error *errorDetail `json:"error,omitempty"`
}

type errorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// NamedLimit is one of the server's named limits in GET /v1/limits.
type NamedLimit struct {
	Name   string  `json:"name"`
	Spec   string  `json:"spec"`
	Limits []Limit `json:"limits"`
}

// limitedError is a 429 whose reply is a LimitReply: writeError writes it
// as it is; the metrics see its code.
type limitedError struct {
	apiError
	reply LimitReply
}

func (e limitedError) Unwrap() error { return e.apiError }

func (e limitedError) writeReply(w http.ResponseWriter) {
	secs := (e.retryAfter + time.Second - 1) / time.Second
	w.Header().Set("Retry-After", strconv.FormatInt(int64(max(secs, 1)), 10))
	writeJSON(w, e.status, e.reply)
}

func limited(reply LimitReply, retry time.Duration, msg string) limitedError {
	reply.Error = &errorDetail{CodeRateLimited, msg}
	return limitedError{apiError{http.StatusTooManyRequests, CodeRateLimited, msg, retry}, reply}
}

// ceilMS is d in whole milliseconds, rounded up.
func ceilMS(d time.Duration) int64 { return int64((d + time.Millisecond - 1) / time.Millisecond) }

// call is a decoded allow or wait.
type limitCall struct {
	key    string
	n      int
	name   string // the named limit, or ""
	limits []ratelimit.Limit
}

// label is the "limit" label of the decisions metric: the name, or
// "inline" for limits given in the request (never the key).
func (c limitCall) label() string {
	if c.name == "" {
		return "inline"
	}
	return c.name
}

func (s *Server) limitCall(req AllowRequest) (limitCall, error) {
	c := limitCall{key: req.Key, n: 1, name: req.Name}
	if req.N != nil {
		c.n = *req.N
	}
	switch {
	case req.Key == "":
		return c, badField("key", "is empty")
	case len(req.Key) > 1024:
		return c, badField("key", "is %d bytes, want at most 1024", len(req.Key))
	case c.n < 1:
		return c, badField("n", "is %d, want 1 or more", c.n)
	case (req.Name == "") == (len(req.Limits) == 0):
		return c, badRequest("give name (a limit of the server's configuration) or limits, one of the two")
	}
	if req.Name != "" {
		ls, ok := s.NamedLimits[req.Name]
		if !ok {
			return c, apiError{http.StatusNotFound, CodeUnknownLimit, "no limit named " + strconv.Quote(req.Name) + " in the server's configuration", 0}
		}
		c.limits = ls
		return c, nil
	}
	for i, l := range req.Limits {
		rl, err := limitOf(l)
		if err != nil {
			return c, limitFieldError(i, err)
		}
		c.limits = append(c.limits, rl)
	}
	if err := checkLimits(c.limits); err != nil {
		return c, err
	}
	return c, nil
}

// decided records a decision in the metrics and the dashboard's counts.
func (s *Server) decided(c limitCall, allowed bool, err error) {
	result := "denied"
	switch {
	case err != nil:
		result = "error"
	case allowed:
		result = "allowed"
	}
	alg := "none"
	if len(c.limits) > 0 {
		alg = c.limits[0].Algorithm.String()
	}
	s.Metrics.limitDecision(c.label(), alg, result)
	if err == nil {
		s.limitActivity.record(c, allowed, time.Now())
	}
}

// fillName sets req.Name from the "name" member as sent (raw, nil when
// absent), so that an empty name is told from an absent one: an error when
// it is not a string, or is empty.
func fillName(raw json.RawMessage, req *AllowRequest) error {
	if raw == nil || string(raw) == "null" {
		return nil
	}
	if err := json.Unmarshal(raw, &req.Name); err != nil {
		return badRequest("httpapi: name: want a string, got %s", raw)
	}
	if req.Name == "" {
		return badRequest("httpapi: name is empty: give a limit's name, or leave name out and give limits")
	}
	return nil
}

func (s *Server) limitAllow(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		AllowRequest
		Name json.RawMessage `json:"name"` // shadows AllowRequest.Name
	}
	if err := readJSON(w, r, maxSmallBody, &body); err != nil {
		return err
	}
	req := body.AllowRequest
	if err := fillName(body.Name, &req); err != nil {
		return err
	}
	c, err := s.limitCall(req)
	if err != nil {
		return err
	}
	res, err := s.Limiter.AllowN(r.Context(), c.key, c.n, c.limits...)
	s.decided(c, res.Allowed, err)
	if err != nil {
		return err
	}
	reply := LimitReply{Allowed: res.Allowed, Remaining: res.Remaining, RetryAfterMS: ceilMS(res.RetryAfter), ResetAfterMS: ceilMS(res.ResetAfter)}
	if !res.Allowed {
		return limited(reply, res.RetryAfter, "rate limited: retry after "+res.RetryAfter.Round(time.Millisecond).String())
	}
	writeJSON(w, http.StatusOK, reply)
	return nil
}

// limitWait reserves the earliest slot within the wait asked (cut to
// MaxWait) and answers when it comes: a long poll. A slot beyond the wait
// is a 429 at once, charging nothing; a call that ends before its slot
// (the client gone, the server shutting down) gives the slot back.
func (s *Server) limitWait(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		WaitRequest
		Name json.RawMessage `json:"name"` // shadows AllowRequest.Name
	}
	if err := readJSON(w, r, maxSmallBody, &body); err != nil {
		return err
	}
	req := body.WaitRequest
	if err := fillName(body.Name, &req.AllowRequest); err != nil {
		return err
	}
	c, err := s.limitCall(req.AllowRequest)
	if err != nil {
		return err
	}
	maxWait := s.maxWait()
	if req.MaxWaitMS != nil {
		if *req.MaxWaitMS < 0 {
			return badField("max_wait_ms", "is %d, want 0 or more", *req.MaxWaitMS)
		}
		maxWait = min(ms(*req.MaxWaitMS), maxWait)
	}
	ctx, done, err := s.longPoll(r, maxWait > 0)
	if err != nil {
		return err
	}
	defer done()
	res, err := s.Limiter.ReserveN(ctx, c.key, c.n, maxWait, c.limits...)
	s.decided(c, err == nil && res.OK(), err)
	if err != nil {
		return err
	}
	if !res.OK() {
		return limited(LimitReply{RetryAfterMS: ceilMS(res.Delay())}, res.Delay(),
			"rate limited: the earliest slot is "+res.Delay().Round(time.Millisecond).String()+" away, beyond the wait of "+maxWait.String())
	}
	if err := res.Wait(ctx); err != nil {
		if err != ctx.Err() { // the slot was not given back
			s.logger().Warn("limits: giving back an abandoned slot", "err", err)
		}
		return s.pollErr(r, ctx.Err())
	}
	waited := ceilMS(res.Delay())
	writeJSON(w, http.StatusOK, LimitReply{Allowed: true, WaitedMS: &waited})
	return nil
}

func (s *Server) limitList(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, struct {
		Limits []NamedLimit `json:"limits"`
	}{s.namedLimits()})
	return nil
}

// namedLimits lists the server's named limits by name.
func (s *Server) namedLimits() []NamedLimit {
	out := make([]NamedLimit, 0, len(s.NamedLimits))
	for name, ls := range s.NamedLimits {
		nl := NamedLimit{Name: name, Spec: FormatLimits(ls)}
		for _, l := range ls {
			nl.Limits = append(nl.Limits, LimitOf(l))
		}
		out = append(out, nl)
	}
	slices.SortFunc(out, func(a, b NamedLimit) int {
		if a.Name < b.Name {
			return -1
		}
		if a.Name > b.Name {
			return 1
		}
		return 0
	})
	return out
}
