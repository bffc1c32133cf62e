// Command fairbench measures how long a fresh client waits for an answer
// while other clients flood a server with huge lines: a share of reading
// per connection keeps it short. It drives a running hourglass serve (or
// beanstalkd) on loopback, for a bounded time, and prints the latency of
// the fresh requests (dial, one command, its reply): p50, p99 and max.
//
//	go run ./cmd/fairbench -addr 127.0.0.1:11300 -conns 50 -line 8MB -for 10s
//	go run ./cmd/fairbench -http 127.0.0.1:7480 ...   (the probe and flood over HTTP)
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:11300", "beanstalkd protocol address (loopback)")
	httpAddr := flag.String("http", "", "HTTP address (loopback): flood and probe over HTTP instead")
	conns := flag.Int("conns", 50, "flooding connections")
	line := flag.String("line", "8MB", "length of each flooding line (KB, MB suffixes)")
	dur := flag.Duration("for", 10*time.Second, "how long to flood (at most 2m)")
	every := flag.Duration("every", 20*time.Millisecond, "how often to probe")
	flag.Parse()
	target := *addr
	if *httpAddr != "" {
		target = *httpAddr
	}
	if host, _, err := net.SplitHostPort(target); err != nil || !net.ParseIP(host).IsLoopback() {
		log.Fatalf("fairbench: %s: a loopback address only", target)
	}
	n, err := size(*line)
	if err != nil {
		log.Fatal(err)
	}
	if *dur > 2*time.Minute {
		*dur = 2 * time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), *dur)
	defer cancel()

	junk := make([]byte, 64<<10)
	for i := range junk {
		junk[i] = 'a' + byte(i%26)
	}
	var sent atomic.Int64
	var wg sync.WaitGroup
	for range *conns {
		wg.Go(func() { flood(ctx, target, *httpAddr != "", n, junk, &sent) })
	}
	// Let the flood get going, then probe.
	time.Sleep(500 * time.Millisecond)
	var lat []time.Duration
	fails := 0
	for ctx.Err() == nil {
		d, err := probe(target, *httpAddr != "")
		if err != nil {
			fails++
		} else {
			lat = append(lat, d)
		}
		time.Sleep(*every)
	}
	wg.Wait()
	if len(lat) == 0 {
		log.Fatalf("fairbench: no probe answered (%d failed)", fails)
	}
	slices.Sort(lat)
	q := func(p float64) time.Duration { return lat[min(int(p*float64(len(lat))), len(lat)-1)] }
	fmt.Printf("conns=%d line=%s for=%v flood=%.0f MB/s probes=%d failed=%d p50=%v p99=%v max=%v\n",
		*conns, *line, *dur, float64(sent.Load())/dur.Seconds()/1e6, len(lat), fails,
		q(0.5).Round(10*time.Microsecond), q(0.99).Round(10*time.Microsecond), lat[len(lat)-1].Round(10*time.Microsecond))
}

// flood sends lines of n bytes (the protocol's CRLF at the end) until ctx
// ends, reconnecting when the server closes the connection.
func flood(ctx context.Context, addr string, overHTTP bool, n int64, junk []byte, sent *atomic.Int64) {
	for ctx.Err() == nil {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return
		}
		stop := context.AfterFunc(ctx, func() { c.Close() })
		go io.Copy(io.Discard, c) // replies (BAD_FORMAT)
		if overHTTP {
			// A header line of n bytes.
			io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Junk: ")
		}
		for ctx.Err() == nil {
			var err error
			for left := n; left > 0 && err == nil; {
				k := min(left, int64(len(junk)))
				_, err = c.Write(junk[:k])
				left -= k
				sent.Add(k)
			}
			if err == nil {
				_, err = io.WriteString(c, "\r\n")
			}
			if err != nil {
				break
			}
		}
		stop()
		c.Close()
	}
}

// probe dials, sends one command and reads its reply.
func probe(addr string, overHTTP bool) (time.Duration, error) {
	start := time.Now()
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	want := "USING default\r\n"
	if overHTTP {
		io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
		want = "HTTP/1.1 200"
	} else {
		io.WriteString(c, "list-tube-used\r\n")
	}
	got, err := br.ReadString('\n')
	if err != nil {
		return 0, err
	}
	if !strings.HasPrefix(got, want) {
		return 0, fmt.Errorf("reply %q", got)
	}
	return time.Since(start), nil
}

func size(s string) (int64, error) {
	mult := int64(1)
	switch {
	case strings.HasSuffix(s, "MB"):
		mult, s = 1<<20, strings.TrimSuffix(s, "MB")
	case strings.HasSuffix(s, "KB"):
		mult, s = 1<<10, strings.TrimSuffix(s, "KB")
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 1 {
		fmt.Fprintln(os.Stderr, "fairbench: -line: want a size such as 8MB")
		return 0, fmt.Errorf("fairbench: -line %q", s)
	}
	return v * mult, nil
}
