package beanstalk_test

import (
	"bufio"
	"context"
	"fmt"
	"log"
	"net"
	"strings"

	"github.com/hourglass-io/hourglass/memstore"
	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/server/beanstalk"
)

func Example() {
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

	// Any beanstalkd client can talk to it; here, by hand.
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	say := func(cmd string) string {
		fmt.Fprintf(c, "%s\r\n", cmd)
		line, _ := r.ReadString('\n')
		return strings.TrimSpace(line)
	}
	fmt.Println(say("use emails"))
	inserted := say("put 0 0 60 5\r\nhello")
	fmt.Println(strings.Fields(inserted)[0])
	fmt.Println(say("watch emails"))
	reserved := say("reserve")
	body, _ := r.ReadString('\n')
	fmt.Println(strings.Fields(reserved)[0], strings.TrimSpace(body))
	fmt.Println(say("delete " + strings.Fields(reserved)[1]))
	// Output:
	// USING emails
	// INSERTED
	// WATCHING 2
	// RESERVED hello
	// DELETED
}
