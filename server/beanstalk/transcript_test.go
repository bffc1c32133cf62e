package beanstalk_test

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// A transcript (testdata/*.txt) is what clients send, one step a line:
//
//	# comment (and blank lines): ignored
//	@name          later steps go through connection "name", opened on first
//	               use; steps before the first @ go through "a"
//	put 0 0 60 5   a line is sent with CRLF appended and one reply is read;
//	hello          a put line takes the next line, verbatim, as its body
//	!send N text   send text with CRLF appended and read N replies
//	!raw N "..."   send the Go-quoted bytes as they are and read N replies
//	!read N        read N replies (of a reserve that was waiting)
//	!putx P D T N  put with a body of N bytes "x" and read one reply (text
//	               after N stays on the command line)
//	!closed        the server must close the connection
//	!halfclose     close the sending side of the connection
//	!close         close the connection
//	!drain         put the server in drain mode (beanstalkd: SIGUSR1)
//
// "$N" in what is sent stands for the N-th distinct job ID seen in replies,
// and "$$" for "$".
// TestTranscripts sends each transcript to a real beanstalkd and to our
// server on every back end, and compares the replies, with job IDs
// numbered by first appearance and the stats values that differ between
// any two servers (pid, uptime, ...) masked.

type step struct {
	line  int
	conn  string
	send  []byte
	reads int
	op    string // "", "closed", "halfclose", "close"
}

func parseTranscript(t *testing.T, path string) []step {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	var steps []step
	conn := "a"
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		st := step{line: i + 1, conn: conn}
		bad := func(format string, args ...any) {
			t.Fatalf("%s:%d: %s", path, i+1, fmt.Sprintf(format, args...))
		}
		switch {
		case l == "" || strings.HasPrefix(l, "#"):
			continue
		case strings.HasPrefix(l, "@"):
			conn = l[1:]
			continue
		case strings.HasPrefix(l, "!"):
			word, arg, _ := strings.Cut(l[1:], " ")
			switch word {
			case "send", "raw", "read":
				ns, text, _ := strings.Cut(arg, " ")
				n, err := strconv.Atoi(ns)
				if err != nil {
					bad("bad count %q", ns)
				}
				st.reads = n
				switch word {
				case "send":
					st.send = []byte(text + "\r\n")
				case "raw":
					s, err := strconv.Unquote(text)
					if err != nil {
						bad("bad quoted text: %v", err)
					}
					st.send = []byte(s)
				}
			case "putx":
				f := strings.Fields(arg)
				if len(f) < 4 {
					bad("!putx wants 4 numbers")
				}
				n, err := strconv.Atoi(f[3])
				if err != nil {
					bad("bad size %q", f[3])
				}
				st.send = []byte("put " + arg + "\r\n" + strings.Repeat("x", n) + "\r\n")
				st.reads = 1
			case "closed", "halfclose", "close", "drain":
				st.op = word
			default:
				bad("unknown directive %q", word)
			}
		case strings.HasPrefix(l, "put "):
			if i+1 >= len(lines) {
				bad("put without a body line")
			}
			i++
			st.send = []byte(l + "\r\n" + lines[i] + "\r\n")
			st.reads = 1
		default:
			st.send = []byte(l + "\r\n")
			st.reads = 1
		}
		steps = append(steps, st)
	}
	return steps
}

var showRef = flag.Bool("show", false, "log beanstalkd's replies to each transcript")

// replyTimeout bounds the wait for one reply.
const replyTimeout = 10 * time.Second

// transcriptRun is one server's answers to a transcript.
type transcriptRun struct {
	replies []string // "L<line> <conn>: <normalised reply>"
	timing  []int64  // masked time values (age, time-left, ...), in order
}

var idArg = regexp.MustCompile(`\$\$|\$(\d+)`)

// runTranscript plays steps against the server at addr.
// drain puts the server in drain mode.
func runTranscript(t *testing.T, addr string, drain func(), steps []step) transcriptRun {
	t.Helper()
	type client struct {
		nc net.Conn
		br *bufio.Reader
	}
	conns := map[string]*client{}
	defer func() {
		for _, c := range conns {
			c.nc.Close()
		}
	}()
	ids := map[string]int{} // job ID -> order of first appearance
	var order []string
	n := &normaliser{ids: ids, order: &order}
	var run transcriptRun
	for _, st := range steps {
		c := conns[st.conn]
		if c == nil {
			nc, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatalf("line %d: %v", st.line, err)
			}
			c = &client{nc: nc, br: bufio.NewReader(nc)}
			conns[st.conn] = c
		}
		tag := fmt.Sprintf("L%d %s: ", st.line, st.conn)
		if st.send != nil {
			send := idArg.ReplaceAllFunc(st.send, func(m []byte) []byte {
				if string(m) == "$$" {
					return []byte("$")
				}
				k, _ := strconv.Atoi(string(m[1:]))
				if k < 1 || k > len(order) {
					t.Fatalf("line %d: $%d, but only %d job IDs seen", st.line, k, len(order))
				}
				return []byte(order[k-1])
			})
			if _, err := c.nc.Write(send); err != nil {
				t.Fatalf("line %d: write: %v", st.line, err)
			}
		}
		for range st.reads {
			r, err := readReply(c.nc, c.br)
			if err != nil {
				run.replies = append(run.replies, tag+"error: "+errKind(err))
				t.Logf("line %d: %v", st.line, err)
				break
			}
			run.replies = append(run.replies, tag+n.reply(r, &run.timing))
		}
		switch st.op {
		case "closed":
			c.nc.SetReadDeadline(time.Now().Add(replyTimeout))
			rest, err := io.ReadAll(c.br)
			switch {
			case err != nil:
				run.replies = append(run.replies, tag+"not closed: "+err.Error())
			case len(rest) > 0:
				run.replies = append(run.replies, tag+fmt.Sprintf("closed after %q", rest))
			default:
				run.replies = append(run.replies, tag+"closed")
			}
		case "halfclose":
			c.nc.(*net.TCPConn).CloseWrite()
		case "close":
			c.nc.Close()
			delete(conns, st.conn)
		case "drain":
			drain()
		}
	}
	return run
}

// errKind describes a read error the same way for every server.
func errKind(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, io.EOF):
		return "connection closed"
	case errors.As(err, &ne) && ne.Timeout():
		return "no reply"
	}
	return "read failed"
}

// readReply reads one reply: a line, and the data block that follows OK,
// RESERVED and FOUND.
func readReply(nc net.Conn, br *bufio.Reader) (string, error) {
	nc.SetReadDeadline(time.Now().Add(replyTimeout))
	line, err := br.ReadString('\n')
	if err != nil {
		return "", fmt.Errorf("%w (after %q)", err, line)
	}
	if !strings.HasSuffix(line, "\r\n") {
		return "", fmt.Errorf("reply %q does not end in CRLF", line)
	}
	f := strings.Fields(line)
	var size string
	switch {
	case len(f) == 2 && f[0] == "OK":
		size = f[1]
	case len(f) == 3 && (f[0] == "RESERVED" || f[0] == "FOUND"):
		size = f[2]
	default:
		return line, nil
	}
	n, err := strconv.Atoi(size)
	if err != nil {
		return "", fmt.Errorf("reply %q: bad size", line)
	}
	data := make([]byte, n+2)
	if _, err := io.ReadFull(br, data); err != nil {
		return "", fmt.Errorf("reply %q: data: %w", line, err)
	}
	if !bytes.HasSuffix(data, []byte("\r\n")) {
		return "", fmt.Errorf("reply %q: data %q does not end in CRLF", line, data)
	}
	return line + string(data), nil
}

// normaliser rewrites replies so that two servers can be compared.
type normaliser struct {
	ids   map[string]int
	order *[]string
}

func (n *normaliser) id(s string) string {
	k, ok := n.ids[s]
	if !ok {
		*n.order = append(*n.order, s)
		k = len(*n.order)
		n.ids[s] = k
	}
	return "#" + strconv.Itoa(k)
}

// Stats fields whose values differ between any two servers.
var maskedStats = map[string]bool{
	"pid": true, "uptime": true, "rusage-utime": true, "rusage-stime": true,
	"id": true, "hostname": true, "os": true, "version": true,
	"total-connections": true, "binlog-oldest-index": true, "binlog-current-index": true,
	"binlog-records-migrated": true, "binlog-records-written": true, "binlog-max-size": true,
}

// Fields that depend on the wall clock: masked, and compared with a
// tolerance of one second.
var timingFields = map[string]bool{"age": true, "time-left": true, "pause-time-left": true}

func (n *normaliser) reply(r string, timing *[]int64) string {
	head, data, _ := strings.Cut(r, "\r\n")
	f := strings.Fields(head)
	switch {
	case len(f) == 2 && (f[0] == "INSERTED" || f[0] == "BURIED"):
		f[1] = n.id(f[1])
	case len(f) == 3 && (f[0] == "RESERVED" || f[0] == "FOUND"):
		f[1] = n.id(f[1])
	case len(f) == 2 && f[0] == "OK":
		f[1] = "<n>" // checked by readReply; depends on masked values
	}
	out := strings.Join(f, " ")
	if data == "" {
		return out
	}
	isJob := strings.Contains(data, "\nstate: ")
	isStats := strings.Contains(data, "\npid: ")
	lines := strings.Split(strings.TrimSuffix(data, "\r\n"), "\n")
	for i, l := range lines {
		k, v, ok := strings.Cut(l, ": ")
		if !ok {
			continue
		}
		switch {
		case isJob && k == "id":
			v = n.id(v)
		case isStats && maskedStats[k]:
			if strings.HasPrefix(v, `"`) && strings.HasSuffix(v, `"`) {
				v = `"<masked>"`
			} else {
				v = "<masked>"
			}
		case timingFields[k]:
			x, err := strconv.ParseInt(v, 10, 64)
			if err == nil {
				*timing = append(*timing, x)
				v = "<t>"
			}
		}
		lines[i] = k + ": " + v
	}
	return out + "\n\t" + strings.Join(lines, "\n\t")
}

// onCluster names the transcripts also played against a Redis Cluster:
// those about what the store shares between servers. (Job IDs there rise
// in put order only within a slot, so transcripts that order jobs of
// several tubes by ID are not among them.)
var onCluster = map[string]bool{"tubelife": true, "tubes": true, "pause": true}

func TestTranscripts(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no transcripts in testdata")
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".txt")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			steps := parseTranscript(t, f)
			ref := startBeanstalkd(t)
			want := runTranscript(t, ref.addr, ref.drain, steps)
			if *showRef {
				t.Logf("beanstalkd:\n%s", strings.Join(want.replies, "\n"))
			}
			bs := backends
			if onCluster[name] {
				bs = append(bs[:len(bs):len(bs)], backend{Name: "cluster", Open: clusterStore})
			}
			for _, b := range bs {
				t.Run(b.Name, func(t *testing.T) {
					srv, addr := startServer(t, b.Open(t), nil)
					got := runTranscript(t, addr, srv.Drain, steps)
					if diff := cmp.Diff(want.replies, got.replies); diff != "" {
						t.Errorf("replies differ from beanstalkd's (-beanstalkd +ours):\n%s", diff)
					}
					if err := closeEnough(want.timing, got.timing); err != nil {
						t.Error(err)
					}
				})
			}
		})
	}
}

// closeEnough compares time values, which may differ by a second.
func closeEnough(want, got []int64) error {
	if len(want) != len(got) {
		return fmt.Errorf("time values: beanstalkd %v, ours %v", want, got)
	}
	for i := range want {
		if d := want[i] - got[i]; d < -1 || d > 1 {
			return fmt.Errorf("time value %d: beanstalkd %d, ours %d (all: %v vs %v)", i, want[i], got[i], want, got)
		}
	}
	return nil
}
