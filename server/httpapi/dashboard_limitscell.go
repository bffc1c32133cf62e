package httpapi

import (
	"fmt"
	"strings"
	"time"

	"github.com/hourglass-io/hourglass/queue"
)

// The limits column of the tubes table (dashboard/jobs.html): a tube's
// rate, its cap with how much of it is reserved, its group template, and
// the reserves its limits held back (docs/tube-limits.md).

// limitsCell is what the column shows of one tube; all empty for a tube
// without limits (and without groups).
type limitsCell struct {
	Rate   string // "100/s, burst 10"
	Cap    string // "3 of 5 reserved"
	Full   bool   // the cap is reached
	Group  string // "each group: 1/s, burst 1, cap 2"
	Groups string // "3 groups": the groups that hold jobs
	Holds  int64  // reserves its limits held back
	Of     string // the tube of a group's tube, whose group template limits it
}

func (c limitsCell) None() bool { return c == limitsCell{} }

// HoldsText says what Holds counts, in words.
func (c limitsCell) HoldsText() string {
	if c.Holds == 1 {
		return "1 reserve held back by these limits"
	}
	return fmt.Sprintf("%d reserves held back by these limits", c.Holds)
}

func limitsCellOf(t TubeStats) limitsCell {
	var c limitsCell
	if p, g := queue.SplitGroup(t.Name); g != "" {
		c.Of = p
	}
	switch {
	case t.Groups == 1:
		c.Groups = "1 group"
	case t.Groups > 1:
		c.Groups = fmt.Sprintf("%d groups", t.Groups)
	}
	l := t.Limits
	if l == nil {
		return c
	}
	c.Holds = t.LimitHolds
	c.Rate = rateText(l.Rate)
	if l.Cap > 0 {
		in := t.Reserved + t.GroupReserved
		c.Cap = fmt.Sprintf("%d of %d reserved", in, l.Cap)
		c.Full = in >= int64(l.Cap)
	}
	if g := l.Group; g != nil {
		var parts []string
		if r := rateText(g.Rate); r != "" {
			parts = append(parts, r)
		}
		if g.Cap > 0 {
			parts = append(parts, fmt.Sprintf("cap %d", g.Cap))
		}
		c.Group = "each group: " + strings.Join(parts, ", ")
	}
	return c
}

// rateText writes a tube's rate as "100/s, burst 10" ("" for none).
func rateText(r *Limit) string {
	if r == nil || r.Per == nil || r.Events == 0 {
		return ""
	}
	per := time.Duration(*r.Per)
	unit := "/" + per.String()
	switch per {
	case time.Second:
		unit = "/s"
	case time.Minute:
		unit = "/min"
	case time.Hour:
		unit = "/h"
	}
	s := fmt.Sprintf("%d%s", r.Events, unit)
	if r.Burst > 0 && r.Burst != r.Events {
		s += fmt.Sprintf(", burst %d", r.Burst)
	}
	return s
}
