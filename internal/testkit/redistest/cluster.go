package redistest

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"
)

// clusterTimeout bounds assembling a cluster and waiting for it to converge.
const clusterTimeout = 30 * time.Second

// Cluster is a Redis Cluster of redis-server processes started by this
// package. Masters and Replicas reflect the roles the nodes had when the
// cluster became ready; they are not updated after a failover.
type Cluster struct {
	// Masters are the nodes that serve slots.
	Masters []*Server
	// Replicas are the replica nodes, if any were requested.
	Replicas []*Server

	nodes    []*Server // all nodes, in start order
	stopOnce sync.Once
}

// Addrs returns the addresses of all nodes, masters and replicas.
func (c *Cluster) Addrs() []string { return addrsOf(c.nodes) }

// addrsOf returns the addresses of servers, in their order.
func addrsOf(servers []*Server) []string {
	addrs := make([]string, len(servers))
	for i, n := range servers {
		addrs[i] = n.Addr
	}
	return addrs
}

// Stop stops every node of the cluster and waits for them to exit. It is
// idempotent.
func (c *Cluster) Stop() {
	c.stopOnce.Do(func() { stopAll(c.nodes) })
}

// NewCluster starts a cluster like StartCluster and registers a t.Cleanup
// that stops it. Start-up failures fail the test.
func NewCluster(t testing.TB, masters, replicasPerMaster int) *Cluster {
	t.Helper()
	c, err := StartCluster(masters, replicasPerMaster)
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("redistest: cluster node logs:\n%s", logTails(c.nodes, 10))
		}
		c.Stop()
	})
	return c
}

// StartCluster starts masters*(1+replicasPerMaster) cluster-enabled
// redis-server processes (cluster-node-timeout 2000 ms), assembles them with
// redis-cli --cluster create --cluster-replicas replicasPerMaster, and waits
// until every node reports cluster_state:ok, all 16384 slots assigned and
// all nodes known, and every master has its replicas attached. masters must
// be at least 3. The caller must call Stop on the returned Cluster.
func StartCluster(masters, replicasPerMaster int) (*Cluster, error) {
	if masters < 3 {
		return nil, fmt.Errorf("redistest: a Redis Cluster needs at least 3 masters, got %d", masters)
	}
	if replicasPerMaster < 0 {
		return nil, fmt.Errorf("redistest: negative replicasPerMaster %d", replicasPerMaster)
	}
	cli, err := cliBinary()
	if err != nil {
		return nil, err
	}
	if _, err := serverBinary(); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(clusterTimeout)

	nodes, err := startAll(masters*(1+replicasPerMaster), startOpts{cluster: true})
	if err != nil {
		return nil, err
	}
	c := &Cluster{nodes: nodes}

	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	args := append([]string{"--cluster", "create"}, c.Addrs()...)
	args = append(args, "--cluster-replicas", strconv.Itoa(replicasPerMaster), "--cluster-yes")
	out, err := exec.CommandContext(ctx, cli, args...).CombinedOutput()
	if err != nil {
		c.Stop()
		return nil, fmt.Errorf("redistest: redis-cli --cluster create failed: %v\n%s", err, out)
	}

	if err := c.waitReady(masters, replicasPerMaster, deadline); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

// waitReady polls all nodes until the cluster has converged or the deadline
// passes, then fills in Masters and Replicas.
func (c *Cluster) waitReady(masters, replicasPerMaster int, deadline time.Time) error {
	for {
		if err := exitedError(c.nodes); err != nil {
			return err
		}
		ms, rs, err := c.check(masters, replicasPerMaster)
		if err == nil {
			c.Masters, c.Replicas = ms, rs
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redistest: cluster %v not ready within %v: %w", c.Addrs(), clusterTimeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// check reports why the cluster is not ready yet, or returns the nodes
// split by role.
func (c *Cluster) check(masters, replicasPerMaster int) (ms, rs []*Server, err error) {
	total := strconv.Itoa(len(c.nodes))
	for _, n := range c.nodes {
		text, err := doString(n.Addr, "CLUSTER", "INFO")
		if err != nil {
			return nil, nil, fmt.Errorf("%s: CLUSTER INFO: %w", n.Addr, err)
		}
		info := infoFields(text)
		if st := info["cluster_state"]; st != "ok" {
			return nil, nil, fmt.Errorf("%s: cluster_state:%s", n.Addr, st)
		}
		if sa := info["cluster_slots_assigned"]; sa != "16384" {
			return nil, nil, fmt.Errorf("%s: cluster_slots_assigned:%s, want 16384", n.Addr, sa)
		}
		if kn := info["cluster_known_nodes"]; kn != total {
			return nil, nil, fmt.Errorf("%s: cluster_known_nodes:%s, want %s", n.Addr, kn, total)
		}

		role, err := doArray(n.Addr, "ROLE")
		if err != nil {
			return nil, nil, fmt.Errorf("%s: ROLE: %w", n.Addr, err)
		}
		if len(role) == 0 {
			return nil, nil, fmt.Errorf("%s: empty ROLE reply", n.Addr)
		}
		switch role[0] {
		case "master":
			// ["master", offset, [[ip, port, offset], ...]]
			var attached []any
			if len(role) >= 3 {
				attached, _ = role[2].([]any)
			}
			if len(attached) < replicasPerMaster {
				return nil, nil, fmt.Errorf("%s: master has %d replicas attached, want %d", n.Addr, len(attached), replicasPerMaster)
			}
			ms = append(ms, n)
		case "slave":
			// ["slave", master ip, master port, state, offset]
			if len(role) < 4 || role[3] != "connected" {
				return nil, nil, fmt.Errorf("%s: replica not connected to its master: %v", n.Addr, role)
			}
			rs = append(rs, n)
		default:
			return nil, nil, fmt.Errorf("%s: unexpected role %v", n.Addr, role[0])
		}
	}
	if len(ms) != masters || len(rs) != masters*replicasPerMaster {
		return nil, nil, fmt.Errorf("cluster has %d masters and %d replicas, want %d and %d",
			len(ms), len(rs), masters, masters*replicasPerMaster)
	}
	return ms, rs, nil
}
