package redisstore_test

import (
	"context"
	"log"
	"time"

	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/redisstore"
	"github.com/redis/go-redis/v9"
)

// A queue on Redis: many processes may run this against the same Redis (or
// Cluster, through redis.NewClusterClient) and share the jobs.
func Example() {
	ctx := context.Background()
	// MaxRetries -1: a put or reserve re-sent after a network error could run twice.
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379", MaxRetries: -1})
	defer client.Close()

	store, err := redisstore.New(ctx, client, &redisstore.Options{Prefix: "myapp:"})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	q, err := queue.New(store, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer q.Close()

	// Due in 30 s by Redis's clock, whatever this machine's clock says.
	if _, err := q.Put(ctx, "invoices", queue.NewJob{Body: []byte("invoice 42"), Delay: 30 * time.Second}); err != nil {
		log.Fatal(err)
	}
	job, err := q.Reserve(ctx, queue.ReserveOptions{Tubes: []string{"invoices"}})
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("job %d: %s", job.ID, job.Body)
	if err := q.Delete(ctx, job.ID); err != nil {
		log.Fatal(err)
	}
}

// A busy tube split over three cluster slots, so three masters share it.
// Every process must use the same Partitions function.
func ExampleOptions_partitions() {
	ctx := context.Background()
	client := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"10.0.0.1:6379", "10.0.0.2:6379", "10.0.0.3:6379"}, MaxRetries: -1})
	defer client.Close()
	store, err := redisstore.New(ctx, client, &redisstore.Options{
		Partitions: func(tube string) int {
			if tube == "clicks" {
				return 3 // priority order then holds within each partition
			}
			return 1
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
}
