package redisstore

import (
	"context"
	"embed"
	"strings"

	"github.com/redis/go-redis/v9"
)

//go:embed scripts/*.lua
var scriptFS embed.FS

// script loads scripts/<name>.lua with lib.lua inserted after its shebang line.
func script(name string) *redis.Script {
	src, err := scriptFS.ReadFile("scripts/" + name + ".lua")
	if err != nil {
		panic(err)
	}
	lib, err := scriptFS.ReadFile("scripts/lib.lua")
	if err != nil {
		panic(err)
	}
	s := string(src)
	nl := strings.IndexByte(s, '\n')
	full := s[:nl+1] + string(lib) + s[nl+1:]
	sources[name] = full
	return redis.NewScript(full)
}

// sources holds the assembled source of every script, by name.
var sources = map[string]string{}

var scripts = struct {
	put, reserve, delete, locate, release, bury, touch, unreserve, reserveJob,
	kickJob, kick, peek, peekState, statsTube, pause, check, keepAlive, lapsed, reap *redis.Script
}{
	put: script("put"), reserve: script("reserve"), delete: script("delete"), locate: script("locate"),
	release: script("release"), bury: script("bury"), touch: script("touch"), unreserve: script("unreserve"),
	reserveJob: script("reservejob"), kickJob: script("kickjob"), kick: script("kick"), peek: script("peek"),
	peekState: script("peekstate"), statsTube: script("statstube"), pause: script("pause"), check: script("check"),
	keepAlive: script("keepalive"), lapsed: script("lapsed"), reap: script("reap"),
}

// allScripts lists every script, for loading them at start and for the test
// that loads each by name.
func allScripts() map[string]*redis.Script {
	return map[string]*redis.Script{
		"put": scripts.put, "reserve": scripts.reserve, "delete": scripts.delete, "locate": scripts.locate,
		"release": scripts.release, "bury": scripts.bury, "touch": scripts.touch, "unreserve": scripts.unreserve,
		"reservejob": scripts.reserveJob, "kickjob": scripts.kickJob, "kick": scripts.kick, "peek": scripts.peek,
		"peekstate": scripts.peekState, "statstube": scripts.statsTube, "pause": scripts.pause, "check": scripts.check,
		"keepalive": scripts.keepAlive, "lapsed": scripts.lapsed, "reap": scripts.reap,
	}
}

// loadScripts loads every script on every master, so that EVALSHA in a
// pipeline finds them.
func loadScripts(ctx context.Context, c redis.UniversalClient) error {
	load := func(ctx context.Context, c *redis.Client) error {
		for _, s := range allScripts() {
			if err := s.Load(ctx, c).Err(); err != nil {
				return err
			}
		}
		return nil
	}
	if cc, ok := c.(*redis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, load)
	}
	for _, s := range allScripts() {
		if err := s.Load(ctx, c).Err(); err != nil {
			return err
		}
	}
	return nil
}
