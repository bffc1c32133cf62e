package redistest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// A tiny RESP2 client, just enough for the harness to probe the servers it
// starts without building a go-redis client (and its pools) for every poll.

const (
	probeDialTimeout = time.Second
	probeIOTimeout   = 2 * time.Second
)

// respError is an error reply ("-ERR ...") from the server.
type respError string

func (e respError) Error() string { return string(e) }

// do sends one command to addr on a fresh connection and returns the decoded
// reply: string for simple and bulk strings, int64 for integers, []any for
// arrays and nil for null replies. Error replies are returned as respError.
func do(addr string, args ...string) (any, error) {
	conn, err := net.DialTimeout("tcp", addr, probeDialTimeout)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(probeIOTimeout)); err != nil {
		return nil, err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := io.WriteString(conn, b.String()); err != nil {
		return nil, err
	}
	return readReply(bufio.NewReader(conn))
}

// doString is do for commands whose reply is a (simple or bulk) string.
func doString(addr string, args ...string) (string, error) {
	v, err := do(addr, args...)
	if err != nil {
		return "", err
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("%s: unexpected reply %T to %s", addr, v, strings.Join(args, " "))
	}
	return s, nil
}

// doArray is do for commands whose reply is an array.
func doArray(addr string, args ...string) ([]any, error) {
	v, err := do(addr, args...)
	if err != nil {
		return nil, err
	}
	a, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%s: unexpected reply %T to %s", addr, v, strings.Join(args, " "))
	}
	return a, nil
}

func readReply(r *bufio.Reader) (any, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	if len(line) < 3 || !strings.HasSuffix(line, "\r\n") {
		return nil, fmt.Errorf("malformed reply line %q", line)
	}
	line = line[:len(line)-2]
	switch line[0] {
	case '+':
		return line[1:], nil
	case '-':
		return nil, respError(line[1:])
	case ':':
		return strconv.ParseInt(line[1:], 10, 64)
	case '$', '*':
		n, err := strconv.Atoi(line[1:])
		if err != nil {
			return nil, fmt.Errorf("malformed length %q", line)
		}
		if n < 0 {
			return nil, nil // a null bulk string or array
		}
		if line[0] == '$' {
			buf := make([]byte, n+2)
			if _, err := io.ReadFull(r, buf); err != nil {
				return nil, err
			}
			return string(buf[:n]), nil
		}
		out := make([]any, n)
		for i := range out {
			if out[i], err = readReply(r); err != nil {
				var re respError
				if !errors.As(err, &re) {
					return nil, err
				}
				out[i] = re
			}
		}
		return out, nil
	default:
		return nil, fmt.Errorf("unsupported reply type %q", line)
	}
}

// infoFields parses "key:value" lines as returned by INFO and CLUSTER INFO.
func infoFields(text string) map[string]string {
	m := make(map[string]string)
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		if k, v, ok := strings.Cut(line, ":"); ok {
			m[k] = v
		}
	}
	return m
}

// pairs turns a flat [k1, v1, k2, v2, ...] array reply into a map.
func pairs(a []any) map[string]string {
	m := make(map[string]string, len(a)/2)
	for i := 0; i+1 < len(a); i += 2 {
		k, _ := a[i].(string)
		switch v := a[i+1].(type) {
		case string:
			m[k] = v
		case int64:
			m[k] = strconv.FormatInt(v, 10)
		}
	}
	return m
}
