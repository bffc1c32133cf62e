package beanstalkc_test

import (
	"context"
	"fmt"
	"log"
	"net"
	"time"

	"github.com/hourglass-io/hourglass/internal/beanstalkc"
	"github.com/hourglass-io/hourglass/memstore"
	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/server/beanstalk"
)

// Put a job into a tube, reserve it and delete it.
func Example() {
	// A server to talk to; any beanstalkd-protocol server will do.
	store, err := memstore.New(nil)
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	q, err := queue.New(store, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer q.Close()
	srv := &beanstalk.Server{Queue: q}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	go srv.Serve(l)
	defer srv.Shutdown(context.Background())

	ctx := context.Background()
	c, err := beanstalkc.Dial(ctx, l.Addr().String())
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	if err := c.Use(ctx, "emails"); err != nil {
		log.Fatal(err)
	}
	if _, err := c.Put(ctx, []byte(`{"to":"ada@example.com"}`), 0, 0, time.Minute); err != nil {
		log.Fatal(err)
	}
	st, err := c.StatsTube(ctx, "emails")
	if err != nil {
		log.Fatal(err)
	}
	n, _ := st.Int("current-jobs-ready")
	fmt.Println("ready:", n)

	if _, err := c.Watch(ctx, "emails"); err != nil {
		log.Fatal(err)
	}
	job, err := c.ReserveWithTimeout(ctx, 5*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s\n", job.Body)
	if err := c.Delete(ctx, job.ID); err != nil {
		log.Fatal(err)
	}
	// Output:
	// ready: 1
	// {"to":"ada@example.com"}
}
