package redisstore_test

import (
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/internal/testkit/redistest"
	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/redisstore"
	"github.com/redis/go-redis/v9"
)

// With Options.Replicas, the queue's changes wait for the replicas: they
// succeed while the replica follows, fail with queue.ErrNotReplicated
// while it is stalled (SIGSTOP), and succeed again once it is back; reads
// never wait, and a store without the option does not notice the stall.
func TestQueueReplicas(t *testing.T) {
	sen := redistest.NewSentinel(t)
	c := redis.NewClient(&redis.Options{Addr: sen.Master.Addr, MaxRetries: -1})
	defer c.Close()
	waiting := newStore(t, c, &redisstore.Options{Replicas: 1, ReplicaTimeout: 200 * time.Millisecond})
	plain := newStore(t, c, nil)
	q, err := queue.New(waiting, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	qp, err := queue.New(plain, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer qp.Close()
	ctx := t.Context()

	cycle := func() error {
		if _, err := q.Put(ctx, "r", queue.NewJob{Body: []byte("x")}); err != nil {
			return fmt.Errorf("put: %w", err)
		}
		j, err := q.Reserve(ctx, queue.ReserveOptions{Tubes: []string{"r"}, Timeout: -1})
		if err != nil {
			return fmt.Errorf("reserve: %w", err)
		}
		if err := q.Delete(ctx, j.ID); err != nil {
			return fmt.Errorf("delete: %w", err)
		}
		return nil
	}
	if err := cycle(); err != nil {
		t.Fatalf("with the replica following: %v", err)
	}

	pid := sen.Replica.Pid()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stalled := true
	defer func() {
		if stalled {
			_ = syscall.Kill(pid, syscall.SIGCONT)
		}
	}()
	start := time.Now()
	_, err = q.Put(ctx, "r", queue.NewJob{Body: []byte("y")})
	if !errors.Is(err, queue.ErrNotReplicated) {
		t.Fatalf("put with the replica stalled: %v, want ErrNotReplicated", err)
	}
	if took := time.Since(start); took < 200*time.Millisecond {
		t.Errorf("the put failed after %v, before its ReplicaTimeout", took)
	}
	if _, err := q.StatsTube(ctx, "r"); err != nil {
		t.Errorf("a read waited for the replica: %v", err)
	}
	if _, err := qp.Put(ctx, "r", queue.NewJob{Body: []byte("z")}); err != nil {
		t.Errorf("a store without Replicas noticed the stall: %v", err)
	}
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	stalled = false
	// The replica catches up, then changes are acknowledged again.
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, err := q.Put(ctx, "back", queue.NewJob{Body: []byte("w")})
		if err == nil {
			break
		}
		if !errors.Is(err, queue.ErrNotReplicated) || time.Now().After(deadline) {
			t.Fatalf("after the replica came back: %v", err)
		}
	}
}

// On a cluster each change waits on its own master's replicas.
func TestQueueReplicasCluster(t *testing.T) {
	cl := redistest.NewCluster(t, 3, 1)
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs(), MaxRetries: -1})
	defer c.Close()
	q, err := queue.New(newStore(t, c, &redisstore.Options{Replicas: 1, ReplicaTimeout: 2 * time.Second}), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	for i := range 24 {
		tube := fmt.Sprint("c", i)
		if _, err := q.Put(t.Context(), tube, queue.NewJob{Body: []byte(tube)}); err != nil {
			t.Fatalf("put to %s: %v", tube, err)
		}
		j, err := q.Reserve(t.Context(), queue.ReserveOptions{Tubes: []string{tube}, Timeout: -1})
		if err != nil {
			t.Fatalf("reserve from %s: %v", tube, err)
		}
		if err := q.Delete(t.Context(), j.ID); err != nil {
			t.Fatalf("delete in %s: %v", tube, err)
		}
	}
	if _, err := redisstore.New(t.Context(), c, &redisstore.Options{Replicas: -1}); err == nil {
		t.Error("Replicas -1 was accepted")
	}
}

// BenchmarkReplicaWait puts one job per call from 16 goroutines on a master
// with one replica, without and with Options.Replicas 1 (one op is one put).
func BenchmarkReplicaWait(b *testing.B) {
	sen := redistest.NewSentinel(b)
	c := redis.NewClient(&redis.Options{Addr: sen.Master.Addr, MaxRetries: -1, PoolSize: 32})
	b.Cleanup(func() { c.Close() })
	for _, replicas := range []int{0, 1} {
		b.Run(fmt.Sprint("replicas=", replicas), func(b *testing.B) {
			q, err := queue.New(newStore(b, c, &redisstore.Options{Replicas: replicas}), nil)
			if err != nil {
				b.Fatal(err)
			}
			defer q.Close()
			b.SetParallelism(8)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := q.Put(b.Context(), "bench", queue.NewJob{Body: body100}); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "puts/s")
		})
	}
}
