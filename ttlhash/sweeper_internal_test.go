package ttlhash

import (
	"testing"
	"time"
)

// Two Sweepers of one shard take turns at its work, as they do while the
// coarse buckets ahead of its first deadlines are refined at a pace: a
// planned sweep that finds nothing (the other came first) makes a Sweeper
// stand by, and one that finds any work, refining or expiry, makes it
// sweep on time again. Whatever the order, one of the two sweeps the shard
// on time: the one that did the work the other missed.
func TestSweepersTakeTurnsStandingBy(t *testing.T) {
	now := time.Now()
	newState := func() *shardSweep {
		return &shardSweep{
			w: &Sweeper{gather: DefaultGather}, interval: time.Second,
			next: make([]time.Time, 1), backup: make([]bool, 1), out: make([]bool, 1), again: make([]bool, 1),
			storeDue: make([]time.Time, 1), never: now.Add(MaxTTL),
		}
	}
	a, b := newState(), newState()
	sweep := func(l *shardSweep, r SweepResult) {
		r.Next, r.At = 20*time.Millisecond, now
		l.record(&sweepPass{shards: []int{0}, planned: []bool{true}, start: now, end: now}, 0, r)
	}
	refined, nothing, expired := SweepResult{Looked: 40}, SweepResult{}, SweepResult{Looked: 9, Expired: 9}
	for k, turn := range []struct {
		first, second *shardSweep
		found         SweepResult // what the first found; the second finds nothing
	}{
		{a, b, refined}, // the refining of a bucket ahead: a came first
		{b, a, refined}, // b, standing by, looked before a's next point
		{a, b, refined},
		{b, a, expired}, // the first fields fall due
		{a, b, expired},
	} {
		sweep(turn.first, turn.found)
		sweep(turn.second, nothing)
		if turn.first.backup[0] || !turn.second.backup[0] {
			t.Fatalf("turn %d: the Sweeper that found work stands by: %v, the other: %v; want false, true", k, turn.first.backup[0], turn.second.backup[0])
		}
	}
}
