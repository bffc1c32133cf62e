//go:build unix

package main

import (
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// hourglass cancel of a job that hourglass work runs: the command gets
// SIGTERM, is killed after --grace when it ignores it, and the job is
// neither deleted nor given back by the worker (it is gone); a ready job
// is removed; an unknown one is a miss.
func TestCancelCommand(t *testing.T) {
	p := startServe(t, nil, "--store", "mem://")
	env := append(p.env, "HOURGLASS_HTTP=http://"+p.httpAddr)
	id := strings.TrimSpace(strings.TrimPrefix(strings.Split(ok(t, env, "put", "--tube", "cc", "slow"), "\n")[0], "id:"))
	script := `read body; trap "" TERM; echo "started $body $$"
sleep 60 & wait $!; while :; do sleep 1; done`
	w := startWork(t, env, "--tube", "cc", "--grace", "300ms", "--", "sh", "-c", script)
	line := w.stdout.waitFor(t, "started slow", 30*time.Second)
	pid, err := strconv.Atoi(strings.Fields(line)[2])
	if err != nil {
		t.Fatal(err)
	}
	if out := ok(t, env, "cancel", "--reason", "account closed", id); out != "cancelled job "+id+" (it was reserved: its holder was told)\n" {
		t.Errorf("cancel printed %q", out)
	}
	w.stderr.waitFor(t, "job "+id+": cancelled (account closed); stopping sh", 30*time.Second)
	w.stderr.waitFor(t, "still runs 300ms after SIGTERM; killing it", 30*time.Second)
	w.stderr.waitFor(t, "job "+id+": cancelled; sh stopped", 30*time.Second)
	if live := liveInGroup(t, pid); len(live) > 0 {
		t.Errorf("processes %v of the cancelled command's group still run", live)
		syscall.Kill(-pid, syscall.SIGKILL)
	}
	expect(t, env, 3, []string{"peek", id}, "not found")
	expect(t, env, 3, []string{"stats", "--tube", "cc"}, "tube cc not found") // its one job is gone, not back in ready

	ready := strings.TrimSpace(strings.TrimPrefix(strings.Split(ok(t, env, "put", "--tube", "other", "x"), "\n")[0], "id:"))
	if out := ok(t, env, "cancel", "--json", ready); out != `{"id":`+ready+`,"was":"ready"}`+"\n" {
		t.Errorf("cancel --json printed %q", out)
	}
	expect(t, env, 3, []string{"cancel", ready}, "job "+ready+" not found")
	if code := w.stop(t, 30*time.Second); code != 0 {
		t.Errorf("work exited %d after SIGTERM, want 0", code)
	}
}
