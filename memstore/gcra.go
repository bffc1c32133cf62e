package memstore

// The engine's one GCRA (generic cell rate algorithm), used by the rate
// limits' decisions (ratelimit.go) and by the tubes' and groups' reserve
// rates (tubelimits.go, groups.go). A rate's state is its theoretical
// arrival time tat. A cost passes at time t when
// max(tat, t) + cost - burst <= t, and then tat becomes max(tat, t) + cost;
// cost and burst are spans of time (events times the interval between
// two), in the caller's unit (µs for the rate limits, ns for the tubes).

// gcraAct is the earliest time, at or after now, when cost passes on the
// state tat of a rate of burst span burst.
func gcraAct(tat, now, cost, burst int64) int64 { return max(now, max(tat, now)+cost-burst) }

// gcraCharge is the state tat becomes when cost passes at act.
func gcraCharge(tat, act, cost int64) int64 { return max(tat, act) + cost }
