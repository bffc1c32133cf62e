package ttlhash

import (
	"context"
	"time"

	"github.com/hourglass-io/hourglass/internal/wait"
)

// Handler handles one expiry event. Returning nil acknowledges it; an
// error leaves it to be handed out again after the visibility timeout.
type Handler func(ctx context.Context, e Event) error

// Consume hands the events of group to handle as consumer, one at a time,
// acknowledging those handled without error after each batch read (so a
// batch should be handled within the visibility timeout; the
// acknowledgement goes out while the next batches are read), until ctx ends
// (it then returns ctx's error) or the store fails. It waits for events
// without polling when the store is a Notifier of TopicEvents (else it
// looks every PollInterval), and looks for events whose visibility timeout
// ran out every eighth of that timeout. Run one Consume per consumer;
// consumers of a group share its events, each event going to one of them
// at a time.
func (h *Hashes) Consume(ctx context.Context, group, consumer string, handle Handler) error {
	if err := checkGroup("group", group); err != nil {
		return err
	}
	if err := checkGroup("consumer", consumer); err != nil {
		return err
	}
	// The group's subscription is in effect before the first read, so
	// that no event appended between a read and the wait after it is
	// missed. With a ShardReader, the shards woken since the last read are
	// read, not every shard; a look that no wake-up asked for (the first,
	// a timed one, one after a full batch) reads every shard.
	g, err := h.joinGroup(ctx, group)
	if err != nil {
		return err
	}
	defer h.leaveGroup(group, g)
	c := &consuming{
		h: h, ctx: ctx, group: group, consumer: consumer, handle: handle,
		g: g, readAll: true, now: h.opts.clock().Now, trace: startTrace(),
	}
	c.sharded, _ = h.s.(ShardReader)
	c.ackReader, _ = h.s.(AckReader)
	defer func() { _ = c.acks.drain() }()
	for {
		tr := c.traceStart()
		evs, err := c.fetch()
		if err != nil {
			return c.fail(err)
		}
		tr.read()
		if err := c.handleBatch(evs, tr); err != nil {
			return c.fail(err)
		}
		if ctx.Err() != nil {
			return c.fail(nil)
		}
		if len(evs) == h.opts.batch() {
			// There may be more at once, in any shard: read again, and
			// wake another consumer to help.
			c.readAll = true
			g.passOn()
			continue
		}
		// A failed acknowledgement ends Consume before it sleeps.
		if err := c.acks.done(); err != nil {
			return c.fail(err)
		}
		if err := c.sleep(); err != nil {
			return c.fail(err)
		}
	}
}

// consuming is the state of one Consume: its loop reads a batch (fetch),
// hands it to the handler and acknowledges it (handleBatch), then, when
// the batch was not full, waits for a wake-up (sleep).
type consuming struct {
	h               *Hashes
	ctx             context.Context
	group, consumer string
	handle          Handler
	g               *groupConsumers
	sharded         ShardReader // nil when the store reads every shard at once
	ackReader       AckReader   // nil when the store cannot acknowledge in a read
	readAll         bool        // the next read reads every shard
	// carried are the handled events of the batch before, when the loop
	// read again at once and the store acknowledges them in the read's
	// round trip (AckReader); carriedTrace is that batch's trace.
	carried      []string
	carriedTrace *batchTrace
	// Acknowledgements go out while the next batches are read: up to
	// maxAcks in flight, so that a slow one does not hold the next read;
	// each result is taken before Consume sleeps or returns.
	acks ackFlight
	// Events whose visibility timeout ran out are looked for at most
	// every half timeout (and when there is nothing new): a claim scans
	// pending entries. lastClaim is the last look.
	lastClaim time.Time
	now       func() time.Time // Options.Clock's
	trace     consumeTrace     // a benchmark's (consume_trace.go)
}

// startAck sends ids' acknowledgement on its own, reporting trace tr (if
// any) when it returns.
func (c *consuming) startAck(ids []string, tr *batchTrace) error {
	tr.ackStart()
	return c.acks.start(func() error {
		_, err := c.h.s.Ack(context.WithoutCancel(c.ctx), c.group, ids)
		tr.acked()
		return err
	})
}

// sendCarried sends the carried acknowledgement on its own.
func (c *consuming) sendCarried() error {
	if len(c.carried) == 0 {
		return nil
	}
	ids, tr := c.carried, c.carriedTrace
	c.carried, c.carriedTrace = nil, nil
	return c.startAck(ids, tr)
}

// fetch returns the next batch: events whose visibility timeout ran out
// when it is time to look for them, else new ones, else (when there are
// none and the last look is an eighth of the timeout old) those again.
func (c *consuming) fetch() ([]Event, error) {
	h := c.h
	var evs []Event
	var err error
	if c.now().Sub(c.lastClaim) >= h.opts.visibility()/2 {
		c.lastClaim = c.now()
		if err = c.sendCarried(); err == nil {
			evs, err = h.s.Claim(c.ctx, c.group, c.consumer, h.opts.visibility(), h.opts.batch())
		}
	}
	if err == nil && len(evs) == 0 {
		evs, err = c.read()
	}
	if err == nil && len(evs) == 0 && !c.lastClaim.IsZero() && c.now().Sub(c.lastClaim) >= h.opts.visibility()/8 {
		c.lastClaim = c.now()
		evs, err = h.s.Claim(c.ctx, c.group, c.consumer, h.opts.visibility(), h.opts.batch())
	}
	return evs, err
}

// read reads new events: of the shards woken since the last read, or of
// every shard, acknowledging the carried batch in the same round trip.
func (c *consuming) read() ([]Event, error) {
	h := c.h
	shards, all := c.g.take()
	if c.readAll || all || c.sharded == nil {
		c.readAll = false
		shards = nil
	} else if len(shards) == 0 {
		return nil, c.sendCarried() // another consumer took them
	}
	if len(c.carried) > 0 {
		ids, tr := c.carried, c.carriedTrace
		c.carried, c.carriedTrace = nil, nil
		tr.ackStart()
		evs, err := c.ackReader.AckRead(context.WithoutCancel(c.ctx), c.group, c.consumer, ids, shards, h.opts.batch())
		tr.acked()
		return evs, err
	}
	if shards == nil {
		return h.s.Read(c.ctx, c.group, c.consumer, h.opts.batch())
	}
	return c.sharded.ReadShards(c.ctx, c.group, c.consumer, shards, h.opts.batch())
}

// handleBatch hands evs to the handler one at a time and acknowledges
// those handled without error: once for the batch, or sooner when half
// the visibility timeout has passed; handled events are acknowledged even
// when ctx has just ended. With an AckReader the batch's acknowledgement
// is carried to the next read instead, when that comes at once.
func (c *consuming) handleBatch(evs []Event, tr *batchTrace) error {
	var done []string
	since := c.now()
	ack := func(last bool) error {
		if len(done) == 0 {
			return nil
		}
		ids, report := done, tr
		done, since = nil, c.now()
		if !last {
			report = nil // the batch is reported with its last acknowledgement
		}
		return c.startAck(ids, report)
	}
	for _, e := range evs {
		if c.ctx.Err() != nil {
			break // the rest come back after the visibility timeout
		}
		if err := c.handleOne(e); err == nil {
			done = append(done, e.ID)
		}
		tr.handled(e.ID)
		if c.now().Sub(since) > c.h.opts.visibility()/2 {
			if err := ack(false); err != nil {
				return err
			}
		}
	}
	if c.ackReader != nil && c.ctx.Err() == nil {
		// Kept for the next read if it comes at once, sent on its own
		// before a wait.
		c.carried, c.carriedTrace = done, tr
		return nil
	}
	return ack(true)
}

// sleep waits, after a batch of fewer than a full one, for the next
// wake-up (one that came while the batch was handled is kept) rather than
// reading again at once, or for the next look at events whose visibility
// timeout ran out (no store announces those). The poll is for a store
// that cannot wake.
func (c *consuming) sleep() error {
	h := c.h
	var poll time.Duration
	if !c.g.notified {
		poll = h.opts.poll()
	}
	p, err := c.g.enter(c.ctx)
	if err != nil || p == nil {
		return err // nil: shards were woken while these were handled: read them (with these acknowledged)
	}
	look := c.lastClaim.Add(h.opts.visibility() / 8)
	var r wait.Reason
	if len(c.carried) > 0 {
		// The acknowledgement waits for the read of a wake-up that comes
		// within ackHold, and goes on its own after that.
		hold := c.now().Add(ackHold)
		if r, err = p.Wait(c.ctx, hold, 0); err == nil && r == wait.Deadline && hold.Before(look) {
			if err = c.sendCarried(); err == nil {
				r, err = p.Wait(c.ctx, look, poll)
			}
		}
	} else {
		r, err = p.Wait(c.ctx, look, poll)
	}
	c.g.leave(p)
	if err != nil {
		return err
	}
	c.traceWoken()
	if r != wait.Woken {
		c.readAll = true // a timed look reads every shard
	}
	return nil
}

// fail ends Consume with err: the carried acknowledgement is sent and
// every one in flight awaited; ctx's error wins once it has ended.
func (c *consuming) fail(err error) error {
	if cerr := c.sendCarried(); cerr != nil && err == nil {
		err = cerr
	}
	if aerr := c.acks.drain(); aerr != nil && c.ctx.Err() == nil {
		return aerr
	}
	if c.ctx.Err() != nil {
		return c.ctx.Err()
	}
	return err
}

// maxAcks is how many acknowledgements one Consume keeps in flight.
const maxAcks = 4

// ackHold is how long a Consume that waits keeps the acknowledgement of
// the batch it handled for the read the next wake-up brings (AckReader),
// before it sends it on its own: at a steady rate of events the next
// wake-up comes sooner, and the two share a round trip. A Sweeper of
// Redis sweeps on a grid of SweeperOptions.Gather (DefaultGather), so
// the wake-ups of a steady rate come that far apart.
const ackHold = DefaultGather + 2*time.Millisecond

// ackFlight is a Consume's acknowledgements in flight.
type ackFlight struct {
	n    int
	errs chan error
}

// start runs ack in a goroutine, first waiting for one in flight when
// maxAcks are; it returns that one's error.
func (a *ackFlight) start(ack func() error) error {
	if a.errs == nil {
		a.errs = make(chan error, maxAcks)
	}
	var err error
	if a.n == maxAcks {
		err = <-a.errs
		a.n--
	}
	a.n++
	go func() { a.errs <- ack() }()
	return err
}

// done takes the results of those that have ended, without waiting, and
// returns the first error.
func (a *ackFlight) done() error {
	var first error
	for a.n > 0 {
		select {
		case err := <-a.errs:
			a.n--
			if first == nil {
				first = err
			}
		default:
			return first
		}
	}
	return first
}

// drain waits for every one in flight and returns the first error.
func (a *ackFlight) drain() error {
	var first error
	for ; a.n > 0; a.n-- {
		if err := <-a.errs; first == nil {
			first = err
		}
	}
	return first
}
