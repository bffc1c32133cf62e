// Package evtrace lets a benchmark see where an expiry event waits between
// the sweep that expires it and the handler that gets it. Its hooks are
// nil unless a benchmark sets them, before it starts Sweepers or
// consumers. A Consume takes OnBatch once, when it starts, and one started
// without it keeps no trace at all; a Sweeper looks at OnPass and
// OnStandby where it would call them.
package evtrace

import "time"

// Batch is one pass of ttlhash's Consume loop.
type Batch struct {
	Consumer string
	// Woken is when the wait before the read ended, zero when the loop
	// read again at once (the batch before was full).
	Woken time.Time
	// ReadStart and ReadEnd bound the store calls that read the batch
	// (a look for events to hand out again included).
	ReadStart, ReadEnd time.Time
	// Handled is when each handler returned, in the order of IDs.
	IDs     []string
	Handled []time.Time
	// AckStart and AckEnd bound the acknowledgement of the batch.
	AckStart, AckEnd time.Time
}

// Pass is one pass of a ttlhash Sweeper over the shards.
type Pass struct {
	// Planned is when the Sweeper meant to wake (a deadline the store
	// reported), zero when it was woken by an announcement or the
	// interval; Woken is when it woke.
	Planned, Woken time.Time
	// Calls is how many store calls (pipelines) the pass made, Start and
	// End bound them, Expired counts the fields they expired and Looked
	// the due-index entries they looked at (their work in the store).
	Calls           int
	Start, End      time.Time
	Expired, Looked int
}

// Standby is a Sweeper's change of role for one shard: it stands by (On:
// another Sweeper sweeps the shard on time, so it looks only now and then)
// or sweeps the shard on time again.
type Standby struct {
	Sweeper, Shard int // the Sweeper's number in its process, from 1
	On             bool
	At             time.Time
}

// Hooks called when set: OnBatch by every Consume after a batch was read,
// handled and acknowledged; OnPass by every Sweeper after a pass;
// OnStandby by a Sweeper when it changes its role for a shard.
var (
	OnBatch   func(Batch)
	OnPass    func(Pass)
	OnStandby func(Standby)
)
