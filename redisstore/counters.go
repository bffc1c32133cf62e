package redisstore

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hourglass-io/hourglass/queue"
)

// The counter log (queue.CounterLog): a hash per minute,
// "<prefix>cn:{cn}:<minute>", of tube -> "puts reserves deletes buries
// timeouts" and "*end" (the end of its keep, ms on the store's clock),
// expiring with its keep. Every minute lives on the one tag {cn}, so a read
// of a day is one script on one slot.
var cnScripts = struct{ record, read *op }{record: operation("counters_record"), read: operation("counters_read")}

func (k keys) counterMinute(m int64) string { return k.prefix + "cn:{cn}:" + strconv.FormatInt(m, 10) }

// RecordCounters implements queue.CounterLog.
func (s *Store) RecordCounters(ctx context.Context, minute int64, keep time.Duration, samples []queue.CounterSample) error {
	if err := queue.CheckCounters(minute, keep, samples); err != nil {
		return err
	}
	if len(samples) == 0 {
		return nil
	}
	args := make([]any, 0, 2+2*len(samples))
	args = append(args, s.now(), keep.Milliseconds())
	for _, c := range samples {
		args = append(args, c.Tube, fmt.Sprintf("%d %d %d %d %d", c.Puts, c.Reserves, c.Deletes, c.Buries, c.Timeouts))
	}
	_, err := s.r.run(ctx, call{op: cnScripts.record, keys: []string{s.k.counterMinute(minute)}, args: args})
	return err
}

// CounterHistory implements queue.CounterLog.
func (s *Store) CounterHistory(ctx context.Context, from, to int64) ([]queue.CounterSample, error) {
	if err := queue.CheckCounterRange(from, to); err != nil {
		return nil, err
	}
	ks := make([]string, 0, to-from+1)
	for m := from; m <= to; m++ {
		ks = append(ks, s.k.counterMinute(m))
	}
	v, err := s.r.run(ctx, call{op: cnScripts.read, keys: ks, args: []any{s.now()}})
	if err != nil {
		return nil, err
	}
	r := replyOf(cnScripts.read)
	var out []queue.CounterSample
	for i, mv := range r.arr(v, len(ks)) {
		fs := r.arr(mv, 0)
		var ms []queue.CounterSample
		for j := 0; j+1 < len(fs); j += 2 {
			tube, val := r.str(fs[j]), r.str(fs[j+1])
			if strings.HasPrefix(tube, "*") {
				continue
			}
			c := queue.CounterSample{Minute: from + int64(i), Tube: tube}
			if _, err := fmt.Sscanf(val, "%d %d %d %d %d", &c.Puts, &c.Reserves, &c.Deletes, &c.Buries, &c.Timeouts); err != nil {
				return nil, fmt.Errorf("redisstore: counters of tube %q, minute %d: %q: %w", tube, c.Minute, val, err)
			}
			ms = append(ms, c)
		}
		slices.SortFunc(ms, func(a, b queue.CounterSample) int { return strings.Compare(a.Tube, b.Tube) })
		out = append(out, ms...)
	}
	return out, r.done()
}
