package main

import (
	"context"
	"strings"
	"testing"

	"github.com/hourglass-io/hourglass/internal/testkit/redistest"
	"github.com/redis/go-redis/v9"
)

// serve refuses a Redis store of layout 1 with an error naming hourglass
// migrate; migrate converts it (dropping layout 1's reservation indexes,
// keeping the jobs), says what it did, and does nothing the second time;
// serve then starts on it and hands out the job layout 1 had.
func TestMigrate(t *testing.T) {
	rs := redistest.Standalone(t)
	url := "redis://" + rs.Addr + "/0"
	c := redis.NewClient(&redis.Options{Addr: rs.Addr})
	defer c.Close()
	ctx := context.Background()
	// A layout 1 store as the earlier release wrote it: one ready job of
	// tube "emails" (tag 82, whose keys carry the hash tag {28}), and a
	// reservation index of an owner.
	// The record is msgpack: tube 1, pri 5, ready, delay 0, ttr 60000 ms, created.
	rec := "\x96\x01\x05\x01\x00\xcd\xea\x60\xcf\x00\x00\x01\x9f\x2a\x0e\x8c\x00" + "\xa5hello"
	idh := "0061866e400152" // an id of tag 82 (0x52)
	for _, cmd := range [][]any{
		{"SET", "hg:layout", "1"},
		{"HSET", "hg:{28}:j", idh, rec},
		{"HSET", "hg:{28}:m", "seq", "1", "tix", "1", "t:1", "emails"},
		{"ZADD", "hg:{28}:tubes", "1", "emails"},
		{"HSET", "hg:{28}:t:emails", "live", "1", "total", "1", "ix", "1"},
		{"ZADD", "hg:{28}:t:emails:r", "5", idh},
		{"ZADD", "hg:{28}:o:w1", "+inf", ""},
	} {
		if err := c.Do(ctx, cmd...).Err(); err != nil {
			t.Fatal(err)
		}
	}
	expect(t, nil, 1, []string{"serve", "--store", url, "--beanstalk-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0"}, "hourglass migrate")

	if out := ok(t, nil, "migrate", "--store", url); !strings.Contains(out, "converted layout 1 to 3 (1 jobs rewritten, 1 keys of layout 1 deleted)") {
		t.Errorf("migrate said %q", out)
	}
	if out := ok(t, nil, "migrate", "--store", url); !strings.Contains(out, "layout 3 already") {
		t.Errorf("migrate again said %q", out)
	}
	if n := c.Exists(ctx, "hg:{28}:o:w1").Val(); n != 0 {
		t.Errorf("layout 1's reservation index is still there")
	}
	a := startServe(t, nil, "--store", url)
	if got := kv(t, ok(t, a.env, "reserve", "--tube", "emails", "--timeout", "5s", "--delete")); got["body"] != "hello" {
		t.Errorf("reserve of the layout 1 job: %v", got)
	}
	expect(t, nil, 2, []string{"migrate"}, "needs --store")
	expect(t, nil, 1, []string{"migrate", "--store", "mem://"}, "migrate converts a Redis store")
}
