package memstore

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/queue"
)

// crashChildEnv tells the test binary to be the child of TestCrash: it
// names the data directory.
const crashChildEnv = "MEMSTORE_CRASH_CHILD_DIR"

const crashTube = "crash"

// The states the child reports, as the log will have them after a restart:
// a reserved job comes back ready.
const (
	stReady   = "r"
	stDelayed = "d"
	stBuried  = "b"
	stGone    = "x"
)

// TestCrash kills a writer with SIGKILL at random moments, over and over on
// the same directory, and checks after each restart that every
// acknowledged change is there and nothing acknowledged as gone came back.
//
// The child (this test binary, re-executed) opens the store with
// FsyncAlways and a small CompactBytes, so that snapshots are written and
// interrupted too, and runs 8 writers that put, delete, reserve, release
// with a delay, bury and kick. Before a call that changes a job it prints
// "B <id> <state>" and after the call returns "A <id> <state>" (for a put,
// "P <id> <state>"), with the state the job will have in the log. After
// the kill, a job may be in its last acknowledged state, or in the state of
// the call that was under way.
func TestCrash(t *testing.T) {
	if dir := os.Getenv(crashChildEnv); dir != "" {
		crashChild(dir)
		return
	}
	if testing.Short() {
		t.Skip("spawns processes; skipped in -short mode")
	}
	dir := t.TempDir()
	m := &crashModel{jobs: map[queue.ID]*crashJob{}}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	const rounds = 25
	totalAcked := 0
	for round := range rounds {
		// Every fifth round dies young, maybe while replaying the log.
		early := round%5 == 4
		lines, stderr := runChild(t, dir, rng, early)
		acked, err := m.apply(lines)
		if err != nil {
			t.Fatalf("round %d: %v\nchild stderr:\n%s", round, err, stderr)
		}
		totalAcked += acked
		if err := m.check(dir); err != nil {
			t.Fatalf("round %d (%d lines): %v\nchild stderr:\n%s", round, len(lines), err, stderr)
		}
	}
	live := 0
	for _, j := range m.jobs {
		if j.acked != stGone {
			live++
		}
	}
	var files []string
	if es, err := os.ReadDir(dir); err == nil {
		for _, e := range es {
			files = append(files, e.Name())
		}
	}
	t.Logf("%d rounds, %d acknowledged changes, %d live jobs; files at the end: %v", rounds, totalAcked, live, files)
	if totalAcked == 0 {
		t.Fatal("the child acknowledged nothing")
	}
}

// runChild runs one child until it is killed and returns its stdout lines.
func runChild(t *testing.T, dir string, rng *rand.Rand, early bool) ([]string, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrash$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan struct{})
	var lines []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line := sc.Text()
			if line == "ready" {
				close(ready)
				continue
			}
			lines = append(lines, line)
		}
	}()
	if early {
		time.Sleep(time.Duration(rng.IntN(30)) * time.Millisecond)
	} else {
		select {
		case <-ready:
		case <-done:
			cmd.Wait()
			t.Fatalf("the child ended before it was ready:\n%s", stderr.String())
		case <-time.After(60 * time.Second):
			cmd.Process.Kill()
			t.Fatalf("the child was not ready within a minute:\n%s", stderr.String())
		}
		time.Sleep(time.Duration(20+rng.IntN(181)) * time.Millisecond)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-done
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Exited() {
		t.Fatalf("the child was not killed: %v\n%s", err, stderr.String())
	}
	return lines, stderr.String()
}

type crashJob struct {
	acked   string // last acknowledged state
	pending string // state of a change under way; "" for none
}

type crashModel struct {
	jobs  map[queue.ID]*crashJob
	maxID queue.ID // largest ID known before the current round
}

// apply reads a child's lines into the model and returns how many changes
// were acknowledged.
func (m *crashModel) apply(lines []string) (int, error) {
	acked := 0
	for _, line := range lines {
		f := strings.Fields(line)
		if len(f) != 3 {
			return 0, fmt.Errorf("child said %q", line)
		}
		n, err := strconv.ParseUint(f[1], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("child said %q", line)
		}
		id, st := queue.ID(n), f[2]
		j := m.jobs[id]
		switch f[0] {
		case "P":
			if j != nil || id <= m.maxID {
				return 0, fmt.Errorf("put returned ID %d, which an earlier job had (largest known before this round: %d)", id, m.maxID)
			}
			m.jobs[id] = &crashJob{acked: st}
		case "B":
			if j == nil {
				return 0, fmt.Errorf("change of unknown job %d", id)
			}
			j.pending = st
		case "A":
			if j == nil {
				return 0, fmt.Errorf("change of unknown job %d", id)
			}
			j.acked, j.pending = st, ""
		default:
			return 0, fmt.Errorf("child said %q", line)
		}
		acked++
	}
	return acked, nil
}

// check opens the store and compares it with the model, then records what
// it found as the acknowledged state.
func (m *crashModel) check(dir string) error {
	s, err := Open(dir, nil)
	if err != nil {
		return fmt.Errorf("reopen: %w", err)
	}
	defer s.Close()
	ctx := context.Background()
	// The largest ID issued before this round: none of the jobs the model
	// forgot (deleted) may come back.
	before := m.maxID
	if err := s.CheckInvariants(ctx); err != nil {
		return err
	}
	for id, j := range m.jobs {
		got := stGone
		js, err := s.StatsJob(ctx, id)
		switch {
		case errors.Is(err, queue.ErrNotFound):
		case err != nil:
			return err
		case js.State == queue.Ready:
			got = stReady
		case js.State == queue.Delayed:
			got = stDelayed
		case js.State == queue.Buried:
			got = stBuried
		default:
			return fmt.Errorf("job %d is %v after a restart", id, js.State)
		}
		if got != j.acked && (j.pending == "" || got != j.pending) {
			return fmt.Errorf("job %d is %q after the restart; acknowledged %q, under way %q", id, got, j.acked, j.pending)
		}
		if got != stGone {
			if err := checkCrashBody(s, id); err != nil {
				return err
			}
		}
		j.acked, j.pending = got, ""
	}
	// Jobs the model does not know: puts under way when the child died, at
	// most one per writer.
	s.mu.Lock()
	var unknown []queue.ID
	for id := range s.queue.jobs {
		if m.jobs[id] == nil {
			unknown = append(unknown, id)
		}
	}
	m.maxID = max(m.maxID, s.queue.lastID)
	s.mu.Unlock()
	if len(unknown) > crashWriters {
		return fmt.Errorf("%d jobs nobody put: %v", len(unknown), unknown)
	}
	for _, id := range unknown {
		if id <= before {
			return fmt.Errorf("job %d is back, after it was deleted", id)
		}
		if err := checkCrashBody(s, id); err != nil {
			return err
		}
		js, _ := s.StatsJob(ctx, id)
		st := stReady
		if js.State == queue.Delayed {
			st = stDelayed
		}
		m.jobs[id] = &crashJob{acked: st}
	}
	for id, j := range m.jobs {
		m.maxID = max(m.maxID, id)
		if j.acked == stGone {
			delete(m.jobs, id) // gone for good: checked once
		}
	}
	return nil
}

func checkCrashBody(s *Store, id queue.ID) error {
	j, err := peek(context.Background(), s, id)
	if err != nil {
		return err
	}
	text, sum, ok := strings.Cut(string(j.Body), ":")
	if !ok || sum != fmt.Sprintf("%08x", crc32.ChecksumIEEE([]byte(text))) {
		return fmt.Errorf("job %d has a damaged body %q", id, j.Body)
	}
	return nil
}

const crashWriters = 8

// crashChild is the child process: it never returns, it is killed.
func crashChild(dir string) {
	s, err := Open(dir, &Options{Fsync: FsyncAlways, CompactBytes: 64 << 10})
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		os.Exit(2)
	}
	var outMu sync.Mutex
	say := func(format string, args ...any) {
		// One write per line: lines from several writers never mix.
		line := fmt.Appendf(nil, format+"\n", args...)
		outMu.Lock()
		os.Stdout.Write(line)
		outMu.Unlock()
	}
	fail := func(what string, err error) {
		fmt.Fprintln(os.Stderr, what+":", err)
		os.Exit(3)
	}
	say("ready")
	for w := range crashWriters {
		go func() {
			ctx := context.Background()
			owner := fmt.Sprintf("writer-%d", w)
			rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(w)))
			for {
				text := fmt.Sprintf("%016x-%d", rng.Uint64(), rng.IntN(1000))
				body := fmt.Sprintf("%s:%08x", text, crc32.ChecksumIEEE([]byte(text)))
				nj := queue.NewJob{Body: []byte(body), Priority: uint32(rng.IntN(3)), TTR: time.Minute}
				st := stReady
				if rng.IntN(2) == 0 {
					nj.Delay, st = time.Hour, stDelayed
				}
				res, err := s.Put(ctx, crashTube, []queue.NewJob{nj})
				if err != nil {
					fail("put", err)
				}
				id := res[0].ID
				say("P %d %s", id, st)
				change := func(st string, f func() error) {
					say("B %d %s", id, st)
					if err := f(); err != nil {
						fail("change", err)
					}
					say("A %d %s", id, st)
				}
				reserve := func() {
					// Logged as ready when the job was delayed.
					change(stReady, func() error { _, err := s.ReserveJob(ctx, owner, id); return err })
				}
				del := func() error {
					errs, err := s.Delete(ctx, owner, []queue.ID{id})
					if err == nil {
						err = errs[0]
					}
					return err
				}
				switch rng.IntN(6) {
				case 0:
					change(stGone, del)
					continue
				case 1:
					reserve()
					change(stDelayed, func() error { return s.Release(ctx, owner, id, 5, time.Hour, "") })
				case 2:
					reserve()
					change(stBuried, func() error { return s.Bury(ctx, owner, id, 7, "") })
					if rng.IntN(2) == 0 {
						change(stReady, func() error { return s.KickJob(ctx, id) })
					}
				case 3:
					reserve()
					change(stGone, del)
					continue
				case 4:
					reserve()
					change(stReady, func() error { return s.Release(ctx, owner, id, 1, 0, "") })
				case 5:
					// Left as it is, or deleted below.
				}
				// Most jobs go, so that the log outgrows the live data
				// and snapshots are written (and interrupted).
				if rng.IntN(8) != 0 {
					change(stGone, del)
				}
			}
		}()
	}
	select {}
}
