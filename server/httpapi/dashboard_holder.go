package httpapi

import (
	"strconv"
	"strings"

	"github.com/hourglass-io/hourglass/queue"
)

// Holder says who holds a reserved job, for the dashboard, from the owner
// of its reservation (queue.JobStats.ReservedBy).
type Holder struct {
	// Kind is "connection" (a beanstalkd connection: "<session>/<n>"),
	// "lease" (an HTTP reservation, whose owner is its lease token) or
	// "worker" (any other owner: a Go program's Queue, a named worker).
	Kind string
	// Name is what the dashboard shows: the connection's number and its
	// server's session, the lease token's first characters (the whole
	// token would let whoever reads the page act on the job), or the
	// worker's name.
	Name string
}

// holderOf describes the owner of a reservation.
func holderOf(owner string) Holder {
	switch {
	case owner == "":
		return Holder{}
	case strings.HasPrefix(owner, leasePrefix):
		return Holder{Kind: "lease", Name: owner[:min(len(owner), len(leasePrefix)+8)] + "…"}
	case queue.SessionOf(owner) != "":
		sess, conn := queue.SessionOf(owner), owner[len(queue.SessionOf(owner))+1:]
		if _, err := strconv.ParseUint(conn, 10, 64); err != nil {
			return Holder{Kind: "worker", Name: owner}
		}
		return Holder{Kind: "connection", Name: "#" + conn + " on server " + sess[:min(len(sess), 8)]}
	}
	return Holder{Kind: "worker", Name: owner}
}
