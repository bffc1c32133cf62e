package redisstore

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hourglass-io/hourglass/queue"
)

// KeepAlive implements queue.Sessions: the session's lease ends lease from
// now on Redis's clock.
func (s *Store) KeepAlive(ctx context.Context, session string, lease time.Duration) error {
	if err := checkSession(session); err != nil {
		return err
	}
	// Not through the shared batches: a renewal never waits behind other
	// callers' work.
	_, err := s.runMany(ctx, []call{{op: scripts.keepAlive, keys: []string{s.k.sessions()}, args: []any{s.now(), session, ms(lease)}}})
	return err
}

// EndSession implements queue.Sessions.
func (s *Store) EndSession(ctx context.Context, session string) error {
	if err := checkSession(session); err != nil {
		return err
	}
	if err := s.r.open(queueFamily); err != nil {
		return err
	}
	if err := s.releaseHolds(ctx, session); err != nil {
		return err
	}
	s.held.dropSession(session)
	return s.storeErr(ctx, s.c.ZRem(ctx, s.k.sessions(), session).Err())
}

// releaseHolds takes back every reference session holds (Hold): it reads
// the session's references on every tag (one pipeline), then takes back
// each tube's with hold, which reads the count itself, so that processes
// doing this at once take back each reference once.
func (s *Store) releaseHolds(ctx context.Context, session string) error {
	if err := s.r.open(queueFamily); err != nil {
		return err
	}
	pipe := s.c.Pipeline()
	cmds := make([]*redis.StringSliceCmd, NumTags)
	for tag := range NumTags {
		cmds[tag] = pipe.HKeys(ctx, s.k.holds(tag, session))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return s.storeErr(ctx, err)
	}
	for tag, c := range cmds {
		for _, tube := range c.Val() {
			if err := s.hold(ctx, tag, session, tube, math.MinInt32); err != nil {
				return err
			}
		}
	}
	return nil
}

// Reap implements queue.Sessions. For each lapsed session it reads the
// session's index on every tag (one pipeline), returns the jobs still
// reserved by the session's owners with unreserve, and forgets the session.
func (s *Store) Reap(ctx context.Context) (int, error) {
	vs, err := s.runMany(ctx, []call{{op: scripts.lapsed, keys: []string{s.k.sessions()}, args: []any{s.now()}}})
	if err != nil {
		return 0, err
	}
	r := replyOf(scripts.lapsed)
	lapsed := r.arr(vs[0], 0)
	if err := r.done(); err != nil {
		return 0, err
	}
	total := 0
	for _, sv := range lapsed {
		session := r.str(sv)
		if err := r.done(); err != nil {
			return total, err
		}
		calls := make([]call, NumTags)
		for tag := range NumTags {
			calls[tag] = call{op: scripts.reap, keys: s.k.tagKeys(tag), args: []any{s.now(), session}}
		}
		replies, err := s.runMany(ctx, calls)
		if err != nil {
			return total, err
		}
		type key struct {
			tag  int
			tube string
		}
		groups := map[key][]any{}
		rr := replyOf(scripts.reap)
		for tag, v := range replies {
			a := rr.arr(v, 0)
			for i := 0; i+1 < len(a); i += 2 {
				k := key{tag, rr.str(a[i])}
				groups[k] = append(groups[k], a[i+1])
			}
		}
		if err := rr.done(); err != nil {
			return total, err
		}
		for k, ids := range groups {
			n, err := s.status(ctx, scripts.unreserve, k.tag, k.tube, append([]any{session + "/", k.tube}, ids...)...)
			if err != nil {
				return total, err
			}
			total += int(n)
		}
		if err := s.releaseHolds(ctx, session); err != nil {
			return total, err
		}
		if err := s.c.ZRem(ctx, s.k.sessions(), session).Err(); err != nil {
			return total, s.storeErr(ctx, err)
		}
	}
	return total, nil
}

func checkSession(session string) error {
	if session == "" || len(session) > 200 {
		return fmt.Errorf("%w: session name %q", queue.ErrInvalid, session)
	}
	for i := 0; i < len(session); i++ {
		if c := session[i]; c == '/' || c == '{' || c == '}' {
			return fmt.Errorf("%w: session name %q has %q", queue.ErrInvalid, session, c)
		}
	}
	return nil
}
