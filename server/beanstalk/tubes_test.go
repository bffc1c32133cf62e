package beanstalk_test

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	gobeanstalk "github.com/beanstalkd/go-beanstalk"
	"github.com/hourglass-io/hourglass/internal/testkit/backendtest"
	"github.com/hourglass-io/hourglass/internal/testkit/redistest"
	"github.com/hourglass-io/hourglass/redisstore"
	"github.com/hourglass-io/hourglass/server/beanstalk"
	"github.com/redis/go-redis/v9"
)

// TestSharedTubeLifetime: servers sharing one Redis each open their own
// store on it, as separate processes do. A tube watched through server A
// keeps its counters for a client of server B after its last job is
// deleted; when A dies (it loses Redis and stops renewing its session), B
// lets go of A's references once A's lease lapses, and the tube is gone.
func TestSharedTubeLifetime(t *testing.T) {
	for _, kind := range []string{"standalone", "cluster"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			prefix := redistest.Prefix(t)
			open := func() (*redisstore.Store, redis.UniversalClient) {
				var c redis.UniversalClient
				if kind == "cluster" {
					c = redistest.ClusterClient(t)
				} else {
					c = redistest.StandaloneClient(t)
				}
				return backendtest.Open(t, c, &redisstore.Options{Prefix: prefix}), c
			}
			lease := func(s *beanstalk.Server) { s.SessionLease = 300 * time.Millisecond }
			storeA, clientA := open()
			storeB, _ := open()
			_, addrA := startServer(t, storeA, lease)
			_, addrB := startServer(t, storeB, lease)

			a := dial(t, addrA)
			a.expect("watch shared", "WATCHING 2\r\n")
			b := dial(t, addrB)
			b.expect("use shared", "USING shared\r\n")
			id := b.put(60, "x")
			b.expect("delete "+id, "DELETED\r\n")
			b.expect("use default", "USING default\r\n")

			st := b.do("stats-tube shared")
			for k, want := range map[string]string{"total-jobs": "1", "cmd-delete": "1", "current-using": "0"} {
				if got := field(t, st, k); got != want {
					t.Errorf("stats-tube through B, the tube watched through A: %s = %s, want %s", k, got, want)
				}
			}
			b.expect("pause-tube shared 0", "PAUSED\r\n")
			if got := field(t, b.do("stats-tube shared"), "cmd-pause-tube"); got != "1" {
				t.Errorf("cmd-pause-tube = %s, want 1", got)
			}

			// A dies: it can no longer reach Redis, so its session lapses.
			clientA.Close()
			deadline := time.Now().Add(10 * time.Second)
			for {
				r := b.do("stats-tube shared")
				if r == "NOT_FOUND\r\n" {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the tube only the dead server's connection watched still lives: %q", r)
				}
				b.expect("list-tube-used", "USING default\r\n") // a round trip between looks
			}
			b.expect("pause-tube shared 0", "NOT_FOUND\r\n")
			// default lives on, held by B.
			if got := field(t, b.do("stats-tube default"), "name"); got != "default" {
				t.Errorf("stats-tube default: name %s", got)
			}
		})
	}
}

// TestClientLibraryTubeCounters: with a real beanstalkd client, thousands
// of jobs put into and deleted from a tube the client uses are all counted
// in stats-tube, though the tube holds no job between them; once the
// client lets go of the tube it is gone.
func TestClientLibraryTubeCounters(t *testing.T) {
	const n = 3000
	forEachBackend(t, func(t *testing.T, b backend) {
		_, addr := startServer(t, b.Open(t), nil)
		c, err := gobeanstalk.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		tube := gobeanstalk.NewTube(c, "counted")
		for i := range n {
			id, err := tube.Put([]byte(strconv.Itoa(i)), 0, 0, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Delete(id); err != nil {
				t.Fatal(err)
			}
		}
		st, err := tube.Stats()
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{"total-jobs": fmt.Sprint(n), "cmd-delete": fmt.Sprint(n), "current-jobs-ready": "0", "current-using": "1"}
		for k, v := range want {
			if st[k] != v {
				t.Errorf("stats-tube counted: %s = %q, want %q", k, st[k], v)
			}
		}
		// Using another tube lets go of this one.
		if _, err := gobeanstalk.NewTube(c, "other").Put([]byte("y"), 0, 0, time.Minute); err != nil {
			t.Fatal(err)
		}
		if st, err := tube.Stats(); err == nil {
			t.Errorf("stats-tube of a tube nobody uses: %v, want NOT_FOUND", st)
		}
	})
}
