package redisstore

import (
	"github.com/hourglass-io/hourglass/lock"
	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/ratelimit"
	"github.com/hourglass-io/hourglass/schedule"
	"github.com/hourglass-io/hourglass/ttlhash"
)

// Every contract the Redis stores implement, the optional abilities
// included, checked when the package compiles.
var (
	_ queue.Store       = (*Store)(nil)
	_ queue.Notifier    = (*Store)(nil)
	_ queue.CancelStore = (*Store)(nil)
	_ queue.CounterLog  = (*Store)(nil)
	_ queue.KeepStore   = (*Store)(nil)
	_ queue.KeptLister  = (*Store)(nil)
	_ queue.LimitStore  = (*Store)(nil)
	_ queue.Sessions    = (*Store)(nil)

	_ lock.Store    = (*Locks)(nil)
	_ lock.Notifier = (*Locks)(nil)

	_ schedule.Store    = (*Schedules)(nil)
	_ schedule.Notifier = (*Schedules)(nil)

	_ ttlhash.Store        = (*Hashes)(nil)
	_ ttlhash.Notifier     = (*Hashes)(nil)
	_ ttlhash.ShardSweeper = (*Hashes)(nil)
	_ ttlhash.ShardReader  = (*Hashes)(nil)
	_ ttlhash.AckReader    = (*Hashes)(nil)

	_ ratelimit.Store   = (*RateLimits)(nil)
	_ ratelimit.Batcher = (*RateLimits)(nil)
)
