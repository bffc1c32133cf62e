//go:build unix

package main

import (
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// serve --log-format json writes one JSON object a line; at debug level it
// logs each beanstalkd connection, and --access-log each HTTP request.
func TestServeLogs(t *testing.T) {
	p := launchServe(t, nil, "--store", "mem://", "--log-format", "json", "--access-log")
	line := p.log.waitFor(t, `"msg":"hourglass serving"`, 30*time.Second)
	var start map[string]any
	if err := json.Unmarshal([]byte(line), &start); err != nil {
		t.Fatalf("not JSON: %q: %v", line, err)
	}
	p.addr, _ = start["beanstalk_addr"].(string)
	p.httpAddr, _ = start["http_addr"].(string)
	env := []string{"HOURGLASS_ADDR=" + p.addr}
	ok(t, env, "put", "hello")
	accepted := p.log.waitFor(t, `"msg":"connection accepted"`, 10*time.Second)
	closed := p.log.waitFor(t, `"msg":"connection closed"`, 10*time.Second)
	for _, l := range []string{accepted, closed} {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil || !strings.HasPrefix(m["remote"].(string), "127.0.0.1:") {
			t.Errorf("connection log %q (%v): want the remote address", l, err)
		}
	}
	if !strings.Contains(closed, `"bytes_in":`) {
		t.Errorf("closed without its byte counts: %q", closed)
	}
	if code, _ := p.health(t); code != http.StatusOK {
		t.Fatalf("/healthz: %d", code)
	}
	access := p.log.waitFor(t, `"path":"/healthz"`, 10*time.Second)
	var m map[string]any
	if err := json.Unmarshal([]byte(access), &m); err != nil || m["msg"] != "http request" || m["method"] != "GET" || m["status"] != 200.0 {
		t.Errorf("access log line %q (%v)", access, err)
	}
	expect(t, nil, 2, []string{"serve", "--log-format", "xml"}, "--log-format")
}

// A store that cannot be opened says what to do, not Go's error chain.
func TestServeStoreErrors(t *testing.T) {
	file := t.TempDir() + "/file"
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	r := expect(t, nil, 1, []string{"serve", "--beanstalk-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0", "--store", file},
		"cannot use the data directory "+file, "is not a directory (use --store to choose another)")
	if strings.Contains(r.stderr, "wal:") {
		t.Errorf("Go's error chain in %q", r.stderr)
	}
}
