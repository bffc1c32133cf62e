package ttlhash

import (
	"context"
	"time"
)

// ReadWait is Read that waits up to until for a first event: it reads, and
// while there is nothing to hand out it waits for the store's wake-up (the
// one subscription the group's readers and consumers of this Hashes
// share: a wake-up goes to the oldest that waits, not to all) and reads
// again, looking every PollInterval in any case, for a store that cannot
// wake it and for events whose visibility timeout ran out (no store
// announces those). It returns the first events read, or none once until
// has passed; an until in the past makes it one Read. As with Read, each
// event must be acknowledged within the visibility timeout.
//
// Errors: those of Read, and ctx's when it ends first.
func (h *Hashes) ReadWait(ctx context.Context, group, consumer string, max int, until time.Time) ([]Event, error) {
	now := h.opts.clock().Now
	if !now().Before(until) {
		return h.Read(ctx, group, consumer, max)
	}
	if err := checkGroup("group", group); err != nil {
		return nil, err
	}
	// The group's subscription is in effect before the first read, so
	// that no event appended between a read and the wait after it is
	// missed.
	g, err := h.joinGroup(ctx, group)
	if err != nil {
		return nil, err
	}
	defer h.leaveGroup(group, g)
	for {
		g.take() // Read reads every shard
		evs, err := h.Read(ctx, group, consumer, max)
		if err != nil || len(evs) > 0 || !now().Before(until) {
			if len(evs) == max {
				g.passOn() // there may be more: wake another reader to help
			}
			return evs, err
		}
		p, err := g.enter(ctx)
		if err != nil {
			return nil, err
		}
		if p == nil {
			continue // woken while reading
		}
		_, err = p.Wait(ctx, until, h.opts.poll())
		g.leave(p)
		if err != nil {
			return nil, err
		}
	}
}
