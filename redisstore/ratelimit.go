package redisstore

import (
	"context"
	"encoding/hex"
	"strconv"
	"strings"
	"time"

	"github.com/hourglass-io/hourglass/ratelimit"
)

var rlScripts = struct{ gcra, log, window *op }{
	gcra:   operation("rl_gcra"),
	log:    operation("rl_log"),
	window: operation("rl_window"),
}

// RateLimits is the ratelimit.Store on Redis. Each decision is one script on
// the slot of its key, from Redis's clock (TIME, in µs). A key's state for
// a GCRA limit is one string (its theoretical arrival time), for a sliding
// log one sorted set, for a sliding window one hash of three counters;
// each expires (PEXPIRE) when the key is idle again. Keys are
// <prefix>rl:{<key>}:…, so every limit of one key shares a slot and a call
// with several limits is one atomic script on Redis Cluster. It is safe for
// concurrent use.
type RateLimits struct{ s *Store }

// RateLimits returns the store's ratelimit.Store. It shares the store's client,
// prefix and clock.
func (s *Store) RateLimits() *RateLimits { return &RateLimits{s: s} }

// rlBase is the start of every key of a limiter key: the limiter key is the
// hash tag. A key that is empty, starts with '~' or holds a brace (which
// would end the tag early or leave it empty) is written as '~' and its
// hex digits, so that distinct keys never share a name.
func (l *RateLimits) rlBase(key string) string {
	if key == "" || key[0] == '~' || strings.ContainsAny(key, "{}") {
		key = "~" + hex.EncodeToString([]byte(key))
	}
	return l.s.k.prefix + "rl:{" + key + "}:"
}

func us(d time.Duration) int64 { return int64(d / time.Microsecond) }

func b36(v int64) string { return strconv.FormatInt(v, 36) }

// gcraCall is the script call of one GCRA request: ARGV now, then the
// decision: op, n, the number of limits, per limit its interval, burst and
// quota, then the max wait (reserve only) or at (cancel and roll back
// only). Decisions that wait together go out as one call, each after the
// other (rlScripts.gcra.merge): any of them on one Redis, those of one
// slot on a cluster.
func (l *RateLimits) gcraCall(key string, req ratelimit.GCRARequest) call {
	base := l.rlBase(key)
	ks := make([]string, len(req.Limits))
	args := make([]any, 4, 6+3*len(req.Limits))
	args[0], args[1], args[3] = l.s.now(), opArgs[0], len(req.Limits)
	switch req.Op {
	case ratelimit.OpReserve:
		args[1] = opArgs[1]
	case ratelimit.OpCancel:
		args[1] = opArgs[2]
	case ratelimit.OpRollback:
		args[1] = opArgs[3]
	}
	args[2] = req.N
	var buf [96]byte
	for i, lim := range req.Limits {
		t, b := us(lim.Interval()), int64(lim.BurstOrDefault())
		// base + "g" + b36(t) + "." + b36(b), in one allocation.
		k := append(append(buf[:0], base...), 'g')
		k = append(strconv.AppendInt(k, t, 36), '.')
		ks[i] = string(strconv.AppendInt(k, b, 36))
		args = append(args, t, b, lim.QuotaOrDefault())
	}
	switch req.Op {
	case ratelimit.OpReserve:
		maxWait := anyWait
		if req.MaxWait >= 0 {
			maxWait = us(req.MaxWait)
		}
		args = append(args, maxWait)
	case ratelimit.OpCancel, ratelimit.OpRollback:
		args = append(args, req.At.UnixMicro())
	}
	c := call{op: rlScripts.gcra, keys: ks, args: args}
	if l.s.cluster {
		c.scope = strconv.Itoa(keySlot(base))
	}
	return c
}

// The ARGV of rl_gcra that are the same in most calls, boxed once: the
// operations ("a" allow, "r" reserve, "c" cancel, "u" roll back) and the
// maximum wait -1 (any).
var (
	opArgs      = [4]any{"a", "r", "c", "u"}
	anyWait any = int64(-1)
)

func init() {
	// At most 64 decisions a call, so that none runs long.
	rlScripts.gcra.merge = &concatMerger{head: 1, replyPer: 6, max: 64}
}

// keySlot is the Redis Cluster slot of a key: CRC16 (XMODEM) of its hash
// tag (the part between the first { and the next }, when not empty), or of
// the whole key, modulo 16384.
func keySlot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	var crc uint16
	for k := 0; k < len(key); k++ {
		crc ^= uint16(key[k]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) % 16384
}

// windowCall is the script call of a sliding log (kind 'l') or sliding
// window (kind 'w') decision.
func (l *RateLimits) windowCall(o *op, kind, key string, n int, limits []ratelimit.Limit) call {
	base := l.rlBase(key)
	ks := make([]string, len(limits))
	args := make([]any, 2, 2+3*len(limits))
	args[0], args[1] = l.s.now(), n
	for i, lim := range limits {
		w := us(lim.Per)
		ks[i] = base + kind + b36(w) + "." + b36(int64(lim.Events))
		args = append(args, w, lim.Events, lim.QuotaOrDefault())
	}
	return call{op: o, keys: ks, args: args}
}

// GCRA implements ratelimit.Store.
func (l *RateLimits) GCRA(ctx context.Context, key string, n int, limits []ratelimit.Limit, op ratelimit.Op, maxWait time.Duration, at time.Time) (ratelimit.Decision, error) {
	return l.one(ctx, l.gcraCall(key, ratelimit.GCRARequest{Op: op, N: n, Limits: limits, MaxWait: maxWait, At: at}))
}

// SlidingLog implements ratelimit.Store.
func (l *RateLimits) SlidingLog(ctx context.Context, key string, n int, limits []ratelimit.Limit) (ratelimit.Decision, error) {
	return l.one(ctx, l.windowCall(rlScripts.log, "l", key, n, limits))
}

// SlidingWindow implements ratelimit.Store.
func (l *RateLimits) SlidingWindow(ctx context.Context, key string, n int, limits []ratelimit.Limit) (ratelimit.Decision, error) {
	return l.one(ctx, l.windowCall(rlScripts.window, "w", key, n, limits))
}

// GCRABatch implements ratelimit.Batcher: the decisions are sent in one
// pipeline (on a cluster, one per master).
func (l *RateLimits) GCRABatch(ctx context.Context, keys []string, reqs []ratelimit.GCRARequest) ([]ratelimit.Decision, error) {
	if len(keys) == 1 {
		// One decision goes with other callers' (group commit).
		d, err := l.one(ctx, l.gcraCall(keys[0], reqs[0]))
		if err != nil {
			return nil, err
		}
		return []ratelimit.Decision{d}, nil
	}
	calls := make([]call, len(keys))
	for i, k := range keys {
		calls[i] = l.gcraCall(k, reqs[i])
	}
	vs, err := l.s.r.runMany(ctx, calls)
	if err != nil {
		return nil, err
	}
	out := make([]ratelimit.Decision, len(vs))
	for i, v := range vs {
		if out[i], err = decision(v); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// one runs a single decision.
func (l *RateLimits) one(ctx context.Context, c call) (ratelimit.Decision, error) {
	v, err := l.s.r.run(ctx, c)
	if err != nil {
		return ratelimit.Decision{}, err
	}
	return decision(v)
}

// decision reads a script's reply {ok, remaining, retry, reset, delay, now}.
func decision(v any) (ratelimit.Decision, error) {
	r := replyOf(rlScripts.gcra)
	a := r.arr(v, 6)
	var n [6]int64
	for i := range n {
		n[i] = r.int(a[i])
	}
	if err := r.done(); err != nil {
		return ratelimit.Decision{}, err
	}
	d := time.Microsecond
	return ratelimit.Decision{
		OK: n[0] == 1, Remaining: int(n[1]), RetryAfter: time.Duration(n[2]) * d,
		ResetAfter: time.Duration(n[3]) * d, Delay: time.Duration(n[4]) * d, Now: time.UnixMicro(n[5]),
	}, nil
}
