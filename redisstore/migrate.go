package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// ErrOldLayout is wrapped by New's error for a Redis written by an earlier
// layout that Migrate converts.
var ErrOldLayout = errors.New("redisstore: the store has an earlier key layout; stop every hourglass using it and run `hourglass migrate --store <url>` to convert it")

// Migration reports what Migrate did.
type Migration struct {
	// From and To are the layout versions before and after ("" before: a
	// Redis that held no store, which Migrate leaves alone).
	From, To string
	// Deleted counts the keys of the earlier layout it removed.
	Deleted int
	// Converted counts the jobs whose keys it rewrote.
	Converted int
}

// Migrate converts the store on c, written by an earlier layout, to
// LayoutVersion in place: every job, its state, history and counters stay.
// Stop every process using the store first; a store already at
// LayoutVersion, or a Redis without a store, is left as it is.
//
// Layout 1 to 2: layout 1 kept, beside each job's owner in its record, a
// reservation index per owner or session and tag (keys <prefix>{tag}:o:<owner>
// and <prefix>{tag}:s:<session>); layout 2 reads the ledger from the reserved
// sets and the records, so the indexes are deleted. Layout 1 counted every
// put in its tag's m (field seq); layout 2 counts them in the tube's total
// only, adding a tube's total to m's gone when the tube goes, so each tag's
// seq becomes gone: seq less the totals of its tubes.
//
// Layout 2 to 3: layout 2 kept a job in one value, its record and body,
// rewritten by every reserve, promotion, timeout, release, bury and kick;
// layout 3 writes the record once and keeps what changes apart (a past
// written by the transitions that change it, a reservation while
// reserved), so each job is rewritten into those fields, a chunk of a tag
// a call. Migrate refuses (ErrInUse) while a server's session lease has
// not lapsed: a server of the earlier layout would go on writing its
// records into the converted store.
func Migrate(ctx context.Context, c redis.UniversalClient, opts *Options) (Migration, error) {
	k := keys{prefix: DefaultPrefix}
	if opts != nil && opts.Prefix != "" {
		k.prefix = opts.Prefix
	}
	var m Migration
	v, err := c.Get(ctx, k.layout()).Result()
	switch {
	case errors.Is(err, redis.Nil):
		return m, nil
	case err != nil:
		return m, fmt.Errorf("redisstore: migrate: reading the layout version: %w", err)
	}
	m.From, m.To = v, v
	switch v {
	case LayoutVersion:
		return m, nil
	case "1", "2":
	default:
		return m, fmt.Errorf("redisstore: migrate: %s holds layout version %q, which this build does not know (it reads %q)", k.layout(), v, LayoutVersion)
	}
	if err := refuseLiveSessions(ctx, c, k); err != nil {
		return m, err
	}
	if v == "1" {
		n, err := deleteIndexes(ctx, c, k)
		m.Deleted = n
		if err != nil {
			return m, fmt.Errorf("redisstore: migrate: %w", err)
		}
		if err := convertTotals(ctx, c, k); err != nil {
			return m, fmt.Errorf("redisstore: migrate: %w", err)
		}
		if err := c.Set(ctx, k.layout(), "2", 0).Err(); err != nil {
			return m, fmt.Errorf("redisstore: migrate: writing the layout version: %w", err)
		}
		m.To = "2"
	}
	n, err := convertJobs(ctx, c, k)
	m.Converted = n
	if err != nil {
		return m, fmt.Errorf("redisstore: migrate: %w", err)
	}
	if err := c.Set(ctx, k.layout(), LayoutVersion, 0).Err(); err != nil {
		return m, fmt.Errorf("redisstore: migrate: writing the layout version: %w", err)
	}
	m.To = LayoutVersion
	return m, nil
}

// refuseLiveSessions fails when a server's session lease in the store has
// not lapsed: a server of the earlier layout still running would go on
// writing records of that layout into the converted store.
func refuseLiveSessions(ctx context.Context, c redis.UniversalClient, k keys) error {
	now, err := c.Time(ctx).Result() // leases are on Redis's clock
	if err != nil {
		return fmt.Errorf("redisstore: migrate: reading Redis's clock: %w", err)
	}
	live, err := c.ZRangeByScore(ctx, k.sessions(), &redis.ZRangeBy{Min: fmt.Sprint(now.UnixMilli()), Max: "+inf"}).Result()
	if err != nil {
		return fmt.Errorf("redisstore: migrate: reading the sessions: %w", err)
	}
	if len(live) > 0 {
		return fmt.Errorf("%w: %d server session(s) are alive (%s); stop every hourglass using the store, wait for their leases to end, and run migrate again", ErrInUse, len(live), strings.Join(live, ", "))
	}
	return nil
}

// ErrInUse is Migrate's error for a store that a running server still uses.
var ErrInUse = errors.New("redisstore: migrate: the store is in use")

// convertChunk is how many fields of a tag's job hash one conversion call
// looks at: a bounded call, so that Redis goes on serving between them.
const convertChunk = 200

// convertJobs converts every tag's jobs from layout 2 to 3 (scripts/
// convert.lua), a chunk a call, and returns how many it converted.
// Converting a job twice is impossible (a converted value is left alone),
// so a migration that stopped half way converts the rest when run again.
func convertJobs(ctx context.Context, c redis.UniversalClient, k keys) (int, error) {
	var closed atomic.Bool
	r := newRunner(c, &closed)
	if err := r.load(ctx); err != nil {
		return 0, fmt.Errorf("loading the functions library: %w", err)
	}
	total := 0
	for tag := range NumTags {
		ks := k.tagKeys(tag)[:2]
		cursor := "0"
		for {
			v, err := r.run(ctx, call{op: scripts.convert, keys: ks, args: []any{"", cursor, convertChunk}})
			if err != nil {
				return total, fmt.Errorf("converting the jobs of tag %d: %w", tag, err)
			}
			rep := replyOf(scripts.convert)
			a := rep.arr(v, 2)
			cursor = rep.str(a[0])
			total += int(rep.int(a[1]))
			if err := rep.done(); err != nil {
				return total, err
			}
			if cursor == "0" {
				break
			}
		}
	}
	return total, nil
}

// deleteIndexes deletes layout 1's reservation indexes: on every master,
// the keys <prefix>{<tag>}:o:… and <prefix>{<tag>}:s:… of the store's tags.
func deleteIndexes(ctx context.Context, c redis.UniversalClient, k keys) (int, error) {
	tags := map[string]bool{}
	for _, t := range tagNames {
		tags[t] = true
	}
	// isIndex checks the whole shape, so no key of another family (whose
	// names a user chooses) is taken for one.
	isIndex := func(key string) bool {
		rest, ok := strings.CutPrefix(key, k.prefix+"{")
		if !ok {
			return false
		}
		tag, rest, ok := strings.Cut(rest, "}:")
		return ok && tags[tag] && (strings.HasPrefix(rest, "o:") || strings.HasPrefix(rest, "s:"))
	}
	var mu sync.Mutex
	n := 0
	scan := func(ctx context.Context, c redis.Cmdable) error {
		for _, kind := range []string{"o:", "s:"} {
			it := c.Scan(ctx, 0, escapeGlob(k.prefix)+"{*}:"+kind+"*", 1000).Iterator()
			for it.Next(ctx) {
				if key := it.Val(); isIndex(key) {
					if err := c.Del(ctx, key).Err(); err != nil {
						return err
					}
					mu.Lock()
					n++
					mu.Unlock()
				}
			}
			if err := it.Err(); err != nil {
				return err
			}
		}
		return nil
	}
	if cc, ok := c.(*redis.ClusterClient); ok {
		err := cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error { return scan(ctx, m) })
		return n, err
	}
	err := scan(ctx, c)
	return n, err
}

// escapeGlob escapes the characters SCAN's MATCH gives a meaning.
func escapeGlob(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// convertTotals turns each tag's seq (jobs ever put) into gone (jobs put in
// tubes that have since gone): seq less the totals of the tag's tubes. One
// transaction per tag, which drops seq, so a migration that stopped half
// way converts the rest when run again.
func convertTotals(ctx context.Context, c redis.UniversalClient, k keys) error {
	for tag := range NumTags {
		ks := k.tagKeys(tag)
		seq, err := c.HGet(ctx, ks[0], "seq").Int64()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			return fmt.Errorf("reading %s seq: %w", ks[0], err)
		}
		tubes, err := c.ZRange(ctx, ks[2], 0, -1).Result()
		if err != nil {
			return err
		}
		for _, t := range tubes {
			n, err := c.HGet(ctx, k.tubeKeys(tag, t)[0], "total").Int64()
			if err != nil && !errors.Is(err, redis.Nil) {
				return err
			}
			seq -= n
		}
		if _, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.HIncrBy(ctx, ks[0], "gone", max(seq, 0))
			p.HDel(ctx, ks[0], "seq")
			return nil
		}); err != nil {
			return fmt.Errorf("converting %s: %w", ks[0], err)
		}
	}
	return nil
}
