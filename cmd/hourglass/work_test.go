//go:build unix

package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// jobView is what peek --http --json prints of a job.
type jobView struct {
	ID        uint64 `json:"id"`
	State     string `json:"state"`
	Priority  uint32 `json:"priority"`
	Reserves  uint32 `json:"reserves"`
	LastError string `json:"last_error"`
}

func peekJob(t *testing.T, env []string, id string) jobView {
	t.Helper()
	var v jobView
	if err := json.Unmarshal([]byte(ok(t, env, "peek", "--json", id)), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// A job reserved with --keep stays reserved after the command, and later
// commands touch, release, bury and delete it under its lease; release and
// bury keep its priority and record the reason.
func TestLifecycleCommands(t *testing.T) {
	p := startServe(t, nil, "--store", "mem://")
	env := append(p.env, "HOURGLASS_HTTP=http://"+p.httpAddr)
	ok(t, env, "put", "--tube", "life", "--priority", "7", "hello")

	kept := func() (id, lease string) {
		t.Helper()
		var r struct {
			Lease string `json:"lease"`
			Job   struct {
				ID uint64 `json:"id"`
			} `json:"job"`
		}
		if err := json.Unmarshal([]byte(ok(t, env, "reserve", "--keep", "--json", "--tube", "life", "--timeout", "5")), &r); err != nil {
			t.Fatal(err)
		}
		return strconv.FormatUint(r.Job.ID, 10), r.Lease
	}
	id, lease := kept()
	if v := peekJob(t, env, id); v.State != "reserved" {
		t.Fatalf("after reserve --keep ended: %+v, want reserved", v)
	}
	withLease := append(env, "HOURGLASS_LEASE="+lease)
	ok(t, withLease, "touch", id)
	if out := ok(t, withLease, "release", "--reason", "smtp: 451 later", id); out != "released job "+id+"\n" {
		t.Errorf("release printed %q", out)
	}
	if v := peekJob(t, env, id); v.State != "ready" || v.Priority != 7 || v.LastError != "smtp: 451 later" {
		t.Errorf("after release: %+v, want ready, priority 7 kept, the reason as last error", v)
	}
	expect(t, withLease, 1, []string{"touch", id}, "not reserved under this lease")

	// Text output puts the ID and the lease first.
	out := ok(t, env, "reserve", "--keep", "--tube", "life", "--timeout", "5")
	lines := strings.Split(out, "\n")
	if len(lines) < 2 || !strings.HasPrefix(lines[0], "id:") || !strings.HasPrefix(lines[1], "lease:") {
		t.Fatalf("reserve --keep printed %q, want id: and lease: first", out)
	}
	lease = strings.TrimSpace(strings.TrimPrefix(lines[1], "lease:"))
	ok(t, env, "bury", "--lease", lease, "--reason", "no such customer", id)
	if v := peekJob(t, env, id); v.State != "buried" || v.Priority != 7 || v.LastError != "no such customer" {
		t.Errorf("after bury: %+v, want buried, priority 7 kept, the reason as last error", v)
	}
	ok(t, env, "kick", "--job", id)
	id, lease = kept()
	ok(t, env, "release", "--lease", lease, "--priority", "2", "--delay", "1m", id)
	if v := peekJob(t, env, id); v.State != "delayed" || v.Priority != 2 {
		t.Errorf("after release --priority 2 --delay 1m: %+v", v)
	}

	// Exit statuses: usage 2, not there 3, refused 1.
	expect(t, env, 2, []string{"bury", id}, "needs the job's lease")
	expect(t, env, 2, []string{"release", "--lease", lease, "--delay", "5x", id}, `--delay "5x": want a duration such as`)
	expect(t, env, 2, []string{"reserve", "--keep", "--delete"}, "exclude each other")
	expect(t, env, 3, []string{"bury", "--lease", lease, "999"}, "job 999 not found")
	expect(t, env, 3, []string{"reserve", "--keep", "--tube", "empty", "--timeout", "0"}, "no job in tube empty")
	expect(t, env, 1, []string{"touch", "--lease", lease, id}, "not reserved under this lease")

	// delete --lease deletes a job held under the lease.
	ok(t, env, "put", "--tube", "del", "x")
	var r struct {
		Lease string `json:"lease"`
		Job   struct {
			ID uint64 `json:"id"`
		} `json:"job"`
	}
	json.Unmarshal([]byte(ok(t, env, "reserve", "--keep", "--json", "--tube", "del", "--timeout", "5")), &r)
	did := strconv.FormatUint(r.Job.ID, 10)
	expect(t, env, 3, []string{"delete", did}, "not found (or reserved by another connection)")
	ok(t, env, "delete", "--lease", r.Lease, did)
	expect(t, env, 3, []string{"peek", did}, "not found")
}

// workProc is a running "hourglass work".
type workProc struct {
	cmd            *exec.Cmd
	stdout, stderr *lineLog
	done           chan error
}

func startWork(t *testing.T, env []string, args ...string) *workProc {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"work"}, args...)...)
	cmd.Env = append(baseEnv(), env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w := &workProc{cmd: cmd, stdout: newLineLog(), stderr: newLineLog(), done: make(chan error, 1)}
	read := make(chan struct{})
	go func() { w.stdout.read(stdout); read <- struct{}{} }()
	go func() {
		w.stderr.read(stderr)
		<-read
		w.done <- cmd.Wait()
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGKILL)
		if strings.Contains(w.stderr.String(), "WARNING: DATA RACE") {
			t.Error("the race detector found a data race in work")
		}
		if t.Failed() {
			t.Logf("work stdout:\n%s\nstderr:\n%s", w.stdout, w.stderr)
		}
	})
	return w
}

// stop sends SIGTERM and returns the exit code, within timeout.
func (w *workProc) stop(t *testing.T, timeout time.Duration) int {
	t.Helper()
	if err := w.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-w.done:
		if ee, isExit := err.(*exec.ExitError); isExit {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-time.After(timeout):
		t.Fatalf("work did not exit within %v of SIGTERM", timeout)
	}
	return -1
}

// work runs the command per job with the body on standard input: exit 0
// finishes the job (a delete, in a tube without a retention), a failure releases it with a backoff and, on the last
// attempt, buries it with the end of standard error as its last error,
// keeping its priority.
func TestWorkCommand(t *testing.T) {
	p := startServe(t, nil, "--store", "mem://")
	env := append(p.env, "HOURGLASS_HTTP=http://"+p.httpAddr)
	good := strings.TrimSpace(strings.Split(ok(t, env, "put", "--tube", "sh", "--priority", "3", "good"), "\n")[0])
	bad := strings.TrimSpace(strings.Split(ok(t, env, "put", "--tube", "sh", "--priority", "4", "bad"), "\n")[0])
	good, bad = strings.TrimSpace(strings.TrimPrefix(good, "id:")), strings.TrimSpace(strings.TrimPrefix(bad, "id:"))

	script := `read body; echo "ran $body $HOURGLASS_JOB_ID try $HOURGLASS_JOB_ATTEMPT"
if [ "$body" = bad ]; then echo "lots of noise" >&2; echo "fatal: cannot frobnicate $body" >&2; exit 3; fi`
	w := startWork(t, env, "--tube", "sh", "--concurrency", "2", "--attempts", "2", "--backoff", "10ms", "--", "sh", "-c", script)
	w.stdout.waitFor(t, "ran good "+good+" try 1", 30*time.Second)
	w.stdout.waitFor(t, "ran bad "+bad+" try 2", 30*time.Second)
	w.stderr.waitFor(t, "job "+bad+": exit status 3 on attempt 2 of 2; buried", 30*time.Second)
	w.stderr.waitFor(t, "job "+good+": done; finished with its output (", 30*time.Second)
	expect(t, env, 3, []string{"peek", good}, "not found")
	v := peekJob(t, env, bad)
	if v.State != "buried" || v.Priority != 4 || !strings.HasSuffix(v.LastError, "fatal: cannot frobnicate bad") ||
		!strings.HasPrefix(v.LastError, "exit status 3: ") {
		t.Errorf("the failed job: %+v, want buried with priority 4 and the end of its standard error as last error", v)
	}
	if code := w.stop(t, 30*time.Second); code != 0 {
		t.Errorf("work exited %d after SIGTERM, want 0", code)
	}

	// Usage errors.
	expect(t, env, 2, []string{"work", "--tube", "sh"}, "needs the command to run")
	expect(t, env, 2, []string{"work", "--concurrency", "0", "--", "true"}, "--concurrency 0")
}

// SIGTERM stops work: a running command gets SIGTERM, is killed after
// --grace if it ignores it, and its job goes back to ready with its
// priority.
func TestWorkSIGTERM(t *testing.T) {
	p := startServe(t, nil, "--store", "mem://")
	env := append(p.env, "HOURGLASS_HTTP=http://"+p.httpAddr)
	ok(t, env, "put", "--tube", "slow", "--priority", "9", "a")
	ok(t, env, "put", "--tube", "slow", "--priority", "9", "b")
	// One command ends on SIGTERM, the other ignores it.
	// The line "started" comes after the trap, so SIGTERM never finds b
	// before it ignores it.
	script := `read body; if [ "$body" = b ]; then trap "" TERM; fi
echo "started $body $$"
sleep 60 & wait $!; while :; do sleep 1; done`
	w := startWork(t, env, "--tube", "slow", "--concurrency", "2", "--grace", "300ms", "--", "sh", "-c", script)
	var pids []int
	for _, b := range []string{"a", "b"} {
		line := w.stdout.waitFor(t, "started "+b, 30*time.Second)
		pid, err := strconv.Atoi(strings.Fields(line)[2])
		if err != nil {
			t.Fatal(err)
		}
		pids = append(pids, pid)
	}
	if code := w.stop(t, 30*time.Second); code != 0 {
		t.Errorf("work exited %d after SIGTERM, want 0", code)
	}
	if !strings.Contains(w.stderr.String(), "still runs 300ms after SIGTERM; killing it") {
		t.Errorf("no word of the kill of the command that ignored SIGTERM:\n%s", w.stderr)
	}
	for _, pid := range pids {
		if live := liveInGroup(t, pid); len(live) > 0 {
			t.Errorf("processes %v of the group of command %d still run after work exited", live, pid)
			syscall.Kill(-pid, syscall.SIGKILL)
		}
	}
	out := ok(t, env, "stats", "--tube", "slow")
	if !strings.Contains(out, "current-jobs-ready:    2") || !strings.Contains(out, "current-jobs-reserved: 0") {
		t.Errorf("after the stop: %s, want both jobs ready again", out)
	}
	for _, id := range []string{"1", "2"} {
		if v := peekJob(t, env, id); v.State != "ready" || v.Priority != 9 {
			t.Errorf("job %s after the stop: %+v, want ready with priority 9", id, v)
		}
	}
}

// liveInGroup lists the processes of process group pgid that are not
// zombies (an exited process whose parent has not reaped it yet), from
// /proc.
func liveInGroup(t *testing.T, pgid int) []int {
	t.Helper()
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil || len(stats) == 0 {
		t.Fatalf("reading /proc: %v", err)
	}
	var live []int
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // gone meanwhile
		}
		// pid (comm) state ppid pgrp …; comm may hold spaces.
		rest := string(b[strings.LastIndexByte(string(b), ')')+2:])
		fields := strings.Fields(rest)
		if len(fields) < 3 || fields[2] != strconv.Itoa(pgid) || fields[0] == "Z" {
			continue
		}
		pid, _ := strconv.Atoi(strings.Fields(string(b))[0])
		live = append(live, pid)
	}
	return live
}

// Bad flag values are answered with what the flag takes; a bare number
// where the flag counts whole seconds is seconds.
func TestFlagErrorsInWords(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"put", "--delay", "5x", "x"}, `--delay "5x": want a duration such as 30s, 5m or 1h30m (or a whole number of seconds)`},
		{[]string{"put", "--priority", "-3", "x"}, `--priority "-3": want a whole number, 0 or more`},
		{[]string{"hash", "get", "--ttl", "5", "h", "f"}, "--ttl 5: want a duration with its unit, such as 5s, 5ms or 5m"},
		{[]string{"put", "--colour", "x"}, "unknown flag --colour"},
		{[]string{"limit", "allow", "--rate", "x", "k"}, "unknown flag --rate"},
		{[]string{"touch", "--lease", "hgl_x", "1"}, `--lease "hgl_x" is not a lease`},
	} {
		r := expect(t, nil, 2, c.args, c.want)
		if strings.Contains(r.stderr, "parse error") || strings.Contains(r.stderr, "flag provided") {
			t.Errorf("hourglass %q: %s", c.args, r.stderr)
		}
	}
	p := startServe(t, nil, "--store", "mem://")
	ok(t, p.env, "put", "--tube", "d", "--delay", "5", "x")
	if out := ok(t, p.env, "stats", "--job", "1"); !strings.Contains(out, "delay:     5\n") {
		t.Errorf("put --delay 5: stats-job says\n%s\nwant a delay of 5 seconds", out)
	}
}

// work touches a job while its command runs past the TTR, so the
// reservation never times out and the job is deleted once it succeeds.
func TestWorkTouches(t *testing.T) {
	p := startServe(t, nil, "--store", "mem://")
	env := append(p.env, "HOURGLASS_HTTP=http://"+p.httpAddr)
	ok(t, env, "put", "--tube", "long", "--ttr", "1s", "x")
	w := startWork(t, env, "--tube", "long", "--", "sh", "-c", "sleep 2.5; echo finished")
	w.stdout.waitFor(t, "finished", 30*time.Second)
	w.stderr.waitFor(t, "job 1: done; finished with its output (9 bytes)", 30*time.Second)
	if code := w.stop(t, 30*time.Second); code != 0 {
		t.Errorf("work exited %d", code)
	}
	expect(t, env, 3, []string{"peek", "1"}, "not found")
	var timeouts string
	for _, l := range strings.Split(ok(t, env, "stats"), "\n") {
		if f := strings.Fields(l); len(f) == 2 && f[0] == "job-timeouts:" {
			timeouts = f[1]
		}
	}
	if timeouts != "0" {
		t.Errorf("job-timeouts %q, want 0: the touches did not keep the job", timeouts)
	}
}

// A reserve the server refuses (here: no token) stops work with exit 1.
func TestWorkRefused(t *testing.T) {
	p := startServe(t, []string{"HOURGLASS_AUTH_TOKEN=tok"}, "--store", "mem://")
	expect(t, []string{"HOURGLASS_HTTP=http://" + p.httpAddr}, 1, []string{"work", "--", "true"}, "reserve: missing or wrong bearer token (unauthorized)")
}

// work finishes a job whose command exits 0 with the command's standard
// output as its result: a tube with a retention keeps it, and hourglass
// job shows it; output beyond 64 KiB is cut to its first 64 KiB, and a
// command that writes nothing finishes the job without a result.
func TestWorkResult(t *testing.T) {
	p := startServe(t, nil, "--store", "mem://")
	env := append(p.env, "HOURGLASS_HTTP=http://"+p.httpAddr)
	ok(t, env, "api", "PUT", "/v1/tubes/res/retention", `{"retention_ms":3600000}`)
	id := func(out string) string {
		return strings.TrimSpace(strings.TrimPrefix(strings.Split(out, "\n")[0], "id:"))
	}
	small := id(ok(t, env, "put", "--tube", "res", "small"))
	big := id(ok(t, env, "put", "--tube", "res", "big"))
	quiet := id(ok(t, env, "put", "--tube", "res", "quiet"))
	script := `read body
case "$body" in
small) printf '{"ok":true,"job":%s}' "$HOURGLASS_JOB_ID" ;;
big) head -c 70000 /dev/zero | tr '\0' x ;;
esac`
	w := startWork(t, env, "--tube", "res", "--", "sh", "-c", script)
	w.stderr.waitFor(t, "job "+small+": done; finished with its output (", 30*time.Second)
	w.stderr.waitFor(t, "job "+big+": done; finished with the first 65536 of the 70000 bytes of its output as its result", 30*time.Second)
	w.stderr.waitFor(t, "job "+quiet+": done; finished (no output, no result)", 30*time.Second)
	if code := w.stop(t, 30*time.Second); code != 0 {
		t.Errorf("work exited %d after SIGTERM, want 0", code)
	}
	m := decode(t, ok(t, env, "job", "--json", small))
	if want := base64.StdEncoding.EncodeToString([]byte(`{"ok":true,"job":` + small + `}`)); m["state"] != "finished" || m["result_base64"] != want {
		t.Errorf("the job whose command printed JSON: %v, want finished with result %s", m, want)
	}
	m = decode(t, ok(t, env, "job", "--json", big))
	if r, _ := base64.StdEncoding.DecodeString(fmt.Sprint(m["result_base64"])); m["state"] != "finished" || string(r) != strings.Repeat("x", 65536) {
		t.Errorf("the job whose command printed 70,000 bytes: state %v, result of %d bytes, want its first 65536", m["state"], len(r))
	}
	m = decode(t, ok(t, env, "job", "--json", quiet))
	if _, has := m["result_base64"]; m["state"] != "finished" || has {
		t.Errorf("the job whose command printed nothing: %v, want finished without a result", m)
	}
}
