package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hourglass-io/hourglass"
	"github.com/hourglass-io/hourglass/memstore"
	"github.com/hourglass-io/hourglass/server/httpapi"
)

// storeFacts returns what the dashboard's store view shows of b: on Redis
// its version, memory and clients (INFO, of each master of a Cluster); on
// the embedded engine its log's size and last snapshot.
func storeFacts(b *hourglass.Backend) func(ctx context.Context) ([]httpapi.StoreFact, error) {
	if b.Redis != nil {
		return func(ctx context.Context) ([]httpapi.StoreFact, error) { return redisFacts(ctx, b.Redis) }
	}
	if s, ok := b.Queue.(*memstore.Store); ok {
		return func(context.Context) ([]httpapi.StoreFact, error) { return engineFacts(s.LogStats()), nil }
	}
	return nil
}

// infoFacts are the INFO fields shown, with their names for people.
var infoFacts = []struct{ field, name string }{
	{"redis_version", "Redis version"},
	{"redis_mode", "mode"},
	{"used_memory_human", "memory used"},
	{"used_memory_peak_human", "memory peak"},
	{"maxmemory_human", "maxmemory"},
	{"maxmemory_policy", "maxmemory policy"},
	{"connected_clients", "clients"},
	{"blocked_clients", "blocked clients"},
	{"uptime_in_seconds", "up"},
}

func redisFacts(ctx context.Context, c redis.UniversalClient) ([]httpapi.StoreFact, error) {
	cc, ok := c.(*redis.ClusterClient)
	if !ok {
		info, err := c.Info(ctx, "server", "memory", "clients").Result()
		if err != nil {
			return nil, err
		}
		return parseInfo(info, ""), nil
	}
	var (
		mu  sync.Mutex
		out []httpapi.StoreFact
	)
	err := cc.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
		info, err := n.Info(ctx, "server", "memory", "clients").Result()
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		out = append(out, parseInfo(info, n.Options().Addr+" ")...)
		return nil
	})
	slices.SortStableFunc(out, func(a, b httpapi.StoreFact) int { return strings.Compare(a.Name, b.Name) })
	return out, err
}

// parseInfo picks the fields of infoFacts out of an INFO reply, each name
// prefixed with prefix (a Cluster node's address).
func parseInfo(info, prefix string) []httpapi.StoreFact {
	vals := map[string]string{}
	for _, line := range strings.Split(info, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			vals[k] = v
		}
	}
	var out []httpapi.StoreFact
	for _, f := range infoFacts {
		v, ok := vals[f.field]
		if !ok {
			continue
		}
		switch f.field {
		case "uptime_in_seconds":
			if n, err := strconv.ParseInt(v, 10, 64); err == nil {
				v = (time.Duration(n) * time.Second).String()
			}
		case "maxmemory_human":
			if vals["maxmemory"] == "0" {
				v = "none (no cap)"
			}
		}
		out = append(out, httpapi.StoreFact{Name: prefix + f.name, Value: v})
	}
	return out
}

func engineFacts(ls memstore.LogStats) []httpapi.StoreFact {
	if ls.Dir == "" {
		return []httpapi.StoreFact{{Name: "engine", Value: "embedded, in memory: nothing survives a restart"}}
	}
	snap := "none yet"
	if !ls.LastSnapshot.IsZero() {
		snap = ls.LastSnapshot.UTC().Format("2006-01-02 15:04:05 UTC")
	}
	return []httpapi.StoreFact{
		{Name: "engine", Value: "embedded, with a log"},
		{Name: "directory", Value: ls.Dir},
		{Name: "log since the last snapshot", Value: mib(ls.Bytes)},
		{Name: "live data", Value: mib(ls.LiveBytes) + " (a snapshot is written when the log passes twice this)"},
		{Name: "last snapshot", Value: snap},
	}
}

func mib(n int64) string {
	if n < 1<<20 {
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}
