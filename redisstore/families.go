package redisstore

import (
	"fmt"
	"strings"

	"github.com/hourglass-io/hourglass/lock"
	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/ratelimit"
	"github.com/hourglass-io/hourglass/schedule"
	"github.com/hourglass-io/hourglass/ttlhash"
)

// families is the one registry of the store's server-side code, and of
// everything else a primitive joins on Redis: every operation file in
// scripts/ belongs to the family its name's prefix names, and a family
// says which helper file its operations run with, which lane of the
// runner its calls go out in, which range of the notifier's
// subscriptions its listeners take, and which error table turns the
// runner's failures into its primitive's sentinels. The runner applies
// that table to every call, and the notifier to every subscription; no
// call site picks one.
//
// A new primitive adds its family here (and its helper file, if it has
// one of its own); an operation file whose prefix is not here stops the
// package at start (operation panics), so no file silently runs with
// another family's helpers, and TestRegistries (tally_test.go) checks
// that every family names each of the others.
//
// The order is the library's: the helper files are laid out in the order
// in which a family first names them.
var families = []*family{queueFamily, countersFamily, schedulesFamily, hashesFamily, locksFamily, limitsFamily}

var (
	queueFamily = &family{name: "queue", prefix: "", helpers: queueLib, pkg: "queue", errs: queueErrs,
		lane: laneMain, subs: subRange{lo: subQueue, n: NumTags}}
	countersFamily = &family{name: "queue counters", prefix: "counters_", helpers: queueLib, pkg: "queue", errs: queueErrs,
		lane: laneMain, subs: noSubs}
	// A schedule's fire puts a job into a tube: the queue's helpers.
	schedulesFamily = &family{name: "schedules", prefix: "sc_", helpers: queueLib, pkg: "schedule", errs: scheduleErrs,
		lane: laneMain, subs: subRange{lo: subSchedules, n: 1}}
	hashesFamily = &family{name: "hashes", prefix: "hx_", helpers: helpers{file: "hx_lib", enter: "hx_enter"}, pkg: "ttlhash", errs: hashErrs,
		lane: laneHashes, subs: subRange{lo: subHashes, n: NumTags}}
	locksFamily = &family{name: "locks", prefix: "lk_", helpers: helpers{file: "lk_lib"}, pkg: "lock", errs: lockErrs,
		lane: laneMain, subs: subRange{lo: subLock, n: 16384}}
	limitsFamily = &family{name: "rate limits", prefix: "rl_", helpers: helpers{file: "rl_lib"}, pkg: "ratelimit", errs: limitErrs,
		lane: laneLimits, subs: noSubs}
)

// The error tables, one a primitive: each maps the runner's failures to
// the sentinels its primitive's package declares (families_test.go checks
// that every ErrClosed, ErrFull and ErrNotReplicated of those packages is
// mapped).
var (
	queueErrs    = errTable{closed: queue.ErrClosed, full: queue.ErrFull, notReplicated: queue.ErrNotReplicated}
	scheduleErrs = errTable{closed: schedule.ErrClosed}
	hashErrs     = errTable{closed: ttlhash.ErrClosed}
	// No lock operation waits for the replicas through the runner (the
	// lock store asks for them itself), so notReplicated is never seen;
	// it is mapped so that one would be the lock's error.
	lockErrs = errTable{closed: lock.ErrClosed, notReplicated: lock.ErrNotReplicated}
	// A decision on a closed store fails with ratelimit.ErrClosed (which
	// ratelimit.Limiter wraps in ratelimit.ErrStore).
	limitErrs = errTable{closed: ratelimit.ErrClosed}
)

// queueLib is the queue's helper file, which the families of the queue's
// counters and of the schedules share.
var queueLib = helpers{file: "lib"}

// family is a group of operations: the files whose name starts with
// prefix, run with one helper file, failing with one primitive's errors.
type family struct {
	name    string // for errors
	prefix  string // "" for the queue: the files whose name has no '_'
	helpers helpers
	pkg     string // the Go package whose sentinels errs maps
	errs    errTable
	lane    laneID   // the runner's lane its calls go out in
	subs    subRange // its notifier subscriptions (noSubs: it has no listeners on Redis)
}

// laneID names one of the runner's lanes (runner.laneOf). The zero value
// is no lane, so a family that names none is caught by TestRegistries.
type laneID int

const (
	laneMain   laneID = iota + 1 // the queue, its counters, schedules and locks
	laneHashes                   // the expiring hashes, whose sweeps can run long
	laneLimits                   // the rate limits' short decisions
)

// subRange is a family's range of the notifier's subscription numbers
// (notify.go): lo, lo+1, …, lo+n-1. The zero value is no range declared.
type subRange struct {
	lo, n int
	none  bool // the family has no listeners on Redis
}

// noSubs is the range of a family that listens to nothing.
var noSubs = subRange{none: true}

// at is the subscription number i of the range; it panics outside it,
// so no listener strays into another family's range.
func (r subRange) at(i int) int {
	if i < 0 || i >= r.n {
		panic(fmt.Sprintf("redisstore: subscription %d outside a range of %d", i, r.n))
	}
	return r.lo + i
}

// helpers is a helper file shared by the operations of one or more
// families. Its functions are defined once, when the library loads, not on
// every call as they would be if each script carried them.
type helpers struct {
	file string // scripts/<file>.lua
	// enter is the name of the file's per-call set-up function, or "":
	// a helper file that keeps per-call state declares one, which the
	// entry of every call calls before the operation.
	enter string
}

// familyOf returns the family of the operation file name: the one whose
// prefix is the name up to and including its first '_', or the queue's
// for a name without one. It panics for an unregistered prefix.
func familyOf(name string) *family {
	prefix := ""
	if i := strings.IndexByte(name, '_'); i >= 0 {
		prefix = name[:i+1]
	}
	for _, f := range families {
		if f.prefix == prefix {
			return f
		}
	}
	panic("redisstore: scripts/" + name + ".lua: no family registered for the prefix " + prefix + " (see families.go)")
}
