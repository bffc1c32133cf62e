package faulttest

import (
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/internal/testkit/redistest"
	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/redisstore"
	"github.com/redis/go-redis/v9"
)

// cutProxy is a TCP proxy to Redis that, once armed, lets one request
// through and cuts the client's connection instead of passing the reply
// on: Redis ran the call, the caller never hears of it.
type cutProxy struct {
	ln    net.Listener
	to    string
	armed atomic.Bool
	cuts  atomic.Int64
	wg    sync.WaitGroup
}

func newCutProxy(t *testing.T, to string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, to: to}
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(func() {
		ln.Close()
		p.wg.Wait()
	})
	return p
}

func (p *cutProxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.to)
		if err != nil {
			c.Close()
			continue
		}
		p.wg.Add(2)
		go func() { // client to Redis
			defer p.wg.Done()
			io.Copy(s, c)
			s.Close()
		}()
		go func() { // Redis to client, unless armed
			defer p.wg.Done()
			defer c.Close()
			buf := make([]byte, 64<<10)
			for {
				n, err := s.Read(buf)
				if n > 0 && p.armed.CompareAndSwap(true, false) {
					p.cuts.Add(1)
					s.Close()
					return // the reply dies here
				}
				if n > 0 {
					if _, err := c.Write(buf[:n]); err != nil {
						return
					}
				}
				if err != nil {
					return
				}
			}
		}()
	}
}

// TestLostReply cuts the connection of a put after Redis ran it: the put
// fails, and the job is stored once. With go-redis's default retries the
// client would send it again, and the job would be stored twice: why
// hourglass's clients run with MaxRetries -1 and redisstore warns about a
// client that retries.
func TestLostReply(t *testing.T) {
	ctx := deadline(t, time.Minute)
	srv := redistest.Standalone(t)
	p := newCutProxy(t, srv.Addr)
	direct := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1})
	t.Cleanup(func() { direct.Close() })

	for _, tc := range []struct {
		name    string
		retries int
		want    int
	}{
		{"retries off", -1, 1},
		{"go-redis default retries", 0, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prefix := redistest.Prefix(t)
			c := redis.NewClient(&redis.Options{Addr: p.ln.Addr().String(), MaxRetries: tc.retries})
			t.Cleanup(func() { c.Close() })
			q := openQueue(t, ctx, c, &redisstore.Options{Prefix: prefix})
			p.armed.Store(true)
			_, err := q.Put(ctx, "cut", queue.NewJob{Body: []byte("once"), TTR: time.Minute})
			if p.cuts.Load() == 0 {
				t.Fatal("the proxy cut nothing")
			}
			p.cuts.Store(0)
			if tc.retries < 0 && err == nil {
				t.Fatal("a put whose reply was lost succeeded")
			}
			// Count the jobs with a store of its own, on the direct path.
			rq := openQueue(t, ctx, direct, &redisstore.Options{Prefix: prefix})
			st, err := rq.StatsTube(ctx, "cut")
			if err != nil && !errors.Is(err, queue.ErrNotFound) {
				t.Fatal(err)
			}
			if n := int(st.Ready); n != tc.want {
				t.Errorf("%d jobs stored after a put whose reply was lost, want %d", n, tc.want)
			}
		})
	}
}
