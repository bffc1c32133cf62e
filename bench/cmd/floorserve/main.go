// Command floorserve is the floor of a beanstalkd-protocol server written
// in Go the way `hourglass serve` is (a goroutine per connection, a
// buffered reader and writer, one reply written when nothing more is
// buffered): it keeps its jobs in one FIFO under one mutex and does
// nothing else — no priorities, delays, TTRs, tubes, history, metrics or
// log. Run against it, `hourglass bench` measures what the client, the
// kernel's loopback TCP and Go's network poller allow on this machine,
// which no server of that shape can exceed: the bound beside beanstalkd's
// figures for `hourglass serve --store mem://`.
//
// With -redis it keeps the jobs in a Redis list instead, one command and
// one round trip per protocol command (put RPUSH, reserve BLPOP, delete
// HDEL): the least a server that keeps its state in Redis does, the bound
// beside the figures of `hourglass serve --store redis://`. With -redis
// and -batch, one goroutine sends every command the connections have
// waiting in one pipeline (reserve then LPOP, and BLPOP on its own only
// when the list was empty), as hourglass's runner commits calls in groups.
//
// It answers put, reserve (waiting while there is no job), delete, use,
// watch and ignore, NOT_FOUND to stats-tube (a tube it does not know),
// and UNKNOWN_COMMAND otherwise; it is a
// measuring tool, not a server.
//
//	cd bench && go run ./cmd/floorserve -addr 127.0.0.1:11399
//	hourglass bench --addr 127.0.0.1:11399 --lateness-jobs 0
//	go run ./cmd/floorserve -addr 127.0.0.1:11399 -redis 127.0.0.1:6379
package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"strconv"
	"sync"

	"github.com/redis/go-redis/v9"
)

// store is where the floor keeps its jobs.
type store interface {
	put(body []byte) uint64
	reserve() job
	delete(id uint64) bool
}

// redisQueue keeps the jobs in a Redis list: one command a call.
type redisQueue struct {
	rdb    *redis.Client
	reqs   chan request // nil: a round trip per command, from its connection
	mu     sync.Mutex
	nextID uint64
}

// request is one command for the batching loop.
type request struct {
	op    byte // 'p' put, 'r' reserve, 'd' delete
	arg   []byte
	reply chan string // the value LPOP found, "" for none
}

func (q *redisQueue) do(op byte, arg []byte) string {
	if q.reqs == nil {
		ctx := context.Background()
		var err error
		var v string
		switch op {
		case 'p':
			err = q.rdb.RPush(ctx, "floor:q", arg).Err()
		case 'r':
			var kv []string
			kv, err = q.rdb.BLPop(ctx, 0, "floor:q").Result()
			if err == nil {
				v = kv[1]
			}
		case 'd':
			err = q.rdb.HDel(ctx, "floor:held", string(arg)).Err()
		}
		if err != nil {
			log.Fatal(err)
		}
		return v
	}
	r := request{op, arg, make(chan string, 1)}
	q.reqs <- r
	v := <-r.reply
	if op == 'r' && v == "" {
		kv, err := q.rdb.BLPop(context.Background(), 0, "floor:q").Result()
		if err != nil {
			log.Fatal(err)
		}
		v = kv[1]
	}
	return v
}

// batch sends every waiting request in one pipeline, round after round.
func (q *redisQueue) batch() {
	ctx := context.Background()
	var reqs []request
	for r := range q.reqs {
		reqs = append(reqs[:0], r)
		for len(reqs) < 256 {
			select {
			case r := <-q.reqs:
				reqs = append(reqs, r)
				continue
			default:
			}
			break
		}
		pipe := q.rdb.Pipeline()
		cmds := make([]redis.Cmder, len(reqs))
		for i, r := range reqs {
			switch r.op {
			case 'p':
				cmds[i] = pipe.RPush(ctx, "floor:q", r.arg)
			case 'r':
				cmds[i] = pipe.LPop(ctx, "floor:q")
			case 'd':
				cmds[i] = pipe.HDel(ctx, "floor:held", string(r.arg))
			}
		}
		if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
			log.Fatal(err)
		}
		for i, r := range reqs {
			v := ""
			if c, ok := cmds[i].(*redis.StringCmd); ok {
				v = c.Val()
			}
			r.reply <- v
		}
	}
}

func (q *redisQueue) put(body []byte) uint64 {
	q.mu.Lock()
	q.nextID++
	id := q.nextID
	q.mu.Unlock()
	v := strconv.AppendUint(nil, id, 10)
	v = append(append(v, ' '), body...)
	q.do('p', v)
	return id
}

func (q *redisQueue) reserve() job {
	idStr, body, _ := bytes.Cut([]byte(q.do('r', nil)), []byte(" "))
	id, _ := strconv.ParseUint(string(idStr), 10, 64)
	return job{id, body}
}

func (q *redisQueue) delete(id uint64) bool {
	q.do('d', strconv.AppendUint(nil, id, 10))
	return true
}

type job struct {
	id   uint64
	body []byte
}

// queue is the floor's whole store: one FIFO, one mutex, a condition for
// waiting reserves.
type queue struct {
	mu     sync.Mutex
	cond   *sync.Cond
	ready  []job
	head   int
	nextID uint64
	held   map[uint64]struct{}
}

func (q *queue) put(body []byte) uint64 {
	q.mu.Lock()
	q.nextID++
	id := q.nextID
	q.ready = append(q.ready, job{id, body})
	q.mu.Unlock()
	q.cond.Signal()
	return id
}

func (q *queue) reserve() job {
	q.mu.Lock()
	for q.head == len(q.ready) {
		q.cond.Wait()
	}
	j := q.ready[q.head]
	q.ready[q.head] = job{}
	q.head++
	if q.head == len(q.ready) {
		q.ready, q.head = q.ready[:0], 0
	}
	q.held[j.id] = struct{}{}
	q.mu.Unlock()
	return j
}

func (q *queue) delete(id uint64) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if _, ok := q.held[id]; !ok {
		return false
	}
	delete(q.held, id)
	return true
}

func main() {
	addr := flag.String("addr", "127.0.0.1:11399", "address to listen on (loopback)")
	redisAddr := flag.String("redis", "", "host:port of a redis-server to keep the jobs in (empty: in memory)")
	batch := flag.Bool("batch", false, "with -redis: every waiting command in one pipeline")
	flag.Parse()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	var q store
	if *redisAddr != "" {
		rq := &redisQueue{rdb: redis.NewClient(&redis.Options{Addr: *redisAddr, PoolSize: 32, ReadTimeout: -1})}
		if *batch {
			rq.reqs = make(chan request, 1024)
			go rq.batch()
		}
		q = rq
	} else {
		mq := &queue{held: map[uint64]struct{}{}}
		mq.cond = sync.NewCond(&mq.mu)
		q = mq
	}
	log.Printf("floorserve listening on %s", ln.Addr())
	for {
		c, err := ln.Accept()
		if err != nil {
			log.Fatal(err)
		}
		go serve(c, q)
	}
}

func serve(c net.Conn, q store) {
	defer c.Close()
	r := bufio.NewReaderSize(c, 64<<10)
	w := bufio.NewWriterSize(c, 64<<10)
	for {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return
		}
		line = bytes.TrimRight(line, "\r\n")
		cmd, rest, _ := bytes.Cut(line, []byte(" "))
		switch string(cmd) {
		case "put": // put <pri> <delay> <ttr> <bytes>
			f := bytes.Fields(rest)
			if len(f) != 4 {
				w.WriteString("BAD_FORMAT\r\n")
				break
			}
			n, err := strconv.Atoi(string(f[3]))
			if err != nil || n < 0 {
				w.WriteString("BAD_FORMAT\r\n")
				break
			}
			body := make([]byte, n+2)
			if _, err := io.ReadFull(r, body); err != nil {
				return
			}
			fmt.Fprintf(w, "INSERTED %d\r\n", q.put(body[:n]))
		case "reserve", "reserve-with-timeout":
			if r.Buffered() == 0 {
				w.Flush() // about to wait: what is written goes first
			}
			j := q.reserve()
			fmt.Fprintf(w, "RESERVED %d %d\r\n", j.id, len(j.body))
			w.Write(j.body)
			w.WriteString("\r\n")
		case "delete":
			id, err := strconv.ParseUint(string(rest), 10, 64)
			if err == nil && q.delete(id) {
				w.WriteString("DELETED\r\n")
			} else {
				w.WriteString("NOT_FOUND\r\n")
			}
		case "use":
			fmt.Fprintf(w, "USING %s\r\n", rest)
		case "watch":
			w.WriteString("WATCHING 1\r\n")
		case "ignore":
			w.WriteString("WATCHING 1\r\n")
		case "stats-tube": // the tube is always new to a client: as for a tube nobody used
			w.WriteString("NOT_FOUND\r\n")
		case "quit":
			w.Flush()
			return
		default:
			w.WriteString("UNKNOWN_COMMAND\r\n")
		}
		if r.Buffered() == 0 {
			if w.Flush() != nil {
				return
			}
		}
	}
}
