package redisstore

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hourglass-io/hourglass/queue"
	"github.com/redis/go-redis/v9"
)

// LayoutVersion is the version of the key layout this package reads and
// writes. New refuses a Redis whose layout key holds another version; one
// of an earlier version Migrate converts (ErrOldLayout).
const LayoutVersion = "3"

// DefaultPrefix is the prefix of every key when Options.Prefix is empty.
const DefaultPrefix = "hg:"

// Options configure a Store. The zero value (or nil) means the defaults.
type Options struct {
	// Prefix starts every key, so that Redis ACLs can confine hourglass
	// (default "hg:").
	Prefix string
	// Partitions says into how many partitions a tube is split, each on its
	// own cluster slot (1 to 256; default 1). Every client of a Redis must
	// agree on it. Priority order holds within a partition.
	Partitions func(tube string) int
	// Clock, when set, replaces Redis's TIME in every script (tests only:
	// Redis's own clock is what makes instances with skewed clocks agree).
	Clock func() time.Time
	// Logger receives warnings (an eviction policy that can delete jobs).
	// Default slog.Default().
	Logger *slog.Logger
	// Replicas, when above 0, makes every change of the queue (put,
	// reserve, delete, release, bury, touch, kick, pause, the reap of a
	// lapsed session) wait until that many replicas of its master have it
	// (Redis's WAIT, on the connection that made the change), so that a
	// failover cannot lose what was acknowledged. When fewer acknowledge
	// it within ReplicaTimeout the call fails with queue.ErrNotReplicated:
	// the change is made on the master and may or may not survive a
	// failover, as after a network error.
	Replicas int
	// ReplicaTimeout bounds each wait for Replicas (default 1 s).
	ReplicaTimeout time.Duration
}

// Store is the queue.Store on Redis 7.0 or later: standalone, Sentinel or
// Cluster, through a go-redis UniversalClient. It is safe for concurrent use.
type Store struct {
	c      redis.UniversalClient
	k      keys
	parts  func(string) int
	clock  func() time.Time
	rr     atomic.Uint64 // spreads puts over partitions
	tubes  tubeCache
	notify notifier
	closed atomic.Bool
	r      *runner
	held   heldTags
	keep   keeper // drops kept jobs at their time (keep.go)
	// cluster: c is a Redis Cluster client (a call reaches one slot).
	cluster bool
}

// New returns a Store on c. It checks the layout version (writing it on a
// new Redis), loads the scripts, and warns when Redis may evict keys.
//
// go-redis re-sends a command after a network error or a read timeout
// unless its MaxRetries is -1; a put or a reserve that reached Redis would
// then run twice. Give New a client with MaxRetries: -1 (Open does; New
// logs a warning for a client that retries), or accept that a network error
// can duplicate a put (UniqueKey prevents it) or leave a reserved job to
// come back after its TTR.
func New(ctx context.Context, c redis.UniversalClient, opts *Options) (*Store, error) {
	s := &Store{c: c, k: keys{prefix: DefaultPrefix}, parts: func(string) int { return 1 }}
	_, s.cluster = c.(*redis.ClusterClient)
	log := slog.Default()
	if opts != nil {
		if opts.Prefix != "" {
			s.k.prefix = opts.Prefix
		}
		if opts.Partitions != nil {
			s.parts = opts.Partitions
		}
		s.clock = opts.Clock
		if opts.Logger != nil {
			log = opts.Logger
		}
	}
	if strings.ContainsAny(s.k.prefix, "{}") {
		return nil, fmt.Errorf("redisstore: Options.Prefix %q must not contain braces (they would change the hash tag)", s.k.prefix)
	}
	s.r = newRunner(c, &s.closed)
	if opts != nil && opts.Replicas > 0 {
		s.r.replicas, s.r.replicaTimeout = opts.Replicas, opts.ReplicaTimeout
		if s.r.replicaTimeout <= 0 {
			s.r.replicaTimeout = time.Second
		}
	}
	if opts != nil && opts.Replicas < 0 {
		return nil, fmt.Errorf("redisstore: Options.Replicas %d: want 0 (no wait) or more", opts.Replicas)
	}
	s.tubes.init(1 << 16)
	s.notify.init(s)
	if err := s.checkLayout(ctx); err != nil {
		return nil, err
	}
	if err := s.r.load(ctx); err != nil {
		return nil, fmt.Errorf("redisstore: loading the functions library: %w", err)
	}
	s.keep.init(s)
	if err := s.keep.start(ctx); err != nil {
		return nil, err
	}
	s.warnEviction(ctx, log)
	warnRetries(c, log)
	return s, nil
}

// warnRetries warns when c re-sends a command after a network error or a
// read timeout: a put or a reserve whose reply was lost would run twice.
func warnRetries(c redis.UniversalClient, log *slog.Logger) {
	n := 0 // go-redis keeps -1 (no retries) as 0 and 0 (its default) as 3
	switch c := c.(type) {
	case *redis.Client:
		n = c.Options().MaxRetries
	case *redis.ClusterClient:
		n = c.Options().MaxRetries
	case *redis.Ring:
		n = c.Options().MaxRetries
	}
	if n > 0 {
		log.Warn("the redis client re-sends a command whose reply it did not get: a put or a reserve whose reply is lost would run twice; give the client MaxRetries: -1",
			"max-retries", n)
	}
}

func (s *Store) checkLayout(ctx context.Context) error {
	key := s.k.layout()
	if err := s.c.SetNX(ctx, key, LayoutVersion, 0).Err(); err != nil {
		return fmt.Errorf("redisstore: checking layout version: %w", err)
	}
	v, err := s.c.Get(ctx, key).Result()
	if err != nil {
		return fmt.Errorf("redisstore: checking layout version: %w", err)
	}
	if v == "1" || v == "2" {
		return fmt.Errorf("%w (%s holds layout version %q, this build reads %q)", ErrOldLayout, key, v, LayoutVersion)
	}
	if v != LayoutVersion {
		return fmt.Errorf("redisstore: %s holds layout version %q, this build reads %q", key, v, LayoutVersion)
	}
	return nil
}

func (s *Store) warnEviction(ctx context.Context, log *slog.Logger) {
	check := func(ctx context.Context, c redis.UniversalClient) error {
		m, err := c.ConfigGet(ctx, "maxmemory-policy").Result()
		if err != nil {
			return nil // CONFIG may be renamed or forbidden by ACL
		}
		if p := m["maxmemory-policy"]; p != "" && p != "noeviction" {
			log.Warn("redis may evict keys, and with them jobs; set maxmemory-policy to noeviction", "maxmemory-policy", p)
		}
		return nil
	}
	if cc, ok := s.c.(*redis.ClusterClient); ok {
		_ = cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error { return check(ctx, c) })
		return
	}
	_ = check(ctx, s.c)
}

// Close ends the store's subscriptions. It does not close the client.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.notify.close()
	s.keep.close()
	return nil
}

func (s *Store) now() string {
	if s.clock == nil {
		return ""
	}
	return strconv.FormatInt(s.clock().UnixMicro(), 10)
}

func (s *Store) partitions(tube string) int {
	if queue.IsGroupTube(tube) {
		return 1 // a group lives on its tube's first partition's tag
	}
	k := s.parts(tube)
	if k < 1 {
		return 1
	}
	if k > NumTags {
		return NumTags
	}
	return k
}

// run runs an operation on the slot of one tag, with the tag's keys and,
// when tube is not empty, the tube's keys.
func (s *Store) run(ctx context.Context, o *op, tag int, tube string, args ...any) (any, error) {
	ks := s.k.tagKeys(tag)
	if tube != "" {
		ks = append(ks, s.k.tubeKeys(tag, tube)...)
	}
	return s.r.run(ctx, call{op: o, keys: ks, args: append([]any{s.now()}, args...)})
}

// idKey is the key of the counter a put takes job sequence numbers from:
// one for the whole store on a Redis that is not a cluster, so IDs increase
// in put order across every tube; the tag's own m (m) on a cluster, where
// one key cannot be in every slot.
func (s *Store) idKey(m string) string {
	if _, ok := s.c.(*redis.ClusterClient); ok {
		return m
	}
	return s.k.ids()
}

// status runs an operation whose reply is one integer.
func (s *Store) status(ctx context.Context, o *op, tag int, tube string, args ...any) (int64, error) {
	v, err := s.run(ctx, o, tag, tube, args...)
	if err != nil {
		return 0, err
	}
	r := replyOf(o)
	n := r.int(v)
	return n, r.done()
}

// runMany runs calls of queue operations in one pipeline.
func (s *Store) runMany(ctx context.Context, calls []call) ([]any, error) {
	return s.r.runMany(ctx, calls)
}

// storeErr gives a failure of a plain command (not an operation of the
// library) the queue's sentinels.
func (s *Store) storeErr(ctx context.Context, err error) error {
	return s.r.fail(ctx, queueFamily, err)
}

func idhex(id queue.ID) string {
	const digits = "0123456789abcdef"
	var b [14]byte
	for i := 13; i >= 0; i-- {
		b[i] = digits[id&15]
		id >>= 4
	}
	return string(b[:])
}

func tagOf(id queue.ID) int { return int(id & (NumTags - 1)) }

func randInt(n int) int { return rand.IntN(n) }

// tubeCache remembers the tube of job IDs this process has seen, so that a
// command naming only an ID needs no lookup. A job never changes tube and
// IDs are not reused, but an entry is checked, not trusted: the operation
// that uses it finds the job in the named tube or looks again (withTube).
// The oldest entries are dropped when it is full.
type tubeCache struct {
	mu   sync.Mutex
	m    map[queue.ID]string
	ring []queue.ID
	pos  int
}

func (c *tubeCache) init(n int) {
	c.m = make(map[queue.ID]string, n)
	c.ring = make([]queue.ID, n)
}

func (c *tubeCache) add(id queue.ID, tube string) {
	c.mu.Lock()
	if t, ok := c.m[id]; ok && t != tube {
		c.m[id] = tube // what Redis said last wins
	} else if !ok {
		if old := c.ring[c.pos]; old != 0 {
			delete(c.m, old)
		}
		c.ring[c.pos] = id
		c.pos = (c.pos + 1) % len(c.ring)
		c.m[id] = tube
	}
	c.mu.Unlock()
}

// drop forgets id (its slot in the ring is reused when the ring comes
// round to it).
func (c *tubeCache) drop(id queue.ID) {
	c.mu.Lock()
	delete(c.m, id)
	c.mu.Unlock()
}

func (c *tubeCache) get(id queue.ID) (string, bool) {
	c.mu.Lock()
	t, ok := c.m[id]
	c.mu.Unlock()
	return t, ok
}
