package redistest_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hourglass-io/hourglass/internal/testkit/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return c
}

func TestStandalone(t *testing.T) {
	t.Parallel()
	s := redistest.Standalone(t, "--maxmemory", "10mb")
	if !strings.HasPrefix(s.Addr, "127.0.0.1:") || strings.HasSuffix(s.Addr, ":6379") {
		t.Fatalf("Addr = %q, want a 127.0.0.1 address other than :6379", s.Addr)
	}
	if s.Pid() <= 0 {
		t.Fatalf("Pid() = %d", s.Pid())
	}

	c := redis.NewClient(&redis.Options{Addr: s.Addr})
	defer c.Close()
	ctx := ctx(t)
	key := redistest.Prefix(t) + "k"
	if err := c.Set(ctx, key, "v", 0).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	if got, err := c.Get(ctx, key).Result(); err != nil || got != "v" {
		t.Fatalf("GET = %q, %v; want \"v\"", got, err)
	}

	want := map[string]string{"save": "", "appendonly": "no", "maxmemory": "10485760"}
	for name, w := range want {
		got, err := c.ConfigGet(ctx, name).Result()
		if err != nil {
			t.Fatalf("CONFIG GET %s: %v", name, err)
		}
		if got[name] != w {
			t.Errorf("CONFIG GET %s = %q, want %q", name, got[name], w)
		}
	}
	if got, err := c.ConfigGet(ctx, "bind").Result(); err != nil || got["bind"] != "127.0.0.1" {
		t.Errorf("CONFIG GET bind = %q, %v; want 127.0.0.1", got["bind"], err)
	}
}

func TestStop(t *testing.T) {
	t.Parallel()
	s, err := redistest.StartStandalone()
	if err != nil {
		t.Fatal(err)
	}
	pid := s.Pid()
	s.Stop()
	s.Stop() // idempotent

	if conn, err := net.DialTimeout("tcp", s.Addr, time.Second); err == nil {
		conn.Close()
		t.Fatalf("%s still accepts connections after Stop", s.Addr)
	}
	if p, err := os.FindProcess(pid); err == nil {
		if err := p.Signal(syscall.Signal(0)); err == nil {
			t.Fatalf("process %d still running after Stop", pid)
		}
	}
}

func TestCluster(t *testing.T) {
	t.Parallel()
	cl := redistest.NewCluster(t, 3, 0)
	if len(cl.Masters) != 3 || len(cl.Replicas) != 0 || len(cl.Addrs()) != 3 {
		t.Fatalf("got %d masters, %d replicas, %d addrs; want 3, 0, 3", len(cl.Masters), len(cl.Replicas), len(cl.Addrs()))
	}
	ctx := ctx(t)
	for _, addr := range cl.Addrs() {
		c := redis.NewClient(&redis.Options{Addr: addr})
		info, err := c.ClusterInfo(ctx).Result()
		c.Close()
		if err != nil {
			t.Fatalf("%s: CLUSTER INFO: %v", addr, err)
		}
		if !strings.Contains(info, "cluster_state:ok") {
			t.Fatalf("%s: CLUSTER INFO:\n%s", addr, info)
		}
	}
	checkClusterWrites(t, cl)
}

func TestClusterWithReplicas(t *testing.T) {
	t.Parallel()
	cl := redistest.NewCluster(t, 3, 1)
	if len(cl.Masters) != 3 || len(cl.Replicas) != 3 || len(cl.Addrs()) != 6 {
		t.Fatalf("got %d masters, %d replicas, %d addrs; want 3, 3, 6", len(cl.Masters), len(cl.Replicas), len(cl.Addrs()))
	}
	ctx := ctx(t)
	for _, r := range cl.Replicas {
		c := redis.NewClient(&redis.Options{Addr: r.Addr})
		info, err := c.Info(ctx, "replication").Result()
		c.Close()
		if err != nil {
			t.Fatalf("%s: INFO replication: %v", r.Addr, err)
		}
		if !strings.Contains(info, "role:slave") || !strings.Contains(info, "master_link_status:up") {
			t.Fatalf("%s: INFO replication:\n%s", r.Addr, info)
		}
	}
	checkClusterWrites(t, cl)
}

// checkClusterWrites writes keys through a cluster client and checks they
// were spread over every master.
func checkClusterWrites(t *testing.T, cl *redistest.Cluster) {
	t.Helper()
	ctx := ctx(t)
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs()})
	defer c.Close()
	prefix := redistest.Prefix(t)
	for i := range 100 {
		key := fmt.Sprintf("%sk%d", prefix, i)
		if err := c.Set(ctx, key, i, 0).Err(); err != nil {
			t.Fatalf("SET %s: %v", key, err)
		}
		if got, err := c.Get(ctx, key).Int(); err != nil || got != i {
			t.Fatalf("GET %s = %d, %v; want %d", key, got, err, i)
		}
	}
	for _, m := range cl.Masters {
		mc := redis.NewClient(&redis.Options{Addr: m.Addr})
		n, err := mc.DBSize(ctx).Result()
		mc.Close()
		if err != nil {
			t.Fatalf("%s: DBSIZE: %v", m.Addr, err)
		}
		if n == 0 {
			t.Errorf("master %s holds no keys; writes were not spread over the slots", m.Addr)
		}
	}
}

func TestSentinel(t *testing.T) {
	t.Parallel()
	s := redistest.NewSentinel(t)
	if s.MasterName != "mymaster" || len(s.SentinelAddrs()) != 3 {
		t.Fatalf("MasterName = %q, %d sentinels; want mymaster, 3", s.MasterName, len(s.SentinelAddrs()))
	}
	ctx := ctx(t)
	for _, addr := range s.SentinelAddrs() {
		sc := redis.NewSentinelClient(&redis.Options{Addr: addr})
		got, err := sc.GetMasterAddrByName(ctx, s.MasterName).Result()
		sc.Close()
		if err != nil {
			t.Fatalf("sentinel %s: get-master-addr-by-name: %v", addr, err)
		}
		if a := net.JoinHostPort(got[0], got[1]); a != s.Master.Addr {
			t.Fatalf("sentinel %s reports master %s, want %s", addr, a, s.Master.Addr)
		}
	}

	c := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: s.MasterName, SentinelAddrs: s.SentinelAddrs()})
	defer c.Close()
	key := redistest.Prefix(t) + "k"
	if err := c.Set(ctx, key, "v", 0).Err(); err != nil {
		t.Fatalf("SET via sentinel: %v", err)
	}
	if got, err := c.Get(ctx, key).Result(); err != nil || got != "v" {
		t.Fatalf("GET via sentinel = %q, %v; want \"v\"", got, err)
	}
}

func TestShared(t *testing.T) {
	t.Parallel()
	s1, err := redistest.SharedStandalone()
	if err != nil {
		t.Fatal(err)
	}
	s2, err := redistest.SharedStandalone()
	if err != nil || s2 != s1 {
		t.Fatalf("second SharedStandalone = %p, %v; want %p", s2, err, s1)
	}
	c1, err := redistest.SharedCluster()
	if err != nil {
		t.Fatal(err)
	}
	if c2, err := redistest.SharedCluster(); err != nil || c2 != c1 {
		t.Fatalf("second SharedCluster = %p, %v; want %p", c2, err, c1)
	}

	ctx := ctx(t)
	c := redis.NewClient(&redis.Options{Addr: s1.Addr})
	defer c.Close()
	if err := c.Set(ctx, redistest.Prefix(t)+"k", "v", 0).Err(); err != nil {
		t.Fatalf("SET on shared standalone: %v", err)
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c1.Addrs()})
	defer cc.Close()
	if err := cc.Set(ctx, redistest.Prefix(t)+"k", "v", 0).Err(); err != nil {
		t.Fatalf("SET on shared cluster: %v", err)
	}
}

func TestPrefix(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for range 10 {
		p := redistest.Prefix(t)
		if seen[p] {
			t.Fatalf("Prefix returned %q twice", p)
		}
		seen[p] = true
	}
	t.Run("sub test/with {odd} chars", func(t *testing.T) {
		p := redistest.Prefix(t)
		if strings.ContainsAny(p, " {}/") || !strings.HasPrefix(p, "TestPrefix_sub_test_with__odd__chars.") || !strings.HasSuffix(p, ":") {
			t.Fatalf("Prefix = %q", p)
		}
	})
}

func TestStartClusterTooFewMasters(t *testing.T) {
	t.Parallel()
	if c, err := redistest.StartCluster(2, 0); err == nil {
		c.Stop()
		t.Fatal("StartCluster(2, 0) succeeded, want an error")
	}
}

func TestAddrsDistinct(t *testing.T) {
	t.Parallel()
	a := redistest.Standalone(t)
	b := redistest.Standalone(t)
	if a.Addr == b.Addr || a.Pid() == b.Pid() {
		t.Fatalf("two servers share %s / pid %d", a.Addr, a.Pid())
	}
	if slices.Contains([]string{a.Addr, b.Addr}, "127.0.0.1:6379") {
		t.Fatal("server on the default port 6379")
	}
}
