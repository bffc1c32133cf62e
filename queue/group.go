package queue

import (
	"fmt"
	"strings"

	"github.com/hourglass-io/hourglass/ratelimit"
)

// GroupSep separates a tube from a group in the name of a group's tube:
// the jobs of group g of tube t live in the tube "t;g". ';' is a character
// beanstalkd allows in a tube name, so a beanstalkd client puts into a
// group by its name alone (use emails;customer-42).
const GroupSep = ';'

// GroupTube returns the name of the tube of group in tube ("tube;group"),
// or tube when group is "".
func GroupTube(tube, group string) string {
	if group == "" {
		return tube
	}
	return tube + string(GroupSep) + group
}

// SplitGroup splits the name of a tube into its parent tube and its group:
// "emails;customer-42" is group "customer-42" of tube "emails". A name with
// no ';', or one starting or ending with it, is no group's: it returns
// name and "". The group is what follows the first ';'.
func SplitGroup(name string) (tube, group string) {
	i := strings.IndexByte(name, GroupSep)
	if i <= 0 || i == len(name)-1 {
		return name, ""
	}
	return name[:i], name[i+1:]
}

// IsGroupTube reports whether name is the tube of a group (SplitGroup).
func IsGroupTube(name string) bool {
	_, g := SplitGroup(name)
	return g != ""
}

// GroupLimits bound the reserves of each group of a tube, each group on
// its own: at most Rate per group and at most Cap reserved per group. The
// zero value limits no group.
type GroupLimits struct {
	Rate ratelimit.Limit
	Cap  int
}

// IsZero reports whether g limits nothing.
func (g GroupLimits) IsZero() bool { return g == GroupLimits{} }

// HasRate reports whether g has a rate.
func (g GroupLimits) HasRate() bool { return g.Rate != (ratelimit.Limit{}) }

func (g GroupLimits) String() string {
	return Limits{Rate: g.Rate, Cap: g.Cap}.String()
}

// checkGroup refuses a job's group that would not make a valid tube
// name with tube.
func checkGroup(tube, group string) error {
	if group == "" {
		return nil
	}
	name := GroupTube(tube, group)
	if !ValidTube(name) || IsGroupTube(tube) {
		return invalid("Group", "%q of tube %q: the tube %q is not a group's tube name (1 to %d bytes of tube-name characters in all, and no %q in the tube)", group, tube, name, MaxTubeName, string(GroupSep))
	}
	return nil
}

// groupRuns splits jobs into runs of one group each, in order.
func groupRuns(jobs []NewJob) [][]NewJob {
	var runs [][]NewJob
	start := 0
	for i := 1; i <= len(jobs); i++ {
		if i == len(jobs) || jobs[i].Group != jobs[start].Group {
			runs = append(runs, jobs[start:i])
			start = i
		}
	}
	return runs
}

// errGroupLimits is returned for limits set on a group's tube: a group's
// limits are its tube's group template.
func errGroupLimits(tube string) error {
	p, _ := SplitGroup(tube)
	return fmt.Errorf("%w: %q is a group of tube %q: a group takes its limits from its tube's (SetLimits(%q, Limits{Group: ...}))", ErrInvalid, tube, p, p)
}
