package httpapi

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/hourglass-io/hourglass/ratelimit"
)

// LimitSpecSyntax describes the text form of limits that ParseLimits reads
// (hourglass serve --limit, hourglass limit --limit).
const LimitSpecSyntax = `A limit is EVENTS/PER[,burst=N][,quota=N][,algorithm=A]: EVENTS events
per PER, a Go duration (30m, 1s, 24h, 1h30m) or a unit alone (ms, s, m, h).
burst is how many may pass at one instant (default EVENTS), quota the cost
of one event (default 1), A one of gcra (default), sliding-log or
sliding-window. funnel:capacity=N,drain=D[,quota=Q] is a leaky bucket
holding N units that drains completely in D, each call pouring in Q.
Several limits, all of one algorithm, are checked together, separated by
';': 1/1s;100/24h.`

// ParseLimits reads limits in the text form of LimitSpecSyntax:
// "100/1s,burst=10", "1/30m", "funnel:capacity=100,drain=1m,quota=1",
// "1/1s;100/24h". Each limit is checked (ratelimit.Limit.Validate), and
// the limits must share an algorithm. Errors wrap ratelimit.ErrInvalidLimit.
func ParseLimits(spec string) ([]ratelimit.Limit, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return nil, fmt.Errorf("%w: empty limit", ratelimit.ErrInvalidLimit)
	}
	var out []ratelimit.Limit
	for part := range strings.SplitSeq(spec, ";") {
		l, err := parseLimit(strings.TrimSpace(part))
		if err != nil {
			return nil, fmt.Errorf("limit %q: %w", part, err)
		}
		out = append(out, l)
	}
	if err := checkLimits(out); err != nil {
		return nil, err
	}
	return out, nil
}

// ParseNamedLimit reads NAME=SPEC (hourglass serve --limit): a name of 1 to
// 64 letters, digits and - _ . :, and limits as ParseLimits reads them.
func ParseNamedLimit(s string) (name string, limits []ratelimit.Limit, err error) {
	name, spec, ok := strings.Cut(s, "=")
	name = strings.TrimSpace(name)
	if !ok {
		return "", nil, fmt.Errorf("%w: %q: want NAME=SPEC, e.g. sms=1/30m", ratelimit.ErrInvalidLimit, s)
	}
	if err := checkLimitName(name); err != nil {
		return "", nil, err
	}
	limits, err = ParseLimits(spec)
	if err != nil {
		return "", nil, fmt.Errorf("limit %s: %w", name, err)
	}
	return name, limits, nil
}

// checkLimitName refuses a name a named limit cannot have.
func checkLimitName(name string) error {
	if name == "" || len(name) > 64 {
		return fmt.Errorf("%w: limit name %q: want 1 to 64 characters", ratelimit.ErrInvalidLimit, name)
	}
	for _, c := range name {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.ContainsRune("-_.:", c)) {
			return fmt.Errorf("%w: limit name %q: want letters, digits and - _ . :", ratelimit.ErrInvalidLimit, name)
		}
	}
	return nil
}

func parseLimit(s string) (ratelimit.Limit, error) {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ratelimit.ErrInvalidLimit, fmt.Sprintf(format, a...))
	}
	if rest, ok := strings.CutPrefix(s, "funnel:"); ok {
		var capacity, quota int
		var drain time.Duration
		for opt := range strings.SplitSeq(rest, ",") {
			k, v, _ := strings.Cut(strings.TrimSpace(opt), "=")
			var err error
			switch k {
			case "capacity":
				capacity, err = strconv.Atoi(v)
			case "drain":
				drain, err = parsePer(v)
			case "quota":
				quota, err = strconv.Atoi(v)
			default:
				return ratelimit.Limit{}, bad("funnel option %q: want capacity, drain or quota", k)
			}
			if err != nil {
				return ratelimit.Limit{}, bad("funnel %s=%q: %v", k, v, err)
			}
		}
		if capacity == 0 || drain == 0 {
			return ratelimit.Limit{}, bad("a funnel needs capacity and drain")
		}
		l := ratelimit.Funnel(capacity, drain, quota)
		return l, specWords(l.Validate())
	}
	head, opts, _ := strings.Cut(s, ",")
	ev, per, ok := strings.Cut(head, "/")
	if !ok {
		return ratelimit.Limit{}, bad("%q: want EVENTS/PER (100/1s) or funnel:capacity=N,drain=D", head)
	}
	var l ratelimit.Limit
	var err error
	if l.Events, err = strconv.Atoi(strings.TrimSpace(ev)); err != nil {
		return ratelimit.Limit{}, bad("events %q: want a whole number", ev)
	}
	if l.Per, err = parsePer(per); err != nil {
		return ratelimit.Limit{}, bad("period %q: %v", per, err)
	}
	if opts != "" {
		for opt := range strings.SplitSeq(opts, ",") {
			k, v, _ := strings.Cut(strings.TrimSpace(opt), "=")
			switch k {
			case "burst":
				l.Burst, err = strconv.Atoi(v)
				if err == nil && l.Burst < 1 {
					return ratelimit.Limit{}, bad("burst=%s: want 1 or more (leave burst out for the default, EVENTS)", v)
				}
			case "quota":
				l.Quota, err = strconv.Atoi(v)
			case "algorithm":
				l.Algorithm, err = ratelimit.ParseAlgorithm(v)
			default:
				return ratelimit.Limit{}, bad("option %q: want burst, quota or algorithm", k)
			}
			if err != nil {
				return ratelimit.Limit{}, bad("%s=%q: %v", k, v, err)
			}
		}
	}
	return l, specWords(l.Validate())
}

// limitFieldWords are the names of ratelimit.Limit's fields as its errors
// give them to Go callers, and the words of a SPEC for them.
var limitFieldWords = regexp.MustCompile(`\b(Events|Per|Burst|Quota) (-?[0-9])`)

// specWords is err, from ratelimit.Limit.Validate, in the words of a SPEC
// (period 0s, not Per 0s) and without the package's name; it still wraps
// what err wraps.
func specWords(err error) error {
	if err == nil {
		return nil
	}
	msg := userWords(err.Error())
	msg = limitFieldWords.ReplaceAllStringFunc(msg, func(m string) string {
		name, rest, _ := strings.Cut(m, " ")
		if name == "Per" {
			name = "period"
		}
		return strings.ToLower(name) + " " + rest
	})
	return wordedError{msg, err}
}

// wordedError is an error with a message of its own for people, wrapping
// the error callers test for.
type wordedError struct {
	msg string
	err error
}

func (e wordedError) Error() string { return e.msg }
func (e wordedError) Unwrap() error { return e.err }

// parsePer reads a period: a Go duration, or a unit alone (s is 1s).
func parsePer(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	switch s {
	case "ms", "s", "m", "h":
		s = "1" + s
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("want a duration such as 1s, 30m or 24h")
	}
	return d, nil
}

// checkLimits checks limits as one call would use them.
func checkLimits(ls []ratelimit.Limit) error {
	if len(ls) == 0 {
		return fmt.Errorf("%w: no limit given", ratelimit.ErrInvalidLimit)
	}
	if len(ls) > 16 {
		return fmt.Errorf("%w: %d limits, want at most 16", ratelimit.ErrInvalidLimit, len(ls))
	}
	for i, l := range ls {
		if err := l.Validate(); err != nil {
			return fmt.Errorf("limit %d: %w", i, err)
		}
		if l.Algorithm != ls[0].Algorithm {
			return fmt.Errorf("%w: limit %d is %v, limit 0 is %v: limits checked together share an algorithm", ratelimit.ErrInvalidLimit, i, l.Algorithm, ls[0].Algorithm)
		}
	}
	return nil
}

// FormatLimits writes limits in the text form ParseLimits reads.
func FormatLimits(ls []ratelimit.Limit) string {
	parts := make([]string, len(ls))
	for i, l := range ls {
		s := strconv.Itoa(l.Events) + "/" + shortDuration(l.Per)
		if l.Burst != 0 && l.Burst != l.Events {
			s += ",burst=" + strconv.Itoa(l.Burst)
		}
		if l.Quota != 0 && l.Quota != 1 {
			s += ",quota=" + strconv.Itoa(l.Quota)
		}
		if l.Algorithm != ratelimit.GCRA {
			s += ",algorithm=" + l.Algorithm.String()
		}
		parts[i] = s
	}
	return strings.Join(parts, ";")
}

// shortDuration writes d as time.Duration.String does, without the zero
// units at its end: 30m, not 30m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if t, ok := strings.CutSuffix(s, "m0s"); ok {
		s = t + "m"
	}
	if t, ok := strings.CutSuffix(s, "h0m"); ok {
		s = t + "h"
	}
	return s
}

// Limit is a limit in a request or a reply: Events per Per (with Burst,
// Quota and Algorithm), or a funnel's Capacity, Drain and Quota.
type Limit struct {
	Events    int         `json:"events,omitempty"`
	Per       *JSONPeriod `json:"per,omitempty"`
	Burst     int         `json:"burst,omitempty"`
	Quota     int         `json:"quota,omitempty"`
	Algorithm string      `json:"algorithm,omitempty"`
	Capacity  int         `json:"capacity,omitempty"`
	Drain     *JSONPeriod `json:"drain,omitempty"`
}

// JSONPeriod is a duration in JSON: whole milliseconds (a number) or a Go
// duration string ("1s", "30m"). It is written as milliseconds.
type JSONPeriod time.Duration

// UnmarshalJSON reads a number of milliseconds or a duration string.
func (p *JSONPeriod) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		d, err := parsePer(s)
		if err != nil {
			return fmt.Errorf("%q: %v", s, err)
		}
		*p = JSONPeriod(d)
		return nil
	}
	var n int64
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("%s: want whole milliseconds or a duration string", b)
	}
	*p = JSONPeriod(time.Duration(n) * time.Millisecond)
	return nil
}

// MarshalJSON writes whole milliseconds, or the duration string when the
// period is not a whole number of them.
func (p JSONPeriod) MarshalJSON() ([]byte, error) {
	d := time.Duration(p)
	if d%time.Millisecond != 0 {
		return json.Marshal(d.String())
	}
	return json.Marshal(d.Milliseconds())
}

// limitOf converts a request's limit.
func limitOf(l Limit) (ratelimit.Limit, error) {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ratelimit.ErrInvalidLimit, fmt.Sprintf(format, a...))
	}
	if l.Capacity != 0 || l.Drain != nil {
		if l.Events != 0 || l.Per != nil || l.Burst != 0 || l.Algorithm != "" {
			return ratelimit.Limit{}, bad("a funnel has capacity, drain and quota, not events, per, burst or algorithm")
		}
		if l.Drain == nil {
			return ratelimit.Limit{}, bad("a funnel needs drain")
		}
		out := ratelimit.Funnel(l.Capacity, time.Duration(*l.Drain), l.Quota)
		return out, out.Validate()
	}
	if l.Per == nil {
		return ratelimit.Limit{}, bad("a limit needs events and per (or a funnel's capacity and drain)")
	}
	out := ratelimit.Limit{Events: l.Events, Per: time.Duration(*l.Per), Burst: l.Burst, Quota: l.Quota}
	if l.Algorithm != "" {
		a, err := ratelimit.ParseAlgorithm(l.Algorithm)
		if err != nil {
			return ratelimit.Limit{}, err
		}
		out.Algorithm = a
	}
	return out, out.Validate()
}

// LimitOf is the JSON form of l.
func LimitOf(l ratelimit.Limit) Limit {
	per := JSONPeriod(l.Per)
	out := Limit{Events: l.Events, Per: &per, Burst: l.BurstOrDefault(), Quota: l.QuotaOrDefault(), Algorithm: l.Algorithm.String()}
	if l.Algorithm != ratelimit.GCRA {
		out.Burst = 0
	}
	return out
}
