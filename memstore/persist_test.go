package memstore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hourglass-io/hourglass/internal/testkit/storetest"
	"github.com/hourglass-io/hourglass/queue"
)

var epoch = time.Date(2030, time.January, 2, 3, 4, 5, 0, time.UTC)

// testTrace is a trace context a job can carry (docs/tracing.md).
const testTrace = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

func openT(t *testing.T, dir string, opts *Options) *Store {
	t.Helper()
	s, err := Open(dir, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s
}

func closeT(t *testing.T, s *Store) {
	t.Helper()
	if err := s.CheckInvariants(context.Background()); err != nil {
		t.Errorf("invariants: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// must returns v, panicking on an error (a failed test, with its stack).
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func ok(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func put(t *testing.T, s *Store, tube string, j queue.NewJob) queue.ID {
	t.Helper()
	if j.TTR == 0 {
		j.TTR = time.Minute
	}
	return must(s.Put(context.Background(), tube, []queue.NewJob{j}))[0].ID
}

// view is what a restart must preserve of a job.
type view struct {
	Tube                   string
	State                  queue.State
	Pri                    uint32
	At                     int64 // due time (delayed) or bury sequence (buried)
	TTR, Delay, Created    int64
	Key, Body, Trace       string
	Releases, Buries, Kick uint32
	// History that every change of the job logs as it happens (the last
	// reserve and timeout are logged only with the next change).
	ReleasedAt, BuriedAt, KickedAt, LastErrorAt time.Time
	LastError                                   string
	Errors                                      []queue.AttemptError
}

type tubeView struct {
	Name                       string
	TotalJobs, Deletes, Pauses int64
	Paused                     bool
	PauseLen, PauseUntil       int64
	Buried                     []queue.ID // oldest first
}

type snapshotView struct {
	LastID queue.ID
	Jobs   map[queue.ID]view
	Tubes  []tubeView // in creation order
}

// durable returns what s should look like after a restart: reserved jobs
// ready, counters that are not logged left out.
func durable(s *Store) snapshotView {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := snapshotView{LastID: s.queue.lastID, Jobs: map[queue.ID]view{}}
	for id, j := range s.queue.jobs {
		state, at := durableState(j)
		var h queue.JobStats
		j.addHistory(&h)
		st.Jobs[id] = view{
			Tube: j.tube.name, State: state, Pri: j.pri, At: at, TTR: j.ttr, Delay: j.delay, Created: j.created,
			Key: j.key(), Body: string(j.body), Trace: j.traceContext(), Releases: j.releases, Buries: j.buries, Kick: j.kicks,
			ReleasedAt: h.ReleasedAt, BuriedAt: h.BuriedAt, KickedAt: h.KickedAt, LastErrorAt: h.LastErrorAt, LastError: h.LastError,
			Errors: h.Errors,
		}
	}
	for _, t := range s.queue.tubesInOrder() {
		b := slices.Clone(t.buried.s)
		slices.SortFunc(b, func(x, y *job) int { return int(x.at - y.at) })
		tv := tubeView{Name: t.name, TotalJobs: t.totalJobs, Deletes: t.deletes, Pauses: t.pauses, Paused: t.paused, PauseLen: t.pauseLen, PauseUntil: t.pauseUntil}
		for _, j := range b {
			tv.Buried = append(tv.Buried, j.id)
		}
		st.Tubes = append(st.Tubes, tv)
	}
	return st
}

func TestRestart(t *testing.T) {
	for _, snapshot := range []bool{false, true} {
		t.Run(fmt.Sprintf("snapshot=%v", snapshot), func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			clock := storetest.NewClock(epoch)
			s := openT(t, dir, &Options{Clock: clock.Now})
			ready := put(t, s, "a", queue.NewJob{Body: []byte("ready"), Priority: 5})
			delayed := put(t, s, "a", queue.NewJob{Body: []byte("delayed"), Delay: 100 * time.Second, TraceContext: testTrace})
			reserved := put(t, s, "b", queue.NewJob{Body: []byte("reserved"), UniqueKey: "k1", TraceContext: testTrace + ";v=1"})
			must(s.ReserveJob(ctx, "w", reserved))
			fromBuried := put(t, s, "b", queue.NewJob{Body: []byte("reserved from buried")})
			must(s.ReserveJob(ctx, "w", fromBuried))
			ok(t, s.Bury(ctx, "w", fromBuried, 3, ""))
			must(s.ReserveJob(ctx, "w", fromBuried))
			var buried []queue.ID
			for i := range 3 {
				id := put(t, s, "c", queue.NewJob{Body: fmt.Appendf(nil, "buried %d", i)})
				buried = append(buried, id)
			}
			for _, id := range slices.Backward(buried) {
				must(s.ReserveJob(ctx, "w", id))
				ok(t, s.Bury(ctx, "w", id, 9, ""))
			}
			released := put(t, s, "a", queue.NewJob{Body: []byte("released")})
			must(s.ReserveJob(ctx, "w", released))
			clock.Advance(time.Second)
			ok(t, s.Release(ctx, "w", released, 8, 30*time.Second, ""))
			gone := put(t, s, "d", queue.NewJob{Body: []byte("gone")})
			errs := must(s.Delete(ctx, "w", []queue.ID{gone}))
			ok(t, errs[0])
			ok(t, s.PauseTube(ctx, "e", time.Minute))
			ok(t, s.PauseTube(ctx, "a", 40*time.Second))
			if snapshot {
				ok(t, s.compactNow())
				// And a little after the snapshot.
				ok(t, s.PauseTube(ctx, "a", 50*time.Second))
			}
			want := durable(s)
			closeT(t, s)

			// 10 s later.
			clock.Advance(10 * time.Second)
			s = openT(t, dir, &Options{Clock: clock.Now})
			defer closeT(t, s)
			if diff := cmp.Diff(want, durable(s)); diff != "" {
				t.Errorf("state after the restart (-want +got):\n%s", diff)
			}
			st := func(id queue.ID) queue.JobStats { return must(s.StatsJob(ctx, id)) }
			if js := st(ready); js.State != queue.Ready || js.Priority != 5 {
				t.Errorf("ready job: %+v", js)
			}
			if js := st(delayed); js.State != queue.Delayed || js.TimeLeft != 89*time.Second {
				t.Errorf("delayed job: %+v, want 89s left (absolute due time)", js)
			}
			if js := st(reserved); js.State != queue.Ready {
				t.Errorf("reserved job came back %v, want ready", js.State)
			}
			if js := st(fromBuried); js.State != queue.Ready || js.Buries != 1 {
				t.Errorf("job reserved from buried: %+v, want ready", js)
			}
			if js := st(released); js.State != queue.Delayed || js.TimeLeft != 20*time.Second || js.Priority != 8 || js.Releases != 1 {
				t.Errorf("released job: %+v", js)
			}
			if _, err := peek(ctx, s, gone); !errors.Is(err, queue.ErrNotFound) {
				t.Errorf("deleted job: %v", err)
			}
			// Buried order survives: the last one buried first.
			for _, id := range slices.Backward(buried) {
				j := must(peekState(ctx, s, "c", queue.Buried))
				if j.ID != id {
					t.Fatalf("PeekBuried = %d, want %d", j.ID, id)
				}
				must(s.Kick(ctx, "c", 1))
			}
			// The unique key is still held.
			r := must(s.Put(ctx, "b", []queue.NewJob{{Body: []byte("dup"), UniqueKey: "k1", TTR: time.Second}}))
			if !r[0].Duplicate || r[0].ID != reserved {
				t.Errorf("put with a held key: %+v", r[0])
			}
			// IDs go on.
			if id := put(t, s, "a", queue.NewJob{}); id != gone+1 {
				t.Errorf("next ID %d, want %d", id, gone+1)
			}
			if ts := must(s.StatsTube(ctx, "a")); ts.PauseTimeLeft <= 0 {
				t.Errorf("tube a: %+v, want still paused", ts)
			}
			if got, want := must(s.Tubes(ctx)), []string{"a", "b", "c", "e"}; !slices.Equal(got, want) {
				t.Errorf("Tubes = %v, want %v", got, want)
			}
		})
	}
}

// TestIDsAfterSnapshot: the ID counter survives a snapshot taken after the
// job with the largest ID was deleted.
func TestIDsAfterSnapshot(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openT(t, dir, nil)
	var last queue.ID
	for range 5 {
		last = put(t, s, "t", queue.NewJob{})
		must(s.Delete(ctx, "", []queue.ID{last}))
	}
	ok(t, s.compactNow())
	closeT(t, s)
	s = openT(t, dir, nil)
	defer closeT(t, s)
	if id := put(t, s, "t", queue.NewJob{}); id != last+1 {
		t.Errorf("ID after restart %d, want %d", id, last+1)
	}
}

// TestRandomRestart drives a store with random operations on a manual
// clock, snapshots included, and checks after each restart that the state
// is exactly what the log promised.
func TestRandomRestart(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(1, 2))
	clock := storetest.NewClock(epoch)
	opts := &Options{Clock: clock.Now, Fsync: FsyncNo, CompactBytes: 2 << 10}
	tubes := []string{"t0", "t1", "t2", "t3"}
	owners := []string{"o0", "o1"}
	holders := []string{"s0/c", "s1/c", "s1/d"}
	var ids []queue.ID
	pick := func() queue.ID {
		if len(ids) == 0 || rng.IntN(20) == 0 {
			return queue.ID(rng.IntN(1000) + 1)
		}
		return ids[rng.IntN(len(ids))]
	}
	dur := func() time.Duration {
		return []time.Duration{0, 0, time.Millisecond, time.Second, 5 * time.Second, time.Minute}[rng.IntN(6)]
	}
	rounds, steps := 20, 300
	if testing.Short() {
		rounds = 5
	}
	for round := range rounds {
		s := openT(t, dir, opts)
		for range steps {
			tube, owner := tubes[rng.IntN(len(tubes))], owners[rng.IntN(len(owners))]
			switch rng.IntN(16) {
			case 0, 1, 2:
				var jobs []queue.NewJob
				for range 1 + rng.IntN(3) {
					nj := queue.NewJob{Body: fmt.Appendf(nil, "%d", rng.Uint32()), Priority: uint32(rng.IntN(2000)), Delay: dur(), TTR: time.Second * time.Duration(1+rng.IntN(3))}
					if rng.IntN(3) == 0 {
						nj.TraceContext = testTrace
					}
					if rng.IntN(4) == 0 {
						nj.UniqueKey = fmt.Sprint("k", rng.IntN(10))
					}
					jobs = append(jobs, nj)
				}
				for _, r := range must(s.Put(ctx, tube, jobs)) {
					ids = append(ids, r.ID)
				}
			case 3, 4:
				must(s.Reserve(ctx, queue.ReserveRequest{Owner: owner, Tubes: tubes[:1+rng.IntN(len(tubes))], Max: 1 + rng.IntN(3), Delete: []queue.ID{pick()}}))
			case 5:
				s.ReserveJob(ctx, owner, pick())
			case 6:
				must(s.Delete(ctx, owner, []queue.ID{pick(), pick()}))
			case 7:
				s.Release(ctx, owner, pick(), int64(rng.IntN(2001))-1, dur(), []string{"", "release " + owner}[rng.IntN(2)])
			case 8:
				s.Bury(ctx, owner, pick(), int64(rng.IntN(2001))-1, []string{"", "bury " + owner}[rng.IntN(2)])
			case 9:
				s.Touch(ctx, owner, pick())
			case 10:
				must(s.Kick(ctx, tube, rng.IntN(3)))
				s.KickJob(ctx, pick())
			case 11:
				ok(t, s.PauseTube(ctx, tube, dur()))
			case 12:
				must(s.Unreserve(ctx, owner, []queue.ID{pick(), pick()}))
			case 13:
				clock.Advance(time.Duration(rng.IntN(3000)) * time.Millisecond)
			case 14, 15:
				// References, as beanstalkd connections hold tubes.
				n := 1 + rng.IntN(2)
				if rng.IntN(2) == 0 {
					n = -n
				}
				ok(t, s.Hold(ctx, holders[rng.IntN(len(holders))], tube, n))
			}
		}
		if err := s.CheckInvariants(ctx); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if round%2 == 1 {
			// A restart ends every reference, as if the holders had
			// let go first: compare with that. (Even rounds keep them
			// up to the close, and check the result's invariants.)
			for _, h := range holders {
				for _, tube := range tubes {
					ok(t, s.Hold(ctx, h, tube, -1000))
				}
			}
		}
		must(s.Stats(ctx)) // applies what the clock made due, as Open will
		want := durable(s)
		closeT(t, s)
		s = openT(t, dir, opts)
		if round%2 == 1 {
			if diff := cmp.Diff(want, durable(s)); diff != "" {
				t.Fatalf("round %d: state after the restart (-want +got):\n%s", round, diff)
			}
		}
		closeT(t, s)
		if round%2 == 0 {
			// The references that Open ended are logged: a second
			// restart finds what the first left.
			s = openT(t, dir, opts)
			want := durable(s)
			closeT(t, s)
			s = openT(t, dir, opts)
			if diff := cmp.Diff(want, durable(s)); diff != "" {
				t.Fatalf("round %d: state after a second restart (-want +got):\n%s", round, diff)
			}
			closeT(t, s)
		}
	}
	files, _ := os.ReadDir(dir)
	if len(files) > 3 {
		t.Errorf("%d files in the directory at the end, want a snapshot, a segment and LOCK", len(files))
	}
}

func dirSize(t *testing.T, dir string) int64 {
	t.Helper()
	n := dirSizeOf(dir)
	if n < 0 {
		t.Fatalf("cannot read %s", dir)
	}
	return n
}

// dirSizeOf returns the bytes of the files in dir, or -1.
func dirSizeOf(dir string) int64 {
	var n int64
	es, err := os.ReadDir(dir)
	if err != nil {
		return -1
	}
	for _, e := range es {
		fi, err := e.Info()
		if err != nil {
			return -1
		}
		n += fi.Size()
	}
	return n
}

// TestChurn: a million jobs put and deleted leave the directory at a few
// MB. Puts and deletes go 100 at a time (the log has one record per job
// either way) so that the test takes seconds under the race detector.
func TestChurn(t *testing.T) {
	ctx := context.Background()
	total := 1_000_000
	if testing.Short() {
		total = 100_000
	}
	const batch = 100
	dir := t.TempDir()
	s := openT(t, dir, &Options{Fsync: FsyncNo})
	body := []byte(strings.Repeat("x", 100))
	jobs := make([]queue.NewJob, batch)
	for i := range jobs {
		jobs[i] = queue.NewJob{Body: body, TTR: time.Minute}
	}
	ids := make([]queue.ID, batch)
	var peak int64
	for i := 0; i < total; i += batch {
		for k, r := range must(s.Put(ctx, "churn", jobs)) {
			ids[k] = r.ID
		}
		must(s.Delete(ctx, "", ids))
		if i%(total/20) == 0 {
			peak = max(peak, dirSize(t, dir))
		}
	}
	closeT(t, s)
	size := dirSize(t, dir)
	t.Logf("%d jobs put and deleted: %d bytes on disk at the end, %d at most while running", total, size, peak)
	if limit := int64(3 * DefaultCompactBytes); size > limit || peak > limit {
		t.Errorf("directory holds %d bytes (peak %d), want at most %d", size, peak, limit)
	}
	s = openT(t, dir, nil)
	defer closeT(t, s)
	if st := must(s.Stats(ctx)); st.Ready != 0 {
		t.Errorf("after the churn: %+v", st)
	}
	if id := put(t, s, "churn", queue.NewJob{}); id != queue.ID(total+1) {
		t.Errorf("next ID %d, want %d", id, total+1)
	}
}

// TestReleaseLoop: a job released with a delay again and again does not
// make the directory grow without bound (beanstalkd issue #622).
func TestReleaseLoop(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	clock := storetest.NewClock(epoch)
	s := openT(t, dir, &Options{Clock: clock.Now, Fsync: FsyncNo, CompactBytes: 64 << 10})
	id := put(t, s, "loop", queue.NewJob{Body: []byte("again")})
	n := 100_000 // about 4 MB of release records without compaction
	if testing.Short() {
		n = 30_000
	}
	for range n {
		must(s.ReserveJob(ctx, "w", id))
		ok(t, s.Release(ctx, "w", id, 0, time.Second, ""))
	}
	closeT(t, s)
	// Compaction runs in the background while releases go on, so the log
	// behind the last snapshot can pass the threshold by what a busy machine
	// writes during one snapshot; the bound is what matters: it does not
	// grow with n.
	if size := dirSize(t, dir); size > 6*(64<<10) {
		t.Errorf("after %d releases the directory holds %d bytes", n, size)
	}
	s = openT(t, dir, &Options{Clock: clock.Now})
	defer closeT(t, s)
	if js := must(s.StatsJob(ctx, id)); js.Releases != uint32(n) || js.State != queue.Delayed {
		t.Errorf("after the restart: %+v", js)
	}
}

// lastSegment returns the path of the newest segment of dir.
func lastSegment(t *testing.T, dir string) string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	if len(m) == 0 {
		t.Fatal("no segment")
	}
	slices.Sort(m)
	return m[len(m)-1]
}

// TestTornTail: the last record cut short or garbled is dropped at Open;
// the rest of the state is there.
func TestTornTail(t *testing.T) {
	for _, damage := range []string{"truncate", "garble", "zeros"} {
		t.Run(damage, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			s := openT(t, dir, nil)
			var ids []queue.ID
			for i := range 10 {
				ids = append(ids, put(t, s, "torn", queue.NewJob{Body: fmt.Appendf(nil, "job %d", i)}))
			}
			closeT(t, s)
			path := lastSegment(t, dir)
			fi, _ := os.Stat(path)
			f, err := os.OpenFile(path, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			survivors := ids[:9]
			switch damage {
			case "truncate":
				ok(t, f.Truncate(fi.Size()-5))
			case "garble":
				_, err = f.WriteAt([]byte{0xde, 0xad}, fi.Size()-2)
				ok(t, err)
			case "zeros":
				_, err = f.WriteAt(make([]byte, 512), fi.Size())
				ok(t, err)
				survivors = ids
			}
			f.Close()
			s = openT(t, dir, nil)
			for _, id := range survivors {
				if _, err := peek(ctx, s, id); err != nil {
					t.Errorf("job %d: %v", id, err)
				}
			}
			if len(survivors) < len(ids) {
				if _, err := peek(ctx, s, ids[9]); !errors.Is(err, queue.ErrNotFound) {
					t.Errorf("the torn job: %v, want ErrNotFound", err)
				}
			}
			if fi2, _ := os.Stat(path); fi2.Size() >= fi.Size() && damage != "zeros" {
				t.Errorf("segment is %d bytes, was %d: nothing was cut", fi2.Size(), fi.Size())
			}
			// The next put goes after the cut and survives.
			id := put(t, s, "torn", queue.NewJob{Body: []byte("after")})
			ok(t, s.Close())
			s = openT(t, dir, nil)
			if j := must(peek(ctx, s, id)); string(j.Body) != "after" {
				t.Errorf("job put after the cut: %q", j.Body)
			}
			closeT(t, s)
		})
	}
}

// TestCorrupt: damage in the middle of the log fails Open with ErrCorrupt,
// naming the file and the offset.
func TestCorrupt(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, nil)
	for i := range 10 {
		put(t, s, "c", queue.NewJob{Body: fmt.Appendf(nil, "job %d with some body", i)})
	}
	closeT(t, s)
	path := lastSegment(t, dir)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	ok(t, err)
	_, err = f.WriteAt([]byte{0xff}, 100)
	ok(t, err)
	f.Close()
	_, err = Open(dir, nil)
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "offset") {
		t.Fatalf("Open: %v, want ErrCorrupt naming %s and an offset", err, path)
	}
}

func TestLocked(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, nil)
	if _, err := Open(dir, nil); !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open: %v, want ErrLocked", err)
	}
	closeT(t, s)
	s = openT(t, dir, nil)
	closeT(t, s)
}

func TestEverySec(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openT(t, dir, &Options{Fsync: FsyncEverySec})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				put(t, s, "e", queue.NewJob{Body: fmt.Appendf(nil, "%d-%d", w, i)})
			}
		}()
	}
	wg.Wait()
	closeT(t, s)
	s = openT(t, dir, nil)
	defer closeT(t, s)
	if st := must(s.Stats(ctx)); st.Ready != 200 {
		t.Errorf("%d jobs after the restart, want 200", st.Ready)
	}
}

// TestHoldRestart: references are not durable, but a tube's counters that
// a reference kept through a moment without jobs come back as they were,
// from the log or from a snapshot; references a process still held when it
// stopped end at Open, and a paused tube only they kept is gone.
func TestHoldRestart(t *testing.T) {
	for _, snapshot := range []bool{false, true} {
		t.Run(fmt.Sprintf("snapshot=%v", snapshot), func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			s := openT(t, dir, nil)
			ok(t, s.Hold(ctx, "srv/1", "x", 1))
			a := put(t, s, "x", queue.NewJob{})
			must(s.Delete(ctx, "", []queue.ID{a}))
			put(t, s, "x", queue.NewJob{})
			ok(t, s.Hold(ctx, "srv/1", "y", 1))
			ok(t, s.PauseTube(ctx, "y", time.Hour))
			if snapshot {
				ok(t, s.compactNow())
			}
			ok(t, s.Hold(ctx, "srv/1", "x", -1))
			want := must(s.StatsTube(ctx, "x"))
			if want.TotalJobs != 2 || want.Deletes != 1 {
				t.Fatalf("StatsTube(x) = %+v, want 2 jobs put, 1 deleted", want)
			}
			closeT(t, s) // y is still held

			for i := range 2 {
				s = openT(t, dir, nil)
				if got := must(s.StatsTube(ctx, "x")); got != want {
					t.Errorf("open %d: StatsTube(x) = %+v, want %+v", i, got, want)
				}
				if got, err := s.StatsTube(ctx, "y"); !errors.Is(err, queue.ErrNotFound) {
					t.Errorf("open %d: StatsTube(y), a paused tube only a reference kept = %+v, %v; want ErrNotFound", i, got, err)
				}
				closeT(t, s)
			}
		})
	}
}
