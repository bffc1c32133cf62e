package redisstore

import (
	"context"
	"embed"
	"strings"

	"github.com/redis/go-redis/v9"
)

//go:embed scripts/*.lua
var scriptFS embed.FS

// registry holds every script by name, for loading them all at start and
// for the test that loads each by name. Each primitive registers its own
// scripts through script or scriptWith.
var registry = map[string]*redis.Script{}

// sources holds the assembled source of every script, by name.
var sources = map[string]string{}

// script loads scripts/<name>.lua with lib.lua (the job queue's helpers)
// inserted after its shebang line.
func script(name string) *redis.Script { return scriptWith(name, "lib") }

// scriptWith loads scripts/<name>.lua with the named library files
// (scripts/<lib>.lua, in order) inserted after its shebang line, and
// registers it. A script of another primitive names its own library, or
// none.
func scriptWith(name string, libs ...string) *redis.Script {
	if _, dup := registry[name]; dup {
		panic("redisstore: script " + name + " registered twice")
	}
	src, err := scriptFS.ReadFile("scripts/" + name + ".lua")
	if err != nil {
		panic(err)
	}
	s := string(src)
	nl := strings.IndexByte(s, '\n')
	var b strings.Builder
	b.WriteString(s[:nl+1])
	for _, l := range libs {
		lib, err := scriptFS.ReadFile("scripts/" + l + ".lua")
		if err != nil {
			panic(err)
		}
		b.Write(lib)
	}
	b.WriteString(s[nl+1:])
	full := b.String()
	sources[name] = full
	sc := redis.NewScript(full)
	registry[name] = sc
	return sc
}

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

// allScripts lists every registered script, by name.
func allScripts() map[string]*redis.Script { return registry }

// loadScripts loads every script on every master, so that EVALSHA in a
// pipeline finds them.
func loadScripts(ctx context.Context, c redis.UniversalClient) error {
	load := func(ctx context.Context, c redis.UniversalClient) error {
		for _, s := range allScripts() {
			if err := s.Load(ctx, c).Err(); err != nil {
				return err
			}
		}
		return nil
	}
	if cc, ok := c.(*redis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error { return load(ctx, c) })
	}
	return load(ctx, c)
}
