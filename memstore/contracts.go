package memstore

import (
	"github.com/hourglass-io/hourglass/lock"
	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/ratelimit"
	"github.com/hourglass-io/hourglass/schedule"
	"github.com/hourglass-io/hourglass/ttlhash"
)

// Every contract the embedded engine's stores implement, the optional
// abilities included, checked when the package compiles. The embedded
// engine has no queue.Sessions (one process owns it), no
// ratelimit.Batcher, and no ttlhash.ShardSweeper, ShardReader or
// AckReader (its hashes have one shard, and a call costs no round trip).
var (
	_ queue.Store       = (*Store)(nil)
	_ queue.Notifier    = (*Store)(nil)
	_ queue.CancelStore = (*Store)(nil)
	_ queue.CounterLog  = (*Store)(nil)
	_ queue.KeepStore   = (*Store)(nil)
	_ queue.KeptLister  = (*Store)(nil)
	_ queue.LimitStore  = (*Store)(nil)

	_ lock.Store    = (*Locks)(nil)
	_ lock.Notifier = (*Locks)(nil)

	_ schedule.Store    = (*Schedules)(nil)
	_ schedule.Notifier = (*Schedules)(nil)

	_ ttlhash.Store    = (*Hashes)(nil)
	_ ttlhash.Notifier = (*Hashes)(nil)

	_ ratelimit.Store = (*RateLimits)(nil)
)
