package beanstalk_test

import (
	"bytes"
	"io"
	"math/rand/v2"
	"net"
	"strings"
	"testing"
	"time"
)

// Lines longer than a window, with their '\r' and '\n' anywhere (at and
// around the 224-byte window edges too), and bodies too big to keep, are
// framed byte for byte as beanstalkd frames them: the replies to the same
// bytes are the same.
func TestLongLinesAsBeanstalkd(t *testing.T) {
	rng := rand.New(rand.NewPCG(29, 1))
	var inputs []string
	for _, n := range []int{222, 223, 224, 225, 446, 447, 448, 449, 5000, 70_000} {
		for _, tail := range []string{"\r\n", "\r\r\n", "\rx\r\n", "\n\r\n"} {
			inputs = append(inputs, strings.Repeat("x", n)+tail+"list-tube-used\r\n")
		}
	}
	for range 40 {
		var b strings.Builder
		for range 1 + rng.IntN(4) {
			n := rng.IntN(3000)
			for range n {
				switch r := rng.IntN(100); {
				case r < 2:
					b.WriteByte('\r')
				case r < 3:
					b.WriteByte('\n')
				default:
					b.WriteByte('a')
				}
			}
			b.WriteString("\r\nlist-tube-used\r\n")
		}
		inputs = append(inputs, b.String())
	}
	inputs = append(inputs, "put 0 0 60 70000\r\n"+strings.Repeat("b", 70_000)+"\r\nlist-tube-used\r\n")

	replies := func(addr, input string) string {
		t.Helper()
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		go func() {
			io.WriteString(nc, input)
			nc.(*net.TCPConn).CloseWrite()
		}()
		nc.SetReadDeadline(time.Now().Add(replyTimeout))
		var out bytes.Buffer
		if _, err := io.Copy(&out, nc); err != nil {
			t.Fatalf("reading the replies: %v", err)
		}
		return out.String()
	}
	ref := startBeanstalkd(t)
	_, addr := startServer(t, memStore(t), nil)
	for i, in := range inputs {
		want, got := replies(ref.addr, in), replies(addr, in)
		if got != want {
			t.Fatalf("input %d (%d bytes): replies %q, beanstalkd's %q", i, len(in), got, want)
		}
	}
}
