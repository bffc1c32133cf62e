package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisServer is one redis-server process that this program started on a
// loopback port. stop ends it by its PID.
type redisServer struct {
	Addr string
	port int
	dir  string
	cmd  *exec.Cmd
	done chan struct{}
	once sync.Once
}

// startRedis starts a throwaway redis-server on a free loopback port (never
// 6379) without persistence and waits until it answers PING with its own PID.
// cluster starts it with --cluster-enabled yes.
func startRedis(bin string, cluster bool) (*redisServer, error) {
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		s, err := startRedisOnce(bin, cluster)
		if err == nil {
			return s, nil
		}
		lastErr = err
	}
	return nil, lastErr
}

func startRedisOnce(bin string, cluster bool) (*redisServer, error) {
	port, err := freePort(cluster)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "queuebench-redis-")
	if err != nil {
		return nil, err
	}
	args := []string{
		"--port", strconv.Itoa(port),
		"--bind", "127.0.0.1",
		"--save", "",
		"--appendonly", "no",
		"--dir", dir,
		"--daemonize", "no",
		"--logfile", filepath.Join(dir, "redis.log"),
	}
	if cluster {
		args = append(args,
			"--cluster-enabled", "yes",
			"--cluster-config-file", filepath.Join(dir, "nodes.conf"),
			"--cluster-node-timeout", "5000",
		)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	// Own process group (a terminal ^C reaches us first, so we can clean
	// up), and SIGKILL if this program dies without stopping it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	s := &redisServer{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), port: port, dir: dir, cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(s.done)
	}()
	if err := s.waitReady(10 * time.Second); err != nil {
		s.stop()
		return nil, err
	}
	started.Lock()
	started.servers = append(started.servers, s)
	started.Unlock()
	return s, nil
}

// started lists every server this program started, for stopAllServers.
var started struct {
	sync.Mutex
	servers []*redisServer
}

// stopAllServers stops every server this program started (each by its PID).
func stopAllServers() {
	started.Lock()
	ss := started.servers
	started.Unlock()
	var wg sync.WaitGroup
	for _, s := range ss {
		wg.Go(s.stop)
	}
	wg.Wait()
}

func (s *redisServer) waitReady(timeout time.Duration) error {
	c := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1, DialTimeout: time.Second})
	defer c.Close()
	deadline := time.Now().Add(timeout)
	for {
		select {
		case <-s.done:
			log, _ := os.ReadFile(filepath.Join(s.dir, "redis.log"))
			return fmt.Errorf("redis-server on %s exited during start-up:\n%s", s.Addr, tail(string(log), 20))
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := c.Ping(ctx).Err()
		var info string
		if err == nil {
			info, err = c.Info(ctx, "server").Result()
		}
		cancel()
		if err == nil {
			if pid := infoField(info, "process_id"); pid != strconv.Itoa(s.cmd.Process.Pid) {
				return fmt.Errorf("port %d answered by another process (pid %s)", s.port, pid)
			}
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redis-server on %s not ready after %v: %v", s.Addr, timeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop sends SIGTERM to the server's PID, then SIGKILL after 3 s, waits for
// it to exit and removes its directory.
func (s *redisServer) stop() {
	s.once.Do(func() {
		select {
		case <-s.done:
		default:
			_ = s.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-s.done:
			case <-time.After(3 * time.Second):
				_ = s.cmd.Process.Kill()
				<-s.done
			}
		}
		_ = os.RemoveAll(s.dir)
	})
}

// freePort returns a loopback port that was free a moment ago, never 6379;
// with bus, port+10000 (the cluster bus) was free too.
func freePort(bus bool) (int, error) {
	for i := 0; i < 100; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		if port == 6379 || (bus && (port+10000 > 65535 || port+10000 == 6379)) {
			_ = l.Close()
			continue
		}
		if bus {
			b, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port+10000)))
			if err != nil {
				_ = l.Close()
				continue
			}
			_ = b.Close()
		}
		_ = l.Close()
		return port, nil
	}
	return 0, errors.New("no free loopback port found")
}

// redisCluster is a cluster of masters started by this program.
type redisCluster struct {
	nodes []*redisServer
}

func (c *redisCluster) addrs() []string {
	a := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		a[i] = n.Addr
	}
	return a
}

func (c *redisCluster) stop() {
	var wg sync.WaitGroup
	for _, n := range c.nodes {
		wg.Go(n.stop)
	}
	wg.Wait()
}

// startCluster starts n cluster-enabled servers, joins them with
// redis-cli --cluster create and waits for cluster_state:ok on every node.
func startCluster(serverBin, cliBin string, n int) (*redisCluster, error) {
	c := &redisCluster{}
	for i := 0; i < n; i++ {
		s, err := startRedis(serverBin, true)
		if err != nil {
			c.stop()
			return nil, err
		}
		c.nodes = append(c.nodes, s)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	args := append([]string{"--cluster", "create"}, c.addrs()...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.CommandContext(ctx, cliBin, args...).CombinedOutput(); err != nil {
		c.stop()
		return nil, fmt.Errorf("redis-cli --cluster create: %v\n%s", err, out)
	}
	for {
		ok := true
		for _, s := range c.nodes {
			cl := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1})
			info, err := cl.ClusterInfo(ctx).Result()
			_ = cl.Close()
			if err != nil || infoField(info, "cluster_state") != "ok" ||
				infoField(info, "cluster_known_nodes") != strconv.Itoa(n) ||
				infoField(info, "cluster_slots_assigned") != "16384" {
				ok = false
				break
			}
		}
		if ok {
			return c, nil
		}
		if ctx.Err() != nil {
			c.stop()
			return nil, errors.New("cluster not ready within 60 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// infoField reads one "name:value" line of an INFO reply.
func infoField(info, name string) string {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimRight(line, "\r"), name+":"); ok {
			return v
		}
	}
	return ""
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// usedMemory returns INFO memory used_memory of one server.
func usedMemory(ctx context.Context, c *redis.Client) (int64, error) {
	info, err := c.Info(ctx, "memory").Result()
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(infoField(info, "used_memory"), 10, 64)
}
