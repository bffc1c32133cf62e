package hourglass

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/hourglass-io/hourglass/redisstore"
)

// Migrate converts the Redis store a redis:// URL names (see Open) to the
// key layout this build reads, in place, keeping every job with its state,
// history and counters (redisstore.Migrate). Stop every process using the
// store first. A store already in this layout, or a Redis without one, is
// left as it is. The embedded engine has nothing to migrate.
func Migrate(ctx context.Context, rawURL string, opts *Options) (redisstore.Migration, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	scheme, rest, ok := strings.Cut(rawURL, "://")
	if !ok || !strings.HasPrefix(scheme, "redis") {
		return redisstore.Migration{}, fmt.Errorf("%w: %q: migrate converts a Redis store (redis://, rediss://, redis+sentinel://, redis+cluster://)", ErrUnsupportedURL, rawURL)
	}
	c, err := redisClient(scheme, rest, rawURL)
	if err != nil {
		return redisstore.Migration{}, err
	}
	m, err := redisstore.Migrate(ctx, c, &redisstore.Options{Prefix: o.Prefix})
	return m, errors.Join(err, c.Close())
}
