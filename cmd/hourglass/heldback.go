package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hourglass-io/hourglass/server/httpapi"
)

// Why a reserve got no job while jobs were ready: the tube's pause, cap or
// rate held them back. Over HTTP (reserve --keep) the reserve asks the
// server to explain (httpapi.HeaderHeldBack); over the beanstalkd
// protocol, which cannot say, reserve asks the HTTP API for the tubes'
// stats afterwards, when it can reach it (a second at most), and says
// nothing more when it cannot.

// heldBackWords says h in one line: "8 ready jobs held back by the cap of
// tube mail (2 of 2 reserved): one frees when a reservation ends, at the
// latest in 59.9s".
func heldBackWords(h httpapi.HeldBack) string {
	jobs := fmt.Sprintf("%d ready jobs", h.Ready)
	if h.Ready == 1 {
		jobs = "1 ready job"
	}
	in := func() string {
		if h.FreesInMS < 0 {
			return ""
		}
		return " in " + (time.Duration(h.FreesInMS) * time.Millisecond).String()
	}
	switch h.By {
	case "pause":
		return fmt.Sprintf("%s held back: tube %s is paused, for %s more", jobs, h.Tube, (time.Duration(h.FreesInMS) * time.Millisecond).String())
	case "cap":
		s := fmt.Sprintf("%s held back by the cap of tube %s (%d of %d reserved): one frees when a reservation is deleted, released or buried", jobs, h.Tube, h.Reserved, h.Cap)
		if h.FreesInMS >= 0 {
			s += ", or by its TTR" + in()
		}
		return s
	case "rate":
		return fmt.Sprintf("%s held back by the rate of tube %s (%s): the next reserve passes%s", jobs, h.Tube, h.Rate, in())
	case "group":
		return fmt.Sprintf("%s held back: they are in the groups of tube %s, each held to its group limits", jobs, h.Tube)
	}
	return fmt.Sprintf("%s held back in tube %s (%s)", jobs, h.Tube, h.By)
}

// noJob is the error of a reserve that got no job: which tubes, how long,
// and why ready jobs were held back when the server said.
func noJob(tubes []string, wait time.Duration, held []httpapi.HeldBack) error {
	msg := fmt.Sprintf("no job in %s within %v", tubeNames(tubes), wait)
	for i, h := range held {
		sep := "; "
		if i == 0 {
			sep = ": "
		}
		msg += sep + heldBackWords(h)
	}
	return missf("%s", msg)
}

// parseHeldBack reads the value of httpapi.HeaderHeldBack: items of a
// quoted tube name and ;key=value parameters (a value a token or a quoted
// string), separated by commas.
func parseHeldBack(v string) ([]httpapi.HeldBack, error) {
	var out []httpapi.HeldBack
	bad := errors.New("the server's " + httpapi.HeaderHeldBack + " header is malformed")
	for v = strings.TrimSpace(v); v != ""; {
		name, err := strconv.QuotedPrefix(v)
		if err != nil {
			return nil, bad
		}
		h := httpapi.HeldBack{FreesInMS: -1}
		h.Tube, _ = strconv.Unquote(name)
		v = v[len(name):]
		for strings.HasPrefix(v, ";") {
			k, rest, ok := strings.Cut(v[1:], "=")
			if !ok {
				return nil, bad
			}
			var val string
			if strings.HasPrefix(rest, `"`) {
				q, err := strconv.QuotedPrefix(rest)
				if err != nil {
					return nil, bad
				}
				val, _ = strconv.Unquote(q)
				rest = rest[len(q):]
			} else {
				end := strings.IndexAny(rest, ";,")
				if end < 0 {
					end = len(rest)
				}
				val, rest = rest[:end], rest[end:]
			}
			v = rest
			n, _ := strconv.ParseInt(val, 10, 64)
			switch k {
			case "by":
				h.By = val
			case "ready":
				h.Ready = n
			case "reserved":
				h.Reserved = n
			case "cap":
				h.Cap = int(n)
			case "rate":
				h.Rate = val
			case "frees-in-ms":
				h.FreesInMS = n
			}
		}
		out = append(out, h)
		v = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ","))
	}
	return out, nil
}

// heldBackByStats asks the HTTP API, for a reserve over the beanstalkd
// protocol that got nothing, why the tubes' ready jobs were held back: a
// pause or a cap reached (the stats' held_back), or a rate (the tube has
// one and ready jobs: the reserve just got none). Nothing when the API
// cannot be reached within a second.
func heldBackByStats(ctx context.Context, hc *httpClient, tubes []string) []httpapi.HeldBack {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	var out []httpapi.HeldBack
	for _, t := range tubes {
		status, body, err := hc.call(ctx, "GET", "/v1/tubes/"+url.PathEscape(t), nil)
		if err != nil || status != http.StatusOK {
			if ctx.Err() != nil {
				return out
			}
			continue
		}
		var st httpapi.TubeStats
		if json.Unmarshal(body, &st) != nil {
			continue
		}
		switch l := st.Limits; {
		case st.HeldBack != nil:
			out = append(out, *st.HeldBack)
		case st.Ready > 0 && l != nil && l.Rate != nil && l.Rate.Events > 0 && l.Rate.Per != nil:
			per := time.Duration(*l.Rate.Per)
			burst := l.Rate.Burst
			if burst == 0 {
				burst = l.Rate.Events
			}
			out = append(out, httpapi.HeldBack{Tube: t, By: "rate", Ready: st.Ready,
				Rate: fmt.Sprintf("%d/%v, burst %d", l.Rate.Events, per, burst), FreesInMS: (per / time.Duration(l.Rate.Events)).Milliseconds()})
		}
	}
	return out
}
