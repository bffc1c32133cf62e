//go:build unix

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/internal/beanstalkc"
	"github.com/hourglass-io/hourglass/internal/testkit/redistest"
	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/redisstore"
	"github.com/hourglass-io/hourglass/schedule"
	"github.com/redis/go-redis/v9"
)

// waitUntil runs the stats command until check accepts its output, for at
// most 10 s: for what the server does after a client has gone.
func waitUntil(t *testing.T, env []string, what string, check func(stats map[string]string) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !check(kv(t, ok(t, env, "stats"))) {
		if time.Now().After(deadline) {
			t.Fatalf("not within 10 s: %s", what)
		}
	}
}

// A job put before SIGTERM is there after a restart on the same directory;
// the shutdown ends a waiting reserve and exits 0.
func TestShutdownAndRestart(t *testing.T) {
	dir := t.TempDir()
	p := startServe(t, nil, "--store", dir)
	if line := p.log.waitFor(t, "hourglass serving", time.Second); logValue(line, "store") != "file" || logValue(line, "fsync") != "always" {
		t.Errorf("start line %q: want store=file fsync=always", line)
	}
	id := kv(t, ok(t, p.env, "put", "--tube", "durable", "--delay", "1h", "kept"))["id"]

	// A reserve in flight when the signal comes.
	var out bytes.Buffer
	waiting := exec.Command(binary, "reserve", "--tube", "idle")
	waiting.Env = append(baseEnv(), p.env...)
	waiting.Stderr = &out
	if err := waiting.Start(); err != nil {
		t.Fatal(err)
	}
	defer waiting.Process.Signal(syscall.SIGKILL)
	waitUntil(t, p.env, "a reserve waiting", func(st map[string]string) bool { return st["current-waiting"] == "1" })

	start := time.Now()
	p.signal(t, syscall.SIGTERM)
	if code := p.wait(t, 20*time.Second); code != 0 {
		t.Fatalf("serve exited %d after SIGTERM", code)
	}
	t.Logf("SIGTERM to exit: %v", time.Since(start))
	p.log.waitFor(t, `msg="shutting down"`, 0)
	p.log.waitFor(t, "msg=stopped", 0)

	werr := make(chan error, 1)
	go func() { werr <- waiting.Wait() }()
	select {
	case err := <-werr:
		if ee, isExit := err.(*exec.ExitError); !isExit || ee.ExitCode() != 1 || !strings.Contains(out.String(), "closed the connection") {
			t.Errorf("the waiting reserve ended with %v: %s", err, out.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting reserve did not end within 10 s of the server")
	}

	p = startServe(t, nil, "--store", "file://"+dir)
	if body := ok(t, p.env, "peek", "--raw", id); body != "kept" {
		t.Errorf("after restart, job %s has body %q, want kept", id, body)
	}
	if got := kv(t, ok(t, p.env, "stats", "--job", id)); got["state"] != "delayed" || got["tube"] != "durable" {
		t.Errorf("after restart: %v", got)
	}
	p.signal(t, syscall.SIGINT)
	if code := p.wait(t, 20*time.Second); code != 0 {
		t.Fatalf("serve exited %d after SIGINT", code)
	}
}

func TestStoreErrors(t *testing.T) {
	expect(t, nil, 1, []string{"serve", "--store", "foo://bar"}, `hourglass serve: opening store foo://bar: unsupported store URL: "foo://bar"`)
	expect(t, []string{"HOURGLASS_STORE=foo://env"}, 1, []string{"serve"}, `unsupported store URL: "foo://env"`)

	// A flag wins over its environment variable; --fsync does not apply to mem://.
	p := startServe(t, []string{"HOURGLASS_STORE=foo://env", "HOURGLASS_FSYNC=no"}, "--store", "mem://")
	p.log.waitFor(t, "--fsync is ignored", time.Second)

	// An address in use.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	expect(t, nil, 1, []string{"serve", "--store", "mem://", "--beanstalk-addr", l.Addr().String()}, "--addr", "address already in use")
}

// SIGUSR1 puts the server in drain mode: puts are refused, the rest works.
func TestDrain(t *testing.T) {
	p := startServe(t, nil, "--store", "mem://")
	ok(t, p.env, "put", "before")
	p.signal(t, syscall.SIGUSR1)
	p.log.waitFor(t, "drain mode", 10*time.Second)
	expect(t, p.env, 1, []string{"put", "after"}, "hourglass put: the server is draining: it takes no new jobs (DRAINING)")
	if got := kv(t, ok(t, p.env, "reserve", "--delete", "--timeout", "0"))["body"]; got != "before" {
		t.Errorf("reserve while draining: body %q", got)
	}
	if got := decode(t, ok(t, p.env, "stats", "--json"))["draining"]; got != true {
		t.Errorf("stats draining = %v", got)
	}
}

func TestMaxJobsAndSize(t *testing.T) {
	p := startServe(t, nil, "--store", "mem://", "--max-jobs", "1", "--max-job-size", "10")
	ok(t, p.env, "put", "one")
	expect(t, p.env, 1, []string{"put", "two"}, "full (OUT_OF_MEMORY)")
	expect(t, p.env, 2, []string{"put", "0123456789x"}, "job too big: 11 bytes, the server takes at most 10 bytes")
}

// Two servers on one Redis share the jobs; the password stays out of the
// log; /healthz fails once Redis is gone, and the server still stops cleanly.
func TestRedis(t *testing.T) {
	// Redis's default user has no password and so takes any: the URL's is
	// there to be redacted.
	rs := redistest.Standalone(t)
	url := "redis://default:s3cret@" + rs.Addr + "/0"
	a := startServe(t, nil, "--store", url)
	b := startServe(t, nil, "--store", url)
	if strings.Contains(a.log.String(), "s3cret") {
		t.Errorf("the password is in the log:\n%s", a.log)
	}
	if line := a.log.waitFor(t, "hourglass serving", 0); logValue(line, "url") != "redis://default:xxxxx@"+rs.Addr+"/0" {
		t.Errorf("start line %q: want the URL with its password redacted", line)
	}

	id := kv(t, ok(t, a.env, "put", "--tube", "shared", "hi"))["id"]
	if got := kv(t, ok(t, b.env, "reserve", "--tube", "shared", "--timeout", "5s", "--delete")); got["id"] != id || got["body"] != "hi" {
		t.Errorf("reserve through the second server: %v", got)
	}
	out := ok(t, nil, "bench", "--addr", a.addr+","+b.addr, "--conns", "4", "--jobs", "200", "--lateness-jobs", "10")
	if !strings.Contains(out, a.addr+","+b.addr) || !strings.Contains(out, "lateness") {
		t.Errorf("bench over two servers:\n%s", out)
	}

	rs.Stop()
	if code, body := a.health(t); code != http.StatusServiceUnavailable {
		t.Errorf("/healthz with Redis gone: %d %q, want 503", code, body)
	}
	a.signal(t, syscall.SIGTERM)
	if code := a.wait(t, 30*time.Second); code != 0 {
		t.Errorf("serve exited %d after SIGTERM with Redis gone", code)
	}
}

// When a server sharing a Redis dies (SIGKILL: no chance to return its
// jobs), the jobs reserved through it go back to ready once its session
// lease lapses — seconds, not the jobs' hour-long TTR — and another server
// hands them out.
func TestKilledServersJobsReturn(t *testing.T) {
	rs := redistest.Standalone(t)
	url := "redis://" + rs.Addr + "/0"
	a := startServe(t, nil, "--store", url)
	b := startServe(t, nil, "--store", url)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	ca, err := beanstalkc.Dial(ctx, a.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer ca.Close()
	id, err := ca.Put(ctx, []byte("orphan"), 0, 0, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if j, err := ca.Reserve(ctx); err != nil || j.ID != id {
		t.Fatalf("reserve through a: %v, %v", j, err)
	}
	a.kill()

	cb, err := beanstalkc.Dial(ctx, b.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer cb.Close()
	j, err := cb.ReserveWithTimeout(ctx, 30*time.Second)
	if err != nil || j.ID != id {
		t.Fatalf("reserve through b after a was killed: %v, %v; want job %d", j, err, id)
	}
	// b logs it once the reap is done, which may be just after the job was handed out.
	b.log.waitFor(t, "returned the jobs of servers that stopped renewing their session", 10*time.Second)
}

// serve fires the store's schedules: a schedule set through the library on
// the Redis it serves puts its jobs while serve runs.
func TestServeFiresSchedules(t *testing.T) {
	srv := redistest.Standalone(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1})
	defer c.Close()
	st, err := redisstore.New(t.Context(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	sc, err := schedule.New(st.Schedules(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sc.Set(t.Context(), schedule.Schedule{Name: "beat", Spec: "@every 1s", Job: schedule.Job{Tube: "beats", Body: []byte("tick")}}); err != nil {
		t.Fatal(err)
	}
	p := startServe(t, nil, "--store", "redis://"+srv.Addr)
	q, err := queue.New(st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	j, err := q.Reserve(t.Context(), queue.ReserveOptions{Tubes: []string{"beats"}, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("no tick's job within 10 s of serve starting: %v", err)
	}
	if string(j.Body) != "tick" {
		t.Fatalf("the tick's job holds %q", j.Body)
	}
	// The fire is on /metrics, with its lateness.
	deadline := time.Now().Add(10 * time.Second)
	for {
		m := scrape(t, p.httpAddr)
		if strings.Contains(m, `hourglass_schedule_fires_total{manual="false"} `) && strings.Contains(m, "hourglass_schedule_fire_lateness_seconds_count ") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no schedule fire on /metrics within 10 s of the job:\n%s", m)
		}
	}
}

// scrape returns the text of the server's /metrics.
func scrape(t *testing.T, httpAddr string) string {
	t.Helper()
	resp, err := http.Get("http://" + httpAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %d %v", resp.StatusCode, err)
	}
	return string(b)
}

// serve --schedules-file sets the file's schedules at start: again with
// the same file changes nothing, a changed definition is updated, the
// store's other schedules are left alone unless --schedules-prune, and a
// bad file fails serve at start, naming the schedule and the field, and
// changes nothing.
func TestServeSchedulesFile(t *testing.T) {
	dir := t.TempDir()
	store := filepath.Join(dir, "data")
	file := filepath.Join(dir, "schedules.json")
	write := func(text string) {
		t.Helper()
		if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const two = `{"schedules": [
  {"name": "nightly-report", "spec": "30 2 * * *", "zone": "Europe/Berlin",
   "job": {"tube": "reports", "body": "{\"kind\":\"nightly\"}", "ttr_ms": 600000},
   "misfire": {"policy": "catch_up", "n": 3}},
  {"name": "heartbeat", "spec": "@every 1h", "job": {"tube": "beats"}}
]}`
	write(two)
	version := func(env []string, name string) uint64 {
		t.Helper()
		var st struct {
			Version uint64 `json:"version"`
		}
		if err := json.Unmarshal([]byte(ok(t, env, "schedule", "get", "--json", name)), &st); err != nil || st.Version == 0 {
			t.Fatalf("schedule get %s: %v", name, err)
		}
		return st.Version
	}
	stop := func(p *serveProc) {
		t.Helper()
		p.signal(t, syscall.SIGTERM)
		if code := p.wait(t, 20*time.Second); code != 0 {
			t.Fatalf("serve exited %d", code)
		}
	}
	httpEnv := func(p *serveProc) []string { return []string{"HOURGLASS_HTTP=http://" + p.httpAddr} }

	p := startServe(t, nil, "--store", store, "--schedules-file", file)
	line := p.log.waitFor(t, "schedules file applied", 0)
	if logValue(line, "created") != "2" || logValue(line, "unchanged") != "0" {
		t.Errorf("first start: %q", line)
	}
	env := httpEnv(p)
	if st := kv(t, ok(t, env, "schedule", "get", "nightly-report")); st["zone"] != "Europe/Berlin" || st["misfire"] != "catch_up (at most 3 missed ticks)" {
		t.Errorf("nightly-report from the file: %v", st)
	}
	v1, h1 := version(env, "nightly-report"), version(env, "heartbeat")
	// A schedule set by other means is not the file's.
	ok(t, env, "schedule", "set", "other", "--spec", "@daily", "--tube", "x")
	stop(p)

	// The same file again: nothing changes.
	p = startServe(t, nil, "--store", store, "--schedules-file", file)
	if line := p.log.waitFor(t, "schedules file applied", 0); logValue(line, "unchanged") != "2" || logValue(line, "created") != "0" || logValue(line, "updated") != "0" {
		t.Errorf("second start: %q", line)
	}
	env = httpEnv(p)
	if v, h := version(env, "nightly-report"), version(env, "heartbeat"); v != v1 || h != h1 {
		t.Errorf("the same file changed the versions: %d → %d, %d → %d", v1, v, h1, h)
	}
	version(env, "other") // left alone
	stop(p)

	// A changed definition is updated; with --schedules-prune the others go.
	write(strings.Replace(two, `"@every 1h"`, `"@every 2h"`, 1))
	p = startServe(t, nil, "--store", store, "--schedules-file", file, "--schedules-prune")
	if line := p.log.waitFor(t, "schedules file applied", 0); logValue(line, "updated") != "1" || logValue(line, "unchanged") != "1" || logValue(line, "deleted") != "1" {
		t.Errorf("start with a changed file and --schedules-prune: %q", line)
	}
	env = httpEnv(p)
	if version(env, "heartbeat") == h1 || version(env, "nightly-report") != v1 {
		t.Error("the changed schedule was not updated, or the other changed")
	}
	expect(t, env, 3, []string{"schedule", "get", "other"}, "(not_found)")
	stop(p)

	// Bad files: serve fails at start naming the schedule and the field.
	good := `{"name": "new-one", "spec": "@hourly", "job": {"tube": "t"}}`
	for _, tc := range []struct {
		text string
		want []string
	}{
		{`{"schedules": [` + good + `, {"name": "bad", "spec": "@daily", "zone": "Mars/Olympus", "job": {"tube": "t"}}]}`, []string{`schedule "bad"`, "Zone", "Mars/Olympus"}},
		{`{"schedules": [` + good + `, {"name": "bad", "spec": "61 * * * *", "job": {"tube": "t"}}]}`, []string{`schedule "bad"`, "Spec", "minute"}},
		{`{"schedules": [` + good + `, {"name": "bad", "spec": "@daily", "job": {"tube": "t", "ttr_ms": 10}}]}`, []string{`schedule "bad"`, "job.ttr_ms"}},
		{`{"schedules": [` + good + `, {"name": "bad", "spec": "@daily", "misfire": {"policy": "later"}, "job": {"tube": "t"}}]}`, []string{`schedule "bad"`, "misfire.policy"}},
		{`{"schedules": [` + good + `, {"name": "bad", "spec": "@daily", "job": {"tube": "t"}, "every": 3}]}`, []string{`unknown field "every"`}},
		{`{"schedules": [` + good + `, ` + good + `]}`, []string{`schedule "new-one" is listed twice`}},
		{`{"schedules": [` + good + `, {"spec": "@daily", "job": {"tube": "t"}}]}`, []string{"schedule 2 (from 1) has no name"}},
		{"{\"schedules\": [\n" + good + ",\n}", []string{"line 3", "invalid character"}},
		{`{"schedules": [` + good + `, {"name": "nightly-report", "spec": "30 2 * * *", "job": {"tube": "elsewhere"}}]}`, []string{`schedule "nightly-report"`, "job.tube", "cannot change"}},
	} {
		write(tc.text)
		r := expect(t, nil, 1, []string{"serve", "--store", store, "--schedules-file", file, "--beanstalk-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0"}, append(tc.want, "--schedules-file")...)
		if strings.Contains(r.stderr, "hourglass serving") {
			t.Errorf("serve served with a bad file: %s", r.stderr)
		}
	}
	expect(t, nil, 2, []string{"serve", "--store", "mem://", "--schedules-prune"}, "--schedules-prune needs --schedules-file")
	expect(t, nil, 1, []string{"serve", "--store", "mem://", "--schedules-file", filepath.Join(dir, "missing.json")}, "--schedules-file", "no such file")

	// None of the bad files changed anything.
	p = startServe(t, nil, "--store", store)
	env = httpEnv(p)
	expect(t, env, 3, []string{"schedule", "get", "new-one"}, "(not_found)")
	if st := kv(t, ok(t, env, "schedule", "get", "nightly-report")); st["tube"] != "reports" || version(env, "nightly-report") != v1 {
		t.Errorf("nightly-report after the bad files: %v", st)
	}
}
