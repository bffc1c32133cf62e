package redisstore

// Expiring hash fields (package ttlhash) on Redis.
//
// Data model. A hash name picks one of S shards (crc32 of the name mod S; S
// is a power of two, default 16). Shard s lives under hash tag number
// s*256/S of keys.go's tags, so shards spread over the slot space, and every
// key of every hash of the shard shares the shard's tag: "<prefix>h:{T}:".
// A script touches one slot. Per shard (see scripts/hx_lib.lua):
//
//	d:<name>  the hash's data: field -> 6-byte deadline (ms, big-endian, 0 =
//	          no TTL) + value. A read filters on those 6 bytes using Redis's
//	          TIME inside the script, so it never returns an expired field
//	          whether or not the sweep has reached it.
//	w         the timing wheel: one hash of packed chunks of due entries.
//	          A bucket "<level>.<index>" covers [index*16^level,
//	          (index+1)*16^level) ms, level 2 (256 ms) and up; a deadline
//	          goes into the finest level whose 16 buckets from now reach
//	          it, so each level holds at most 17 buckets and a shard at most
//	          a few hundred, however many fields there are. An entry is
//	          varint(hash id) varint(deadline - bucket start) varint(len)
//	          field (13 bytes for an 8-byte field name), appended to the
//	          bucket's open chunk; a chunk of 480 bytes is sealed and a new
//	          one opened (a sealed one fits Redis's 512-byte allocations),
//	          so an append rewrites at most 480 bytes plus the entry.
//	r         sorted set of the buckets by due time: a bucket is due its
//	          own width before its start, when its entries move, by the
//	          deadline each carries, into finer buckets or z.
//	z         sorted set of the entries due within 256 ms: member 6-byte
//	          deadline + varint(len) hash name + field, score the deadline.
//	          The sweep expires its due members with one range read, one
//	          HMGET and one HDEL per hash, and one XADD per field.
//	n, i      hash id <-> hash name (ids are never reused), so entries
//	          carry a 1-3 byte id instead of the name.
//	m         seq (hash ids issued), dropped (events the cap removed).
//	e         the stream of expiry events, read by consumer groups.
//	c         (channel) sharded pub/sub, published to after events are added.
//
// A member of z is checked when it comes due: if its field still exists
// with the member's deadline, it expires (deleted, event appended, in the
// same script); otherwise it is stale (the field was deleted, persisted or
// given another deadline, which added its own entry) and is dropped. So
// changing a deadline never rewrites the wheel, and a field yields one
// event however many entries name it. (A store written by the earlier
// layout also holds buckets "<level>:<index>", levels 0 and up, whose
// entries carry no deadline and are checked against the field when their
// bucket comes due, as they were; the sweep still takes them. They are
// listed in q, and this layout's buckets in r, so that a sweeper of the
// earlier version running during an upgrade never meets a bucket it would
// misread.)
//
// Events. Each shard's stream is read with XREADGROUP by consumer groups
// created on every shard; a consumer reads the shards in a pipeline, acks
// with XACK, and takes over entries idle longer than the visibility timeout
// with XAUTOCLAIM. The events every group has acknowledged are trimmed
// (XTRIM MINID to the oldest entry pending or undelivered in any group);
// a stream longer than its cap (MaxEvents/S) is cut to it (MAXLEN) and the
// entries cut are counted in m's dropped.

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hourglass-io/hourglass/ttlhash"
	"github.com/redis/go-redis/v9"
)

var hxScripts = struct {
	set, get, getAll, scan, length, del, ttl, expire, persist, sweep, trim *op
}{
	set: operation("hx_set"), get: operation("hx_get"),
	getAll: operation("hx_getall"), scan: operation("hx_scan"),
	length: operation("hx_len"), del: operation("hx_del"),
	ttl: operation("hx_ttl"), expire: operation("hx_expire"),
	persist: operation("hx_persist"), sweep: operation("hx_sweep"),
	trim: operation("hx_trim"),
}

// DefaultHashShards is HashesOptions.Shards when it is 0.
const DefaultHashShards = 16

// DefaultMaxEvents is HashesOptions.MaxEvents when it is 0.
const DefaultMaxEvents = 1_000_000

// HashesOptions configure Hashes. Nil or the zero value means the defaults.
type HashesOptions struct {
	// Shards is the number of shards of the due index and the events: a
	// power of two from 1 to 256 (default 16). Every client of a Redis must
	// agree on it.
	Shards int
	// MaxEvents caps the expiry events kept (spread evenly over the
	// shards); past it the oldest are dropped, acknowledged or not, and
	// counted. Default 1,000,000.
	MaxEvents int64
}

// Hashes is the ttlhash.Store of a Store: hashes whose fields carry their
// own TTL, and their expiry events. It shares the Store's client, prefix
// and clock, and is safe for concurrent use.
type Hashes struct {
	s      *Store
	shards int
	cap    int64 // per shard
	rr     uint32
}

// Hashes returns the Store's ttlhash.Store with the default options.
// HashesWith refuses only options out of range, which the defaults never
// are: an error here is a defect of the defaults, and panics.
func (s *Store) Hashes() *Hashes {
	h, err := s.HashesWith(nil)
	if err != nil {
		panic("redisstore: the default hash options refused: " + err.Error())
	}
	return h
}

// HashesWith returns the Store's ttlhash.Store with opts; it fails with
// ttlhash.ErrInvalid when they are out of range.
func (s *Store) HashesWith(opts *HashesOptions) (*Hashes, error) {
	n, maxEv := DefaultHashShards, int64(DefaultMaxEvents)
	if opts != nil {
		if opts.Shards != 0 {
			n = opts.Shards
		}
		if opts.MaxEvents != 0 {
			maxEv = opts.MaxEvents
		}
	}
	if n < 1 || n > NumTags || n&(n-1) != 0 {
		return nil, fmt.Errorf("%w: HashesOptions.Shards %d: want a power of two from 1 to %d", ttlhash.ErrInvalid, n, NumTags)
	}
	if maxEv < 1 {
		return nil, fmt.Errorf("%w: HashesOptions.MaxEvents %d: want 0 (default) or positive", ttlhash.ErrInvalid, maxEv)
	}
	return &Hashes{s: s, shards: n, cap: max(1, (maxEv+int64(n)-1)/int64(n))}, nil
}

// shardOf is the shard of a hash name.
func (h *Hashes) shardOf(name string) int {
	return int(crc32.ChecksumIEEE([]byte(name)) % uint32(h.shards))
}

func (h *Hashes) base(shard int) string {
	return h.s.k.prefix + "h:{" + tagNames[shard*(NumTags/h.shards)] + "}:"
}

// keys are the 6 shard keys, and the data key of hash when it is not empty.
func (h *Hashes) keys(shard int, hash string) []string {
	b := h.base(shard)
	ks := []string{b + "w", b + "q", b + "n", b + "i", b + "m", b + "e"}
	if hash != "" {
		ks = append(ks, b+"d:"+hash)
	}
	return ks
}

func (h *Hashes) stream(shard int) string { return h.base(shard) + "e" }

func (h *Hashes) run(ctx context.Context, o *op, shard int, hash string, args ...any) (any, error) {
	argv := append([]any{h.s.now(), h.cap}, args...)
	v, err := h.s.r.run(ctx, call{op: o, keys: h.keys(shard, hash), args: argv})
	return v, h.hxErr(err)
}

// runMany runs calls of hash operations in one pipeline.
func (h *Hashes) runMany(ctx context.Context, calls []call) ([]any, error) {
	v, err := h.s.r.runMany(ctx, calls)
	return v, h.hxErr(err)
}

// hxErr adds ttlhash.ErrNoGroup to Redis's refusal of a stream command for
// a group it does not have; the runner (and fail) gave every other failure
// ttlhash's sentinels already.
func (h *Hashes) hxErr(err error) error {
	if err != nil && redis.HasErrorPrefix(err, "NOGROUP") {
		return fmt.Errorf("%w: %v", ttlhash.ErrNoGroup, err)
	}
	return err
}

func (h *Hashes) hashCall(ctx context.Context, sc *op, hash string, args ...any) (any, error) {
	return h.run(ctx, sc, h.shardOf(hash), hash, args...)
}

func msTime(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

func stringsToAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// Set implements ttlhash.Store.
func (h *Hashes) Set(ctx context.Context, hash string, req ttlhash.SetRequest) (int, error) {
	keep := "0"
	if req.KeepTTL {
		keep = "1"
	}
	args := []any{hash, req.TTL.Milliseconds(), keep}
	for _, f := range req.Fields {
		args = append(args, f.Name, f.Value)
	}
	v, err := h.hashCall(ctx, hxScripts.set, hash, args...)
	return count(hxScripts.set, v, err)
}

// Get implements ttlhash.Store.
func (h *Hashes) Get(ctx context.Context, hash string, fields []string) ([]*ttlhash.Entry, error) {
	v, err := h.hashCall(ctx, hxScripts.get, hash, stringsToAny(fields)...)
	if err != nil {
		return nil, err
	}
	r := replyOf(hxScripts.get)
	a := r.arr(v, 2*len(fields))
	out := make([]*ttlhash.Entry, len(fields))
	for i := range fields {
		if s, ok := r.optStr(a[2*i]); ok {
			out[i] = &ttlhash.Entry{Name: fields[i], Value: []byte(s), Deadline: msTime(r.int(a[2*i+1]))}
		}
	}
	if err := r.done(); err != nil {
		return nil, err
	}
	return out, nil
}

// entries reads a list of {name, value, deadline ms} through r.
func entries(r *reply, a []any) ([]ttlhash.Entry, error) {
	if len(a)%3 != 0 {
		r.fail("entries of 3 values", a)
	}
	out := make([]ttlhash.Entry, 0, len(a)/3)
	for i := 0; i+2 < len(a); i += 3 {
		out = append(out, ttlhash.Entry{Name: r.str(a[i]), Value: []byte(r.str(a[i+1])), Deadline: msTime(r.int(a[i+2]))})
	}
	if err := r.done(); err != nil {
		return nil, err
	}
	return out, nil
}

// GetAll implements ttlhash.Store.
func (h *Hashes) GetAll(ctx context.Context, hash string) ([]ttlhash.Entry, error) {
	v, err := h.hashCall(ctx, hxScripts.getAll, hash)
	if err != nil {
		return nil, err
	}
	r := replyOf(hxScripts.getAll)
	return entries(r, r.arr(v, 0))
}

// Scan implements ttlhash.Store.
func (h *Hashes) Scan(ctx context.Context, hash, cursor string, count int) ([]ttlhash.Entry, string, error) {
	if cursor == "" {
		cursor = "0"
	}
	if _, err := strconv.ParseUint(cursor, 10, 64); err != nil {
		return nil, "", fmt.Errorf("%w: scan cursor %q is not one a scan returned", ttlhash.ErrInvalid, cursor)
	}
	v, err := h.hashCall(ctx, hxScripts.scan, hash, cursor, count)
	if err != nil {
		return nil, "", err
	}
	r := replyOf(hxScripts.scan)
	a := r.arr(v, 1)
	next := r.str(a[0])
	if next == "0" {
		next = ""
	}
	es, err := entries(r, a[1:])
	if err != nil {
		return nil, "", err
	}
	return es, next, nil
}

// Del implements ttlhash.Store.
func (h *Hashes) Del(ctx context.Context, hash string, fields []string) (int, error) {
	v, err := h.hashCall(ctx, hxScripts.del, hash, append([]any{hash}, stringsToAny(fields)...)...)
	return count(hxScripts.del, v, err)
}

// Len implements ttlhash.Store.
func (h *Hashes) Len(ctx context.Context, hash string) (int, error) {
	v, err := h.hashCall(ctx, hxScripts.length, hash)
	return count(hxScripts.length, v, err)
}

// codes reads the per-field integer reply v of o.
func codes(o *op, v any) ([]int, error) {
	r := replyOf(o)
	a := r.arr(v, 0)
	out := make([]int, len(a))
	for i, x := range a {
		out[i] = int(r.int(x))
	}
	return out, r.done()
}

// TTL implements ttlhash.Store.
func (h *Hashes) TTL(ctx context.Context, hash string, fields []string) ([]time.Duration, error) {
	v, err := h.hashCall(ctx, hxScripts.ttl, hash, stringsToAny(fields)...)
	if err != nil {
		return nil, err
	}
	cs, err := codes(hxScripts.ttl, v)
	if err != nil {
		return nil, err
	}
	out := make([]time.Duration, 0, len(fields))
	for _, c := range cs {
		if c < 0 {
			out = append(out, time.Duration(c))
		} else {
			out = append(out, time.Duration(c)*time.Millisecond)
		}
	}
	return out, nil
}

// Expire implements ttlhash.Store.
func (h *Hashes) Expire(ctx context.Context, hash string, req ttlhash.ExpireRequest) ([]int, error) {
	mode, ms := "r", req.TTL.Milliseconds()
	if !req.At.IsZero() {
		mode, ms = "a", req.At.UnixMilli()
	}
	args := append([]any{hash, mode, ms, req.Cond.String()}, stringsToAny(req.Fields)...)
	v, err := h.hashCall(ctx, hxScripts.expire, hash, args...)
	if err != nil {
		return nil, err
	}
	return codes(hxScripts.expire, v)
}

// Persist implements ttlhash.Store.
func (h *Hashes) Persist(ctx context.Context, hash string, fields []string) ([]int, error) {
	v, err := h.hashCall(ctx, hxScripts.persist, hash, append([]any{hash}, stringsToAny(fields)...)...)
	if err != nil {
		return nil, err
	}
	return codes(hxScripts.persist, v)
}

// Shards implements ttlhash.Store.
func (h *Hashes) Shards() int { return h.shards }

// Sweep implements ttlhash.Store.
func (h *Hashes) Sweep(ctx context.Context, shard, max int) (ttlhash.SweepResult, error) {
	if shard < 0 || shard >= h.shards {
		return ttlhash.SweepResult{}, fmt.Errorf("%w: shard %d: want 0 to %d", ttlhash.ErrInvalid, shard, h.shards-1)
	}
	v, err := h.run(ctx, hxScripts.sweep, shard, "", max, shard)
	if err != nil {
		return ttlhash.SweepResult{}, err
	}
	return h.sweepResult(v)
}

// sweepResult reads hx_sweep's reply {expired, more, next ms (-1 none),
// looked, now µs}.
func sweepResult(v any) (ttlhash.SweepResult, error) {
	r := replyOf(hxScripts.sweep)
	a := r.arr(v, 5)
	c := [5]int64{r.int(a[0]), r.int(a[1]), r.int(a[2]), r.int(a[3]), r.int(a[4])}
	if err := r.done(); err != nil {
		return ttlhash.SweepResult{}, err
	}
	res := ttlhash.SweepResult{Expired: int(c[0]), More: c[1] == 1, Next: -1, Looked: int(c[3])}
	if c[2] >= 0 {
		res.Next = time.Duration(c[2]) * time.Millisecond
	}
	res.At = time.UnixMicro(c[4])
	return res, nil
}

// sweepResult reads a reply of hx_sweep; At is left zero unless the clock
// is Redis's own (an injected clock does not run with a Sweeper's).
func (h *Hashes) sweepResult(v any) (ttlhash.SweepResult, error) {
	r, err := sweepResult(v)
	if h.s.clock != nil {
		r.At = time.Time{}
	}
	return r, err
}

// SweepAll implements ttlhash.ShardSweeper: one Sweep per shard, in one
// pipeline.
func (h *Hashes) SweepAll(ctx context.Context, max int) ([]ttlhash.SweepResult, error) {
	all := make([]int, h.shards)
	for i := range all {
		all[i] = i
	}
	return h.SweepShards(ctx, all, max)
}

// SweepShards implements ttlhash.ShardSweeper: one Sweep per shard given,
// in one pipeline.
func (h *Hashes) SweepShards(ctx context.Context, shards []int, max int) ([]ttlhash.SweepResult, error) {
	calls := make([]call, len(shards))
	now := h.s.now()
	for k, i := range shards {
		if i < 0 || i >= h.shards {
			return nil, fmt.Errorf("%w: shard %d: want 0 to %d", ttlhash.ErrInvalid, i, h.shards-1)
		}
		calls[k] = call{op: hxScripts.sweep, keys: h.keys(i, ""), args: []any{now, h.cap, max, i}}
	}
	if len(calls) == 0 {
		return nil, nil
	}
	// A sweep that went out is waited for, even when ctx ends meanwhile:
	// the fields it expired must be counted (go-redis's timeouts bound it).
	out, err := h.runMany(context.WithoutCancel(ctx), calls)
	if err != nil {
		return nil, err
	}
	rs := make([]ttlhash.SweepResult, len(out))
	for i, v := range out {
		if rs[i], err = h.sweepResult(v); err != nil {
			return nil, err
		}
	}
	return rs, nil
}

// forShards runs f for every shard in one pipeline.
func (h *Hashes) forShards(ctx context.Context, f func(p redis.Pipeliner, shard int) redis.Cmder) ([]redis.Cmder, error) {
	if err := h.s.r.open(hashesFamily); err != nil {
		return nil, err
	}
	pipe := h.s.c.Pipeline()
	cmds := make([]redis.Cmder, h.shards)
	for i := range h.shards {
		cmds[i] = f(pipe, i)
	}
	_, _ = pipe.Exec(ctx)
	return cmds, nil
}

// CreateGroup implements ttlhash.Store.
func (h *Hashes) CreateGroup(ctx context.Context, group string) error {
	cmds, err := h.forShards(ctx, func(p redis.Pipeliner, i int) redis.Cmder {
		return p.XGroupCreateMkStream(ctx, h.stream(i), group, "0")
	})
	if err != nil {
		return err
	}
	for _, c := range cmds {
		if err := c.Err(); err != nil && !redis.HasErrorPrefix(err, "BUSYGROUP") {
			return h.hxErr(h.s.r.fail(ctx, hashesFamily, err))
		}
	}
	return nil
}

// DeleteGroup implements ttlhash.Store.
func (h *Hashes) DeleteGroup(ctx context.Context, group string) error {
	cmds, err := h.forShards(ctx, func(p redis.Pipeliner, i int) redis.Cmder {
		return p.XGroupDestroy(ctx, h.stream(i), group)
	})
	if err != nil {
		return err
	}
	found := false
	for _, c := range cmds {
		n, err := c.(*redis.IntCmd).Result()
		if err != nil && !strings.Contains(err.Error(), "requires the key to exist") {
			return h.hxErr(h.s.r.fail(ctx, hashesFamily, err))
		}
		found = found || n > 0
	}
	if !found {
		return fmt.Errorf("%w: %q", ttlhash.ErrNoGroup, group)
	}
	// Events only that group held back may go now.
	calls := make([]call, h.shards)
	for i := range h.shards {
		calls[i] = call{op: hxScripts.trim, keys: h.keys(i, ""), args: []any{h.s.now(), h.cap}}
	}
	_, err = h.runMany(ctx, calls)
	return err
}

func eventID(shard int, id string) string { return strconv.Itoa(shard) + ":" + id }

func (h *Hashes) parseEventID(id string) (int, string, error) {
	s, rest, ok := strings.Cut(id, ":")
	n, err := strconv.Atoi(s)
	if !ok || err != nil || n < 0 || n >= h.shards || !isStreamID(rest) {
		return 0, "", fmt.Errorf("%w: %q", ttlhash.ErrInvalidEventID, id)
	}
	return n, rest, nil
}

// isStreamID reports whether s is a stream entry ID, <ms>-<seq>, both
// decimal 64-bit numbers: what Redis accepts, checked before it is asked.
func isStreamID(s string) bool {
	ms, seq, ok := strings.Cut(s, "-")
	if !ok {
		return false
	}
	_, err1 := strconv.ParseUint(ms, 10, 64)
	_, err2 := strconv.ParseUint(seq, 10, 64)
	return err1 == nil && err2 == nil
}

func toEvent(shard int, m redis.XMessage, redelivered bool) ttlhash.Event {
	str := func(k string) string { s, _ := m.Values[k].(string); return s }
	num := func(k string) int64 { n, _ := strconv.ParseInt(str(k), 10, 64); return n }
	return ttlhash.Event{
		ID: eventID(shard, m.ID), Hash: str("h"), Field: str("f"), Value: []byte(str("v")),
		Deadline: msTime(num("d")), ExpiredAt: msTime(num("x")), Redelivered: redelivered,
	}
}

// fill reads up to max events over the shards. Every shard is asked at
// least once, from a rotating start, so that an empty result means every
// shard had none: when max is below the number of shards, in rounds of at
// most max - (events so far) shards. Then, while a shard returned all it
// was asked for (it may have more) and fewer than max came, the rest goes
// to those shards.
func (h *Hashes) fill(ctx context.Context, max int, only []int, read func(p redis.Pipeliner, shard, count int) func() ([]ttlhash.Event, error)) ([]ttlhash.Event, error) {
	return h.fillAfter(ctx, max, only, nil, read)
}

// fillAfter is fill with first's commands at the head of its first
// pipeline; first's result, checked after that pipeline ran, ends the
// fill when it is an error.
func (h *Hashes) fillAfter(ctx context.Context, max int, only []int, first func(p redis.Pipeliner) func() error, read func(p redis.Pipeliner, shard, count int) func() ([]ttlhash.Event, error)) ([]ttlhash.Event, error) {
	if err := h.s.r.open(hashesFamily); err != nil {
		return nil, err
	}
	var out []ttlhash.Event
	var full []int
	// ask pipelines one read per shard with a positive count, and notes
	// the shards that returned all they were asked for.
	ask := func(counts map[int]int) error {
		pipe := h.s.c.Pipeline()
		var firstDone func() error
		if first != nil {
			firstDone, first = first(pipe), nil
		}
		results := map[int]func() ([]ttlhash.Event, error){}
		for i, c := range counts {
			if c > 0 {
				results[i] = read(pipe, i, c)
			}
		}
		_, _ = pipe.Exec(ctx)
		if firstDone != nil {
			if err := firstDone(); err != nil {
				return err
			}
		}
		for i := range h.shards { // in shard order, whatever the map's
			r := results[i]
			if r == nil {
				continue
			}
			evs, err := r()
			if err != nil {
				return err
			}
			out = append(out, evs...)
			if len(evs) == counts[i] {
				full = append(full, i)
			}
		}
		return nil
	}
	spread := func(shards []int, n int) map[int]int {
		counts := map[int]int{}
		for k, i := range shards {
			counts[i] = n / len(shards)
			if k < n%len(shards) {
				counts[i]++
			}
		}
		return counts
	}
	var ring []int
	if only != nil {
		ring = only
	} else {
		start := int(h.nextRR()) % h.shards
		ring = make([]int, h.shards)
		for i := range ring {
			ring[i] = (start + i) % h.shards
		}
	}
	for tried := 0; tried < len(ring) && len(out) < max; {
		left := max - len(out)
		round := ring[tried:min(len(ring), tried+left)]
		tried += len(round)
		if err := ask(spread(round, left)); err != nil {
			return out, err
		}
	}
	for len(out) < max && len(full) > 0 {
		shards := full
		full = nil
		if err := ask(spread(shards, max-len(out))); err != nil {
			return out, err
		}
	}
	return out, nil
}

// Read implements ttlhash.Store.
func (h *Hashes) Read(ctx context.Context, group, consumer string, max int) ([]ttlhash.Event, error) {
	return h.ReadShards(ctx, group, consumer, nil, max)
}

// ReadShards implements ttlhash.ShardReader: Read from some shards only
// (every shard when shards is nil).
func (h *Hashes) ReadShards(ctx context.Context, group, consumer string, shards []int, max int) ([]ttlhash.Event, error) {
	return h.AckRead(ctx, group, consumer, nil, shards, max)
}

// AckRead implements ttlhash.AckReader: the XACKs of Ack at the head of
// the pipeline of the first reads.
func (h *Hashes) AckRead(ctx context.Context, group, consumer string, ids []string, shards []int, max int) ([]ttlhash.Event, error) {
	for _, i := range shards {
		if i < 0 || i >= h.shards {
			return nil, fmt.Errorf("%w: shard %d of %d", ttlhash.ErrInvalid, i, h.shards)
		}
	}
	var first func(p redis.Pipeliner) func() error
	if len(ids) > 0 {
		by, err := h.byShard(ids)
		if err != nil {
			return nil, err
		}
		first = func(p redis.Pipeliner) func() error {
			acks := h.queueAcks(ctx, p, group, by)
			return func() error {
				_, err := h.ackResults(ctx, acks)
				return err
			}
		}
	}
	return h.fillAfter(ctx, max, shards, first, func(p redis.Pipeliner, shard, count int) func() ([]ttlhash.Event, error) {
		c := p.XReadGroup(ctx, &redis.XReadGroupArgs{
			Group: group, Consumer: consumer, Streams: []string{h.stream(shard), ">"}, Count: int64(count), Block: -1,
		})
		return func() ([]ttlhash.Event, error) {
			ss, err := c.Result()
			if err != nil && !errors.Is(err, redis.Nil) {
				return nil, h.hxErr(h.s.r.fail(ctx, hashesFamily, err))
			}
			var out []ttlhash.Event
			for _, s := range ss {
				for _, m := range s.Messages {
					out = append(out, toEvent(shard, m, false))
				}
			}
			return out, nil
		}
	})
}

// Claim implements ttlhash.Store. The idle time is measured on Redis's own
// clock, not on an injected one.
func (h *Hashes) Claim(ctx context.Context, group, consumer string, minIdle time.Duration, max int) ([]ttlhash.Event, error) {
	return h.fill(ctx, max, nil, func(p redis.Pipeliner, shard, count int) func() ([]ttlhash.Event, error) {
		c := p.XAutoClaim(ctx, &redis.XAutoClaimArgs{
			Stream: h.stream(shard), Group: group, Consumer: consumer, MinIdle: minIdle, Start: "0-0", Count: int64(count),
		})
		return func() ([]ttlhash.Event, error) {
			ms, _, err := c.Result()
			if err != nil && !errors.Is(err, redis.Nil) {
				return nil, h.hxErr(h.s.r.fail(ctx, hashesFamily, err))
			}
			var out []ttlhash.Event
			for _, m := range ms {
				if m.Values != nil { // nil: trimmed by the cap
					out = append(out, toEvent(shard, m, true))
				}
			}
			return out, nil
		}
	})
}

// Ack implements ttlhash.Store: XACK per shard, in one pipeline. The
// events every group has acknowledged are trimmed by the scripts that
// append events, each time a stream passes a multiple of 64 entries
// (hx_lib.lua's finish), so an acknowledgement is one plain command a
// shard and one round trip.
func (h *Hashes) Ack(ctx context.Context, group string, ids []string) (int, error) {
	by, err := h.byShard(ids)
	if err != nil {
		return 0, err
	}
	if err := h.s.r.open(hashesFamily); err != nil {
		return 0, err
	}
	if len(by) == 0 {
		return 0, nil
	}
	pipe := h.s.c.Pipeline()
	acks := h.queueAcks(ctx, pipe, group, by)
	_, _ = pipe.Exec(ctx)
	return h.ackResults(ctx, acks)
}

// byShard groups event IDs by shard.
func (h *Hashes) byShard(ids []string) (map[int][]string, error) {
	by := map[int][]string{}
	for _, id := range ids {
		s, sid, err := h.parseEventID(id)
		if err != nil {
			return nil, err
		}
		by[s] = append(by[s], sid)
	}
	return by, nil
}

// queueAcks adds one XACK per shard of by to p, in shard order.
func (h *Hashes) queueAcks(ctx context.Context, p redis.Pipeliner, group string, by map[int][]string) []*redis.IntCmd {
	shards := make([]int, 0, len(by))
	for s := range by {
		shards = append(shards, s)
	}
	slices.Sort(shards)
	acks := make([]*redis.IntCmd, len(shards))
	for k, s := range shards {
		acks[k] = p.XAck(ctx, h.stream(s), group, by[s]...)
	}
	return acks
}

// ackResults adds up what the XACKs of queueAcks acknowledged.
func (h *Hashes) ackResults(ctx context.Context, acks []*redis.IntCmd) (int, error) {
	n := 0
	for _, c := range acks {
		a, err := c.Result()
		if err != nil {
			return n, h.hxErr(h.s.r.fail(ctx, hashesFamily, err))
		}
		n += int(a)
	}
	return n, nil
}

// EventStats implements ttlhash.Store.
func (h *Hashes) EventStats(ctx context.Context) (ttlhash.EventStats, error) {
	var st ttlhash.EventStats
	if err := h.s.r.open(hashesFamily); err != nil {
		return st, err
	}
	pipe := h.s.c.Pipeline()
	lens := make([]*redis.IntCmd, h.shards)
	drops := make([]*redis.StringCmd, h.shards)
	groups := make([]*redis.XInfoGroupsCmd, h.shards)
	for i := range h.shards {
		lens[i] = pipe.XLen(ctx, h.stream(i))
		drops[i] = pipe.HGet(ctx, h.keys(i, "")[4], "dropped")
		groups[i] = pipe.XInfoGroups(ctx, h.stream(i))
	}
	_, _ = pipe.Exec(ctx)
	pending := map[string]int64{}
	var names []string
	for i := range h.shards {
		n, err := lens[i].Result()
		if err != nil {
			return st, h.hxErr(h.s.r.fail(ctx, hashesFamily, err))
		}
		st.Retained += n
		d, err := drops[i].Int64()
		if err != nil && !errors.Is(err, redis.Nil) {
			return st, h.hxErr(h.s.r.fail(ctx, hashesFamily, err))
		}
		st.Dropped += d
		gs, err := groups[i].Result()
		if err != nil && !strings.Contains(err.Error(), "no such key") {
			return st, h.hxErr(h.s.r.fail(ctx, hashesFamily, err))
		}
		for _, g := range gs {
			if _, ok := pending[g.Name]; !ok {
				names = append(names, g.Name)
			}
			pending[g.Name] += g.Pending
		}
	}
	for _, n := range sortedStrings(names) {
		st.Groups = append(st.Groups, ttlhash.GroupStats{Name: n, Pending: pending[n]})
	}
	return st, nil
}

// Listen implements ttlhash.Notifier. ttlhash.TopicEvents: wake is called
// with the shard's ttlhash.EventShardTopic after events are appended to
// it, and after its subscription reconnects; an EventShardTopic listens to
// that shard alone. ttlhash.TopicDue: the scripts publish on each shard's
// channel "s" when they make a bucket due sooner than every other, and
// wake is called with the shard's ttlhash.DueShardTopic.
func (h *Hashes) Listen(ctx context.Context, topic string, wake func(topic string)) (func(), error) {
	switch topic {
	case ttlhash.TopicEvents:
		return h.listen(ctx, "c", -1, func(shard int) { wake(ttlhash.EventShardTopic(shard)) })
	case ttlhash.TopicDue:
		return h.listen(ctx, "s", -1, func(shard int) { wake(ttlhash.DueShardTopic(shard)) })
	}
	if shard, ok := ttlhash.ParseEventShardTopic(topic); ok && shard < h.shards {
		return h.listen(ctx, "c", shard, func(int) { wake(topic) })
	}
	return nil, fmt.Errorf("redisstore: %w: %q", ttlhash.ErrNoTopic, topic)
}

// listen subscribes wake to channel suffix of every shard (of shard only,
// when it is not negative); wake is told the shard.
func (h *Hashes) listen(ctx context.Context, suffix string, shard int, wake func(shard int)) (func(), error) {
	f := func(shard string) {
		n, _ := strconv.Atoi(shard)
		wake(n)
	}
	var subs []channelSub
	for i := range h.shards {
		if shard >= 0 && i != shard {
			continue
		}
		subs = append(subs, channelSub{i: i * (NumTags / h.shards), ch: h.base(i) + suffix, topic: strconv.Itoa(i)})
	}
	return h.s.notify.addAll(ctx, hashesFamily, subs, &f)
}

func sortedStrings(s []string) []string {
	slices.Sort(s)
	return s
}

func (h *Hashes) nextRR() uint32 { return atomic.AddUint32(&h.rr, 1) }
