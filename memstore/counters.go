package memstore

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"time"

	"github.com/hourglass-io/hourglass/internal/wal"
	"github.com/hourglass-io/hourglass/queue"
)

// Record kinds of the counter log: the range 64–65.
const (
	// kindCounters: a RecordCounters call (log and snapshot): varint
	// minute, varint end of keep (Unix ns), uvarint count, then per
	// sample: s tube, five varint counters.
	kindCounters = 64
)

// counterLog is the part that keeps the tubes' counter samples by minute
// (queue.CounterLog). A minute past its keep is dropped lazily, at the
// next record or read, and at Open; it has no deadline of the Store's.
type counterLog struct {
	e *engine
	// Guarded by the engine's mutex.
	minutes map[int64]*counterMinute
}

type counterMinute struct {
	end   int64 // Unix ns: kept until then
	tubes map[string][5]int64
}

func (c *counterLog) init(e *engine) {
	c.e = e
	c.minutes = map[int64]*counterMinute{}
}

func (c *counterLog) next() int64              { return never }
func (c *counterLog) advance(int64) wal.Ticket { return 0 }
func (c *counterLog) close()                   {}

// recovered drops the minutes whose keep ended while the Store was closed.
func (c *counterLog) recovered(now int64) { c.prune(now) }

func (c *counterLog) prune(now int64) {
	for m, cm := range c.minutes {
		if cm.end <= now {
			delete(c.minutes, m)
		}
	}
}

// size is about the bytes a snapshot of the samples takes.
func (c *counterLog) size() int64 {
	var n int64
	for _, cm := range c.minutes {
		n += 16
		for t := range cm.tubes {
			n += int64(len(t)) + 20
		}
	}
	return n
}

// apply stores samples under minute, kept until end.
func (c *counterLog) apply(minute, end int64, samples []queue.CounterSample) {
	cm := c.minutes[minute]
	if cm == nil {
		cm = &counterMinute{end: end, tubes: map[string][5]int64{}}
		c.minutes[minute] = cm
	}
	for _, s := range samples {
		cm.tubes[s.Tube] = [5]int64{s.Puts, s.Reserves, s.Deletes, s.Buries, s.Timeouts}
	}
}

func encodeCounters(b []byte, minute, end int64, samples []queue.CounterSample) []byte {
	b = binary.AppendVarint(b, minute)
	b = binary.AppendVarint(b, end)
	b = binary.AppendUvarint(b, uint64(len(samples)))
	for _, s := range samples {
		b = appendString(b, s.Tube)
		for _, v := range [5]int64{s.Puts, s.Reserves, s.Deletes, s.Buries, s.Timeouts} {
			b = binary.AppendVarint(b, v)
		}
	}
	return b
}

func (c *counterLog) replay(kind byte, d *decoder) error {
	if kind != kindCounters {
		return fmt.Errorf("unknown record kind %d", kind)
	}
	minute, end, n := d.varint(), d.varint(), d.uvarint()
	if d.err != nil || n > queue.MaxCounterSamples {
		return errBadRecord
	}
	samples := make([]queue.CounterSample, n)
	for i := range samples {
		s := &samples[i]
		s.Minute, s.Tube = minute, d.string()
		s.Puts, s.Reserves, s.Deletes, s.Buries, s.Timeouts = d.varint(), d.varint(), d.varint(), d.varint(), d.varint()
	}
	if err := d.end(); err != nil {
		return err
	}
	c.apply(minute, end, samples)
	return nil
}

// snapshot adds each kept minute as one record, oldest first.
func (c *counterLog) snapshot(w *wal.SnapshotWriter) {
	ms := sortedKeys(c.minutes)
	w.Grow(len(ms))
	for _, m := range ms {
		cm := c.minutes[m]
		w.Add(kindCounters, encodeCounters(nil, m, cm.end, c.samples(m)), nil)
	}
}

// samples returns the samples of minute m, by tube.
func (c *counterLog) samples(m int64) []queue.CounterSample {
	cm := c.minutes[m]
	out := make([]queue.CounterSample, 0, len(cm.tubes))
	for t, v := range cm.tubes {
		out = append(out, queue.CounterSample{Minute: m, Tube: t, Puts: v[0], Reserves: v[1], Deletes: v[2], Buries: v[3], Timeouts: v[4]})
	}
	slices.SortFunc(out, func(a, b queue.CounterSample) int { return cmp.Compare(a.Tube, b.Tube) })
	return out
}

// RecordCounters implements queue.CounterLog.
func (c *counterLog) RecordCounters(ctx context.Context, minute int64, keep time.Duration, samples []queue.CounterSample) error {
	if err := queue.CheckCounters(minute, keep, samples); err != nil {
		return err
	}
	return write(ctx, c.tx(), func(now int64) (wal.Ticket, error) {
		c.prune(now)
		end := now + int64(keep)
		if cm := c.minutes[minute]; cm != nil {
			end = cm.end // kept from its first record
		}
		if len(samples) == 0 {
			return 0, nil
		}
		c.apply(minute, end, samples)
		return c.e.append(kindCounters, encodeCounters(c.e.scratch[:0], minute, end, samples), nil), nil
	})
}

// tx is the terms of the counters' operations (see update): the queue's.
func (c *counterLog) tx() tx { return tx{e: c.e, closed: queue.ErrClosed} }

// CounterHistory implements queue.CounterLog.
func (c *counterLog) CounterHistory(ctx context.Context, from, to int64) ([]queue.CounterSample, error) {
	if err := queue.CheckCounterRange(from, to); err != nil {
		return nil, err
	}
	return read(ctx, c.tx(), func(now int64) ([]queue.CounterSample, error) {
		var out []queue.CounterSample
		for m := from; m <= to; m++ {
			if cm := c.minutes[m]; cm != nil && cm.end > now {
				out = append(out, c.samples(m)...)
			}
		}
		return out, nil
	})
}
