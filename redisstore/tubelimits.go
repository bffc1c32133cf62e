package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/ratelimit"
)

// limitOp is scripts/tubelimit.lua.
var limitOp = operation("tubelimit")

func init() { limitOp.waits = true }

// limits is the hash of every limited tube (tube -> spec), read only to
// list them: the tag's m holds the limits that reserves obey.
func (k keys) limits() string { return k.prefix + "limits" }

// limitSpec writes l as the scripts read it: "events:per µs:burst:cap",
// then, for a group template, the same four of each group.
func limitSpec(l queue.Limits) string {
	if l.IsZero() {
		return ""
	}
	spec := fmt.Sprintf("%d:%d:%d:%d", l.Rate.Events, l.Rate.Per.Microseconds(), l.Rate.BurstOrDefault(), l.Cap)
	if g := l.Group; !g.IsZero() {
		spec += fmt.Sprintf(":%d:%d:%d:%d", g.Rate.Events, g.Rate.Per.Microseconds(), g.Rate.BurstOrDefault(), g.Cap)
	}
	return spec
}

// parseLimitSpec reads what limitSpec wrote.
func parseLimitSpec(spec string) (queue.Limits, error) {
	var l queue.Limits
	if spec == "" {
		return l, nil
	}
	f := strings.Split(spec, ":")
	if len(f) != 4 && len(f) != 8 {
		return l, fmt.Errorf("redisstore: tube limits %q in Redis", spec)
	}
	var n [8]int64
	for i, s := range f {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil || v < 0 {
			return l, fmt.Errorf("redisstore: tube limits %q in Redis", spec)
		}
		n[i] = v
	}
	if n[0] > 0 {
		l.Rate = ratelimit.Limit{Events: int(n[0]), Per: time.Duration(n[1]) * time.Microsecond, Burst: int(n[2])}
	}
	l.Cap = int(n[3])
	if n[4] > 0 {
		l.Group.Rate = ratelimit.Limit{Events: int(n[4]), Per: time.Duration(n[5]) * time.Microsecond, Burst: int(n[6])}
	}
	l.Group.Cap = int(n[7])
	return l, nil
}

// SetLimits implements queue.LimitStore. The limits of a tube of several
// partitions could not be counted in one atomic step, so they are refused.
func (s *Store) SetLimits(ctx context.Context, tube string, l queue.Limits) error {
	if err := s.r.open(queueFamily); err != nil {
		return err
	}
	if k := s.partitions(tube); k > 1 && !l.IsZero() {
		return fmt.Errorf("%w: limits on tube %q of %d partitions: a limit is enforced on one partition", queue.ErrInvalid, tube, k)
	}
	spec := limitSpec(l)
	if _, err := s.run(ctx, limitOp, tubeTag(tube, 0, 1), tube, tube, "s", spec); err != nil {
		return err
	}
	var err error
	if spec == "" {
		err = s.c.HDel(ctx, s.k.limits(), tube).Err()
	} else {
		err = s.c.HSet(ctx, s.k.limits(), tube, spec).Err()
	}
	if err != nil {
		return s.storeErr(ctx, err)
	}
	return nil
}

// TubeLimits implements queue.LimitStore.
func (s *Store) TubeLimits(ctx context.Context, tube string) (queue.Limits, error) {
	if err := s.r.open(queueFamily); err != nil {
		return queue.Limits{}, err
	}
	v, err := s.run(ctx, limitOp, tubeTag(tube, 0, 1), tube, tube, "g", "")
	if err != nil {
		return queue.Limits{}, err
	}
	r := replyOf(limitOp)
	spec := r.str(v)
	if err := r.done(); err != nil {
		return queue.Limits{}, err
	}
	return parseLimitSpec(spec)
}

// LimitedTubes implements queue.LimitStore, from the list of limited tubes
// (eventually consistent with the tags' limits, which reserves obey).
func (s *Store) LimitedTubes(ctx context.Context) (map[string]queue.Limits, error) {
	if err := s.r.open(queueFamily); err != nil {
		return nil, err
	}
	m, err := s.c.HGetAll(ctx, s.k.limits()).Result()
	if err != nil {
		return nil, s.storeErr(ctx, err)
	}
	out := make(map[string]queue.Limits, len(m))
	for tube, spec := range m {
		l, err := parseLimitSpec(spec)
		if err != nil {
			return nil, err
		}
		out[tube] = l
	}
	return out, nil
}
