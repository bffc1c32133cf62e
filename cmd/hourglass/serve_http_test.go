//go:build unix

package main

import (
	"bufio"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/internal/testkit/testcert"
)

// Without a token, serve will not listen beyond loopback, on either listener.
func TestServeRefusesExposureWithoutToken(t *testing.T) {
	for _, args := range [][]string{
		{"--http-addr", "0.0.0.0:0"},
		{"--beanstalk-addr", "0.0.0.0:0"},
	} {
		p := launchServe(t, nil, append([]string{"--store", "mem://"}, args...)...)
		if code := p.wait(t, 20*time.Second); code != 1 {
			t.Fatalf("serve %v exited %d, want 1", args, code)
		}
		if !strings.Contains(p.log.String(), "beyond loopback: refusing to serve it without --auth-token") {
			t.Fatalf("serve %v said:\n%s", args, p.log)
		}
	}
}

// With a token from a file and a certificate, both listeners speak TLS, and
// the API wants the token.
func TestServeTokenAndTLS(t *testing.T) {
	dir := t.TempDir()
	cert, key, pool := testcert.Write(t, dir)
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte("tok-123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := launchServe(t, nil, "--store", "mem://", "--auth-token-file", tokenFile, "--tls-cert", cert, "--tls-key", key)
	line := p.log.waitFor(t, `msg="hourglass serving"`, 30*time.Second)
	if logValue(line, "auth") != "true" || logValue(line, "tls") != "true" {
		t.Fatalf("start line %q: want auth=true tls=true", line)
	}
	httpAddr, bAddr := logValue(line, "http_addr"), logValue(line, "beanstalk_addr")
	cfg := &tls.Config{RootCAs: pool}
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}

	call := func(token string) int {
		t.Helper()
		req, _ := http.NewRequest("GET", "https://"+httpAddr+"/v1/stats", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("GET /v1/stats over TLS: %v", err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := call(""); code != http.StatusUnauthorized {
		t.Errorf("without the token: %d, want 401", code)
	}
	if code := call("tok-123"); code != http.StatusOK {
		t.Errorf("with the token: %d, want 200", code)
	}

	// The beanstalkd protocol over TLS.
	nc, err := tls.Dial("tcp", bAddr, cfg)
	if err != nil {
		t.Fatalf("beanstalkd listener over TLS: %v", err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(nc, "put 0 0 60 2\r\nhi\r\n")
	reply, err := bufio.NewReader(nc).ReadString('\n')
	if err != nil || !strings.HasPrefix(reply, "INSERTED ") {
		t.Fatalf("put over TLS: %q, %v", reply, err)
	}

	// The job is visible over HTTP, and the metrics count both protocols.
	req, _ := http.NewRequest("GET", "https://"+httpAddr+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer tok-123")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`hourglass_requests_total{command="put",primitive="jobs",protocol="beanstalk",result="ok"} 1`,
		`hourglass_requests_total{command="stats",primitive="jobs",protocol="http",result="ok"} 1`,
		`hourglass_jobs{state="ready",tube="default"} 1`,
		`hourglass_connections{protocol="beanstalk"} 1`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	p.signal(t, syscall.SIGTERM)
	if code := p.wait(t, 20*time.Second); code != 0 {
		t.Fatalf("serve exited %d", code)
	}
}

// hourglass api calls the HTTP API with the token of the environment.
func TestAPICommand(t *testing.T) {
	p := startServe(t, []string{"HOURGLASS_AUTH_TOKEN=tok"}, "--store", "mem://")
	env := []string{"HOURGLASS_HTTP=http://" + p.httpAddr, "HOURGLASS_AUTH_TOKEN=tok"}
	if out := ok(t, env, "api", "POST", "/v1/tubes/cli/jobs", `{"body":"from the cli"}`); out != "id:        1\nduplicate: false\n" {
		t.Errorf("put printed %q", out)
	}
	// Flags may follow the arguments.
	out := ok(t, env, "api", "POST", "/v1/reserve", `{"tubes":["cli"]}`, "--json")
	if !strings.Contains(out, `"body":"from the cli"`) || !strings.Contains(out, `"lease":"hgl_`) {
		t.Errorf("reserve --json printed %q", out)
	}
	r := run(t, env, "", "api", "GET", "/v1/jobs/99")
	if r.code != 3 || !strings.Contains(r.stderr, "(not_found)") {
		t.Errorf("a missing job: %v", r)
	}
	r = run(t, []string{"HOURGLASS_HTTP=http://" + p.httpAddr}, "", "api", "GET", "/v1/stats")
	if r.code != 1 || !strings.Contains(r.stderr, "(unauthorized)") {
		t.Errorf("without the token: %v", r)
	}
}

// --allowed-hosts replaces the Host names the HTTP server answers.
func TestServeAllowedHosts(t *testing.T) {
	p := startServe(t, nil, "--store", "mem://", "--allowed-hosts", "queue.test, [::1]")
	for host, want := range map[string]int{"queue.test:7480": 200, "[::1]": 200, "127.0.0.1": 421, "rebound.example": 421} {
		hr, err := http.NewRequest("GET", "http://"+p.httpAddr+"/v1/stats", nil)
		if err != nil {
			t.Fatal(err)
		}
		hr.Host = host
		resp, err := http.DefaultClient.Do(hr)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Host %s: %d, want %d", host, resp.StatusCode, want)
		}
	}
	if r := run(t, nil, "", "serve", "--allowed-hosts", " "); r.code != 2 || !strings.Contains(r.stderr, "--allowed-hosts") {
		t.Errorf("a blank --allowed-hosts: %v", r)
	}
}

// --max-watch reaches both protocols; --max-waits and --max-watch refuse
// values that would cap everything.
func TestWaitCapFlags(t *testing.T) {
	p := startServe(t, nil, "--store", "mem://", "--max-watch", "2", "--max-waits", "5")
	resp, err := http.Post("http://"+p.httpAddr+"/v1/reserve", "application/json", strings.NewReader(`{"tubes":["a","b","c"]}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "too_many_tubes") {
		t.Errorf("an HTTP reserve of 3 tubes under --max-watch 2: %d %s", resp.StatusCode, body)
	}
	nc, err := net.Dial("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(nc)
	for _, step := range []struct{ cmd, want string }{{"watch a", "WATCHING 2\r\n"}, {"watch b", "OUT_OF_MEMORY\r\n"}} {
		io.WriteString(nc, step.cmd+"\r\n")
		if got, err := br.ReadString('\n'); got != step.want {
			t.Errorf("%s: %q (%v), want %q", step.cmd, got, err, step.want)
		}
	}
	for _, flag := range []string{"--max-waits", "--max-watch"} {
		if r := run(t, nil, "", "serve", flag, "0"); r.code != 2 || !strings.Contains(r.stderr, flag) {
			t.Errorf("serve %s 0: %v", flag, r)
		}
	}
	if r := run(t, nil, "", "serve", "--body-timeout", "-1s"); r.code != 2 || !strings.Contains(r.stderr, "--body-timeout") {
		t.Errorf("serve --body-timeout -1s: %v", r)
	}
}

// A put whose body never comes is cut off after --body-timeout, with no
// --idle-timeout; an idle connection stays.
func TestBodyTimeoutFlag(t *testing.T) {
	p := startServe(t, nil, "--store", "mem://", "--body-timeout", "300ms")
	idle, err := net.Dial("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	stuck, err := net.Dial("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer stuck.Close()
	io.WriteString(stuck, "put 0 0 60 10\r\nabc")
	stuck.SetReadDeadline(time.Now().Add(10 * time.Second))
	if rest, err := io.ReadAll(stuck); err != nil || len(rest) > 0 {
		t.Errorf("the stuck put's connection: %q, %v; want it closed", rest, err)
	}
	idle.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(idle, "list-tube-used\r\n")
	if got, err := bufio.NewReader(idle).ReadString('\n'); got != "USING default\r\n" {
		t.Errorf("the idle connection: %q, %v", got, err)
	}
}
