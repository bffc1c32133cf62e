package memstore_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/hourglass-io/hourglass/memstore"
	"github.com/hourglass-io/hourglass/queue"
)

// A durable queue in a data directory: a job put before a restart is there
// after it.
func ExampleOpen() {
	dir, err := os.MkdirTemp("", "hourglass-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()

	store, err := memstore.Open(dir, &memstore.Options{Fsync: memstore.FsyncAlways})
	if err != nil {
		log.Fatal(err)
	}
	q, err := queue.New(store, nil)
	if err != nil {
		log.Fatal(err)
	}
	id, err := q.Put(ctx, "emails", queue.NewJob{Body: []byte("welcome alice@example.com")})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("put job", id)
	q.Close()
	store.Close()

	// Later, or after a crash: the job is still there.
	store, err = memstore.Open(dir, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	q, err = queue.New(store, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer q.Close()
	job, err := q.Reserve(ctx, queue.ReserveOptions{Tubes: []string{"emails"}, Timeout: time.Second})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("reserved job %d: %s\n", job.ID, job.Body)
	if err := q.Delete(ctx, job.ID); err != nil {
		log.Fatal(err)
	}
	// Output:
	// put job 1
	// reserved job 1: welcome alice@example.com
}

// An in-memory store (mem://) with a cap on the number of jobs.
func ExampleNew() {
	ctx := context.Background()
	store, err := memstore.New(&memstore.Options{MaxJobs: 1})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	q, err := queue.New(store, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer q.Close()
	q.Put(ctx, "default", queue.NewJob{Body: []byte("one")})
	_, err = q.Put(ctx, "default", queue.NewJob{Body: []byte("two")})
	fmt.Println(err)
	// Output:
	// queue: store is full: 1 jobs stored, 1 more would pass the cap of 1
}

func ExampleParseFsync() {
	p, err := memstore.ParseFsync("everysec")
	fmt.Println(p, err)
	// Output: everysec <nil>
}
