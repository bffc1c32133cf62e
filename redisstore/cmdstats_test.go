package redisstore_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/internal/redistest"
	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/redisstore"
	"github.com/redis/go-redis/v9"
)

func TestCmdStats(t *testing.T) {
	if os.Getenv("HG_CMDSTATS") == "" {
		t.Skip("diagnostic")
	}
	ctx := context.Background()
	srv := redistest.Standalone(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1})
	s, _ := redisstore.New(ctx, c, nil)
	q, _ := queue.New(s, nil)
	c.ConfigResetStat(ctx)
	start := time.Now()
	for i := 0; i < 20000; i++ {
		q.Put(ctx, "bench", queue.NewJob{Body: make([]byte, 100)})
	}
	fmt.Println("put", time.Since(start))
	info, _ := c.Info(ctx, "commandstats").Result()
	for _, l := range strings.Split(info, "\n") {
		if strings.Contains(l, "evalsha") || strings.Contains(l, "hset") {
			fmt.Println(l)
		}
	}
	c.ConfigResetStat(ctx)
	w, _ := queue.NewWorker(q, queue.HandlerFunc(func(ctx context.Context, j queue.Job) error { return nil }), &queue.WorkerOptions{Tubes: []string{"bench"}, Concurrency: 8})
	start = time.Now()
	wctx, cancel := context.WithCancel(ctx)
	go w.Run(wctx)
	for {
		st, _ := q.StatsTube(ctx, "bench")
		if st.Ready+st.Reserved == 0 {
			break
		}
		time.Sleep(2 * time.Millisecond)
	}
	fmt.Println("consume", time.Since(start))
	cancel()
	info, _ = c.Info(ctx, "commandstats").Result()
	for _, l := range strings.Split(info, "\n") {
		if strings.Contains(l, "evalsha") {
			fmt.Println(l)
		}
	}
}
