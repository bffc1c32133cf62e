package httpapi

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/hourglass-io/hourglass/queue"
)

// Why a tube with ready jobs gave none: its pause, its cap or its rate
// (docs/tube-limits.md). A reserve that asks for it ("explain": true) and
// gets no job says so in the 204's Hourglass-Held-Back header; a tube's
// stats say so in held_back. Both read the tube's stats once more, after
// the reserve, so what they say is the tube as it was a moment later.

// HeaderHeldBack names, on a reserve's 204, the tubes whose ready jobs
// their pause or limits held back: a list of items, one a tube, each the
// tube's name (a quoted string) with parameters, as
//
//	"mail";by=cap;ready=8;reserved=2;cap=2;frees-in-ms=45000
//
// (by: pause, cap, rate or group; frees-in-ms: when one more reserve will
// pass at the latest, -1 when not known; see HeldBack).
const HeaderHeldBack = "Hourglass-Held-Back"

// HeldBack says why the ready jobs of a tube were not handed out.
type HeldBack struct {
	Tube string `json:"tube"`
	// By is what held them back: "pause" (the tube is paused), "cap" (as
	// many of its jobs are reserved as its cap allows), "rate" (its rate
	// allows no reserve now) or "group" (only its groups have ready jobs,
	// and the group template holds each back).
	By    string `json:"by"`
	Ready int64  `json:"ready"` // ready jobs, the groups' included
	// Reserved and Cap: the jobs reserved (the groups' included) and the
	// cap, for By "cap".
	Reserved int64 `json:"reserved,omitempty"`
	Cap      int   `json:"cap,omitempty"`
	// Rate is the rate, for By "rate" ("5/1s, burst 5").
	Rate string `json:"rate,omitempty"`
	// FreesInMS is when one more reserve will pass at the latest: the
	// pause's end; the soonest end of TTR among the reserved jobs (a
	// delete, release or bury frees one sooner); the rate's interval
	// between two reserves. -1 when not known.
	FreesInMS int64 `json:"frees_in_ms"`
}

// heldBack returns why tube's ready jobs are held back, or nil when it has
// none or nothing holds them. A pause or a cap reached is read in the
// stats; a rate is not (the stats do not say whether it allows a reserve
// now), so it is named only afterEmpty: when a reserve just got nothing.
func heldBack(ctx context.Context, q *queue.Queue, st queue.TubeStats, afterEmpty bool) *HeldBack {
	ready := st.Ready + st.GroupReady
	if ready == 0 {
		return nil
	}
	h := &HeldBack{Tube: st.Name, Ready: ready, FreesInMS: -1}
	l := st.Limits
	switch {
	case st.Pause > 0:
		h.By, h.FreesInMS = "pause", st.PauseTimeLeft.Milliseconds()
	case l.Cap > 0 && st.Reserved+st.GroupReserved >= int64(l.Cap):
		h.By, h.Reserved, h.Cap = "cap", st.Reserved+st.GroupReserved, l.Cap
		if jobs, err := q.PeekStateN(ctx, st.Name, queue.Reserved, 1); err == nil && len(jobs) == 1 {
			if js, err := q.StatsJob(ctx, jobs[0].ID); err == nil && js.State == queue.Reserved {
				h.FreesInMS = js.TimeLeft.Milliseconds()
			}
		}
	case !afterEmpty:
		return nil
	case l.HasRate() && st.Ready > 0:
		h.By, h.Rate, h.FreesInMS = "rate", rateSpec(l.Rate.Events, l.Rate.Per.String(), l.Rate.BurstOrDefault()), l.Rate.Interval().Milliseconds()
	case st.Ready == 0 && !l.Group.IsZero():
		h.By = "group"
		if l.Group.HasRate() {
			h.Rate, h.FreesInMS = rateSpec(l.Group.Rate.Events, l.Group.Rate.Per.String(), l.Group.Rate.BurstOrDefault()), l.Group.Rate.Interval().Milliseconds()
		}
		h.Cap = l.Group.Cap
	default:
		return nil // ready, nothing holds them: taken meanwhile, or a race
	}
	return h
}

func rateSpec(events int, per string, burst int) string {
	return fmt.Sprintf("%d/%s, burst %d", events, per, burst)
}

// heldBackHeader writes hs as the value of HeaderHeldBack.
func heldBackHeader(hs []HeldBack) string {
	var b strings.Builder
	for i, h := range hs {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Quote(h.Tube))
		fmt.Fprintf(&b, ";by=%s;ready=%d", h.By, h.Ready)
		if h.By == "cap" {
			fmt.Fprintf(&b, ";reserved=%d;cap=%d", h.Reserved, h.Cap)
		}
		if h.Rate != "" {
			b.WriteString(";rate=" + strconv.Quote(h.Rate))
		}
		fmt.Fprintf(&b, ";frees-in-ms=%d", h.FreesInMS)
	}
	return b.String()
}

// explainEmpty lists why the tubes a reserve asked for gave no job.
func (s *Server) explainEmpty(ctx context.Context, tubes []string) []HeldBack {
	if len(tubes) == 0 {
		tubes = []string{"default"}
	}
	var out []HeldBack
	for _, t := range tubes {
		st, err := s.Queue.StatsTube(ctx, t)
		if err != nil {
			continue // not there: nothing held back
		}
		if h := heldBack(ctx, s.Queue, st, true); h != nil {
			out = append(out, *h)
		}
	}
	return out
}
