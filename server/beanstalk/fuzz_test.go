package beanstalk_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/memstore"
	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/server/beanstalk"
)

// replyWords are the first words of every reply the protocol has.
var replyWords = map[string]bool{
	"INSERTED": true, "BURIED": true, "EXPECTED_CRLF": true, "JOB_TOO_BIG": true,
	"DRAINING": true, "USING": true, "RESERVED": true, "DEADLINE_SOON": true,
	"TIMED_OUT": true, "DELETED": true, "RELEASED": true, "TOUCHED": true,
	"NOT_FOUND": true, "WATCHING": true, "NOT_IGNORED": true, "FOUND": true,
	"KICKED": true, "OK": true, "PAUSED": true, "OUT_OF_MEMORY": true,
	"BAD_FORMAT": true, "UNKNOWN_COMMAND": true,
}

// FuzzCommands sends arbitrary bytes to a fresh server and checks that it
// answers with well-formed replies only, never INTERNAL_ERROR, that the
// jobs left in the store are exactly those its INSERTED and DELETED replies
// account for, that the connection's jobs are back to ready once it has
// closed, and that the server still answers another connection.
func FuzzCommands(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.txt")
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		var b bytes.Buffer
		for _, l := range strings.Split(string(data), "\n") {
			if strings.HasPrefix(l, "#") || strings.HasPrefix(l, "!") || strings.HasPrefix(l, "@") {
				continue
			}
			b.WriteString(strings.ReplaceAll(l, "$1", "1") + "\r\n")
		}
		f.Add(b.Bytes())
	}
	for _, s := range []string{
		"put 0 0 1 3\r\nabc\r\nreserve\r\nreserve\r\ndelete 1\r\n",
		"put 0 0 60 1\r\nxy\r\nput 0 0 60 70000\r\n",
		"use a\r\nput 0 5 60 1\r\nx\r\nkick 10\r\nreserve-job 1\r\nbury 1 0\r\nkick-job 1\r\nstats\r\n",
		strings.Repeat("x", 500) + "\r\nstats\r\n",
		"watch a\r\nignore default\r\nreserve\r\nlist-tubes\r\n",
		"pause-tube default 100\r\nreserve-with-timeout 1\r\nquit\r\nstats\r\n",
		"reserve-with-timeout -1\r\n\x00\r\n\r\n",
		// Lines thrown away window by window, a too-big body thrown away.
		strings.Repeat("y", 223) + "\r" + strings.Repeat("z", 300) + "\r\r\n" + strings.Repeat("w", 70_000) + "\r\nstats\r\n",
		"put 0 0 60 70000\r\n" + strings.Repeat("b", 70_000) + "\r\nput 0 0 60 1\r\nx\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, input []byte) {
		store, err := memstore.New(nil)
		if err != nil {
			t.Fatal(err)
		}
		defer store.Close()
		q, err := queue.New(store, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer q.Close()
		srv := &beanstalk.Server{Queue: q}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		go srv.Serve(l)
		defer func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := srv.Shutdown(ctx); err != nil {
				t.Errorf("Shutdown: %v", err)
			}
		}()

		nc, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		// Send everything, then close our side: a reserve that waits ends
		// with TIMED_OUT, and the server closes once all is answered.
		writeErr := make(chan error, 1)
		go func() {
			_, err := nc.Write(input)
			nc.(*net.TCPConn).CloseWrite()
			writeErr <- err
		}()
		br := bufio.NewReader(nc)
		inserted, deleted := 0, 0
		for {
			r, err := readReply(nc, br)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("after %d inserted and %d deleted: %v", inserted, deleted, err)
			}
			word, _, _ := strings.Cut(strings.Fields(r + " ")[0], " ")
			if !replyWords[word] {
				t.Fatalf("reply %q", r)
			}
			switch word {
			case "INSERTED":
				inserted++
			case "DELETED":
				deleted++
			}
		}
		if err := <-writeErr; err != nil {
			// The server may close before reading everything (quit).
			var ne net.Error
			if !errors.As(err, &ne) && !errors.Is(err, io.ErrClosedPipe) && !strings.Contains(err.Error(), "reset") && !strings.Contains(err.Error(), "broken pipe") {
				t.Fatalf("write: %v", err)
			}
		}

		ctx := context.Background()
		st, err := q.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if jobs := st.Ready + st.Delayed + st.Buried + st.Reserved; jobs != int64(inserted-deleted) {
			t.Fatalf("%d jobs in the store, but %d INSERTED and %d DELETED", jobs, inserted, deleted)
		}
		if st.Reserved != 0 {
			t.Fatalf("%d jobs still reserved after the connection closed", st.Reserved)
		}
		if st.TotalJobs != int64(inserted) {
			t.Fatalf("total-jobs %d, but %d INSERTED", st.TotalJobs, inserted)
		}
		other, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		if _, err := io.WriteString(other, "list-tube-used\r\n"); err != nil {
			t.Fatal(err)
		}
		if r, err := readReply(other, bufio.NewReader(other)); err != nil || r != "USING default\r\n" {
			t.Fatalf("another connection: %q, %v", r, err)
		}
	})
}
