package hourglass

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/hourglass-io/hourglass/lock"
	"github.com/hourglass-io/hourglass/memstore"
	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/ratelimit"
	"github.com/hourglass-io/hourglass/redisstore"
	"github.com/hourglass-io/hourglass/schedule"
	"github.com/hourglass-io/hourglass/ttlhash"
	"github.com/redis/go-redis/v9"
)

// ErrUnsupportedURL is returned by Open for a store URL it cannot read.
var ErrUnsupportedURL = errors.New("hourglass: unsupported store URL")

// Options configure Open. The zero value (or nil) means the defaults.
type Options struct {
	// Fsync is the embedded engine's durability: "always", "everysec" or
	// "no"; empty means memstore's default ("always"). Ignored for Redis.
	Fsync string
	// MaxJobs caps the jobs the embedded engine holds (0: no cap). Ignored
	// for Redis, whose cap is its maxmemory.
	MaxJobs int
	// Prefix of every Redis key; empty means "hg:". Ignored for the embedded engine.
	Prefix string
	// Replicas, on Redis, makes the queue's changes wait until that many
	// replicas have them (redisstore.Options.Replicas): a failover then
	// loses no acknowledged put, reserve or delete. Ignored for the
	// embedded engine.
	Replicas int
	// Logger receives warnings; default slog.Default().
	Logger *slog.Logger
}

// Backend is an opened store: the Store of each primitive, and Close.
type Backend struct {
	// Queue is the job store.
	Queue queue.Store
	// Locks is the store of locks and semaphores (lock.New(b.Locks, nil)).
	Locks lock.Store
	// Schedules is the store of schedules (schedule.New(b.Schedules, nil)).
	Schedules schedule.Store
	// Limits is the rate limit store (ratelimit.New(b.Limits, nil)).
	Limits ratelimit.Store
	// Hashes is the store of expiring hash fields.
	Hashes ttlhash.Store
	// Kind is "memory", "file" or "redis".
	Kind string
	// Redis is the client when Kind is "redis", for callers that need it
	// (health checks); nil otherwise.
	Redis redis.UniversalClient

	close func() error
}

// Close closes the stores and, for Redis, the client Open made.
func (b *Backend) Close() error { return b.close() }

// Open opens the store a URL names:
//
//	mem://                                  in memory, nothing on disk
//	./data, /var/lib/hourglass, file:///abs the embedded engine, durable in that directory
//	redis://[user:pass@]host:port[/db]      one Redis (rediss:// for TLS)
//	redis+sentinel://[user:pass@]h1:26379,h2:26379/master[/db]   Redis through Sentinel (rediss+sentinel:// for TLS)
//	redis+cluster://[user:pass@]h1:6379,h2:6379                 Redis Cluster (rediss+cluster:// for TLS)
//
// Query parameters of redis:// URLs are go-redis's (dial_timeout, …). Open
// makes Redis clients with retries off (see redisstore, "Retries").
func Open(ctx context.Context, rawURL string, opts *Options) (*Backend, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	scheme, rest, hasScheme := strings.Cut(rawURL, "://")
	if !hasScheme {
		if rawURL == "" {
			return nil, fmt.Errorf("%w: empty", ErrUnsupportedURL)
		}
		return openFile(rawURL, o)
	}
	switch scheme {
	case "mem":
		if rest != "" {
			return nil, fmt.Errorf("%w: mem:// takes nothing after it, got %q", ErrUnsupportedURL, rawURL)
		}
		s, err := memstore.New(&memstore.Options{MaxJobs: o.MaxJobs})
		if err != nil {
			return nil, err
		}
		return &Backend{Queue: s, Locks: s.Locks(), Schedules: s.Schedules(), Limits: s.RateLimits(), Hashes: s.Hashes(), Kind: "memory", close: s.Close}, nil
	case "file":
		u, err := url.Parse(rawURL)
		if err != nil || u.Path == "" || (u.Host != "" && u.Host != "localhost") {
			return nil, fmt.Errorf("%w: %q: want file:///absolute/path", ErrUnsupportedURL, rawURL)
		}
		return openFile(u.Path, o)
	case "redis", "rediss", "redis+cluster", "rediss+cluster", "redis+sentinel", "rediss+sentinel":
		c, err := redisClient(scheme, rest, rawURL)
		if err != nil {
			return nil, err
		}
		return openRedis(ctx, c, o)
	}
	return nil, fmt.Errorf("%w: %q (want mem://, a path, file://, redis://, rediss://, redis+sentinel://, redis+cluster://)", ErrUnsupportedURL, rawURL)
}

// redisClient makes the client of a redis:// URL (scheme and rest are its
// parts around "://"), with retries off.
func redisClient(scheme, rest, rawURL string) (redis.UniversalClient, error) {
	switch scheme {
	case "redis", "rediss":
		ropts, err := redis.ParseURL(rawURL)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrUnsupportedURL, err)
		}
		ropts.MaxRetries = -1
		return redis.NewClient(ropts), nil
	case "redis+cluster", "rediss+cluster":
		base := strings.TrimSuffix(scheme, "+cluster")
		hosts, query, _ := strings.Cut(rest, "?")
		userinfo, hosts := splitUserinfo(hosts)
		addrs := strings.Split(strings.TrimSuffix(hosts, "/"), ",")
		u := base + "://" + userinfo + addrs[0]
		q := []string{}
		if query != "" {
			q = append(q, query)
		}
		for _, a := range addrs[1:] {
			q = append(q, "addr="+a)
		}
		if len(q) > 0 {
			u += "?" + strings.Join(q, "&")
		}
		copts, err := redis.ParseClusterURL(u)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrUnsupportedURL, err)
		}
		copts.MaxRetries = -1
		return redis.NewClusterClient(copts), nil
	case "redis+sentinel", "rediss+sentinel":
		fopts, err := parseSentinel(scheme, rest)
		if err != nil {
			return nil, err
		}
		fopts.MaxRetries = -1
		return redis.NewFailoverClient(fopts), nil
	}
	return nil, fmt.Errorf("%w: %q is not a redis:// URL", ErrUnsupportedURL, rawURL)
}

func openFile(dir string, o Options) (*Backend, error) {
	mo := &memstore.Options{MaxJobs: o.MaxJobs, Logger: o.Logger}
	if o.Fsync != "" {
		p, err := memstore.ParseFsync(o.Fsync)
		if err != nil {
			return nil, err
		}
		mo.Fsync = p
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	s, err := memstore.Open(abs, mo)
	if err != nil {
		return nil, err
	}
	return &Backend{Queue: s, Locks: s.Locks(), Schedules: s.Schedules(), Limits: s.RateLimits(), Hashes: s.Hashes(), Kind: "file", close: s.Close}, nil
}

func openRedis(ctx context.Context, c redis.UniversalClient, o Options) (*Backend, error) {
	s, err := redisstore.New(ctx, c, &redisstore.Options{Prefix: o.Prefix, Logger: o.Logger, Replicas: o.Replicas})
	if err != nil {
		c.Close()
		return nil, err
	}
	return &Backend{Queue: s, Locks: s.Locks(), Schedules: s.Schedules(), Limits: s.RateLimits(), Hashes: s.Hashes(), Kind: "redis", Redis: c, close: func() error {
		return errors.Join(s.Close(), c.Close())
	}}, nil
}

func splitUserinfo(s string) (userinfo, rest string) {
	if i := strings.LastIndexByte(s, '@'); i >= 0 {
		return s[:i+1], s[i+1:]
	}
	return "", s
}

// parseSentinel reads h1:p1,h2:p2/master[/db] with optional user:pass@.
func parseSentinel(scheme, rest string) (*redis.FailoverOptions, error) {
	bad := func(why string) error {
		return fmt.Errorf("%w: %s://%s: %s (want %s://[user:pass@]host:port[,host:port…]/master[/db])", ErrUnsupportedURL, scheme, rest, why, scheme)
	}
	rest, query, _ := strings.Cut(rest, "?")
	if query != "" {
		return nil, bad("query parameters are not supported")
	}
	userinfo, rest := splitUserinfo(rest)
	hosts, path, ok := strings.Cut(rest, "/")
	if !ok || hosts == "" {
		return nil, bad("no master name")
	}
	master, db, _ := strings.Cut(path, "/")
	if master == "" {
		return nil, bad("no master name")
	}
	fo := &redis.FailoverOptions{MasterName: master, SentinelAddrs: strings.Split(hosts, ",")}
	if userinfo != "" {
		user, pass, _ := strings.Cut(strings.TrimSuffix(userinfo, "@"), ":")
		fo.Username, fo.Password = user, pass
	}
	if db != "" {
		var n int
		if _, err := fmt.Sscanf(db, "%d", &n); err != nil || n < 0 {
			return nil, bad("bad database number")
		}
		fo.DB = n
	}
	if scheme == "rediss+sentinel" {
		fo.TLSConfig = tlsConfig(hosts)
	}
	return fo, nil
}
