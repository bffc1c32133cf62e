package memstore

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/queue"
)

var recoverJobs = flag.Int("memstore.recover-jobs", 1_000_000, "jobs in the log that BenchmarkRecover replays")

var benchBody = []byte(strings.Repeat("b", 100))

// benchStores makes a store per configuration: in memory, and on disk with
// each fsync policy.
func benchStores(b *testing.B, f func(b *testing.B, open func() *Store)) {
	b.Run("memory", func(b *testing.B) { f(b, func() *Store { return must(New(nil)) }) })
	for _, p := range []FsyncPolicy{FsyncAlways, FsyncEverySec, FsyncNo} {
		b.Run("fsync="+p.String(), func(b *testing.B) {
			dir := b.TempDir()
			f(b, func() *Store {
				s, err := Open(dir, &Options{Fsync: p})
				if err != nil {
					b.Fatal(err)
				}
				return s
			})
		})
	}
}

// BenchmarkPut: 8 writers putting one 100-byte job per call.
func BenchmarkPut(b *testing.B) {
	benchStores(b, func(b *testing.B, open func() *Store) {
		s := open()
		defer s.Close()
		ctx := context.Background()
		jobs := []queue.NewJob{{Body: benchBody, TTR: time.Minute}}
		b.SetParallelism(max(1, 8/runtime.GOMAXPROCS(0)))
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := s.Put(ctx, "bench", jobs); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

// BenchmarkReserveDelete: 8 workers, each taking a job and deleting the
// previous one in the same call, as a worker does.
func BenchmarkReserveDelete(b *testing.B) {
	benchStores(b, func(b *testing.B, open func() *Store) {
		s := open()
		defer s.Close()
		ctx := context.Background()
		batch := make([]queue.NewJob, 1000)
		for i := range batch {
			batch[i] = queue.NewJob{Body: benchBody, TTR: time.Minute}
		}
		for n := 0; n < b.N+1000; n += len(batch) {
			if _, err := s.Put(ctx, "bench", batch); err != nil {
				b.Fatal(err)
			}
		}
		b.SetParallelism(max(1, 8/runtime.GOMAXPROCS(0)))
		var worker sync.Mutex
		w := 0
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			worker.Lock()
			w++
			owner := fmt.Sprint("worker-", w)
			worker.Unlock()
			var del []queue.ID
			for pb.Next() {
				res, err := s.Reserve(ctx, queue.ReserveRequest{Owner: owner, Tubes: []string{"bench"}, Max: 1, Delete: del})
				if err != nil || len(res.Jobs) != 1 {
					b.Errorf("Reserve: %d jobs, %v", len(res.Jobs), err)
					return
				}
				del = append(del[:0], res.Jobs[0].ID)
			}
		})
	})
}

// heapAlloc returns the live heap after a collection.
func heapAlloc() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkMemoryPerJob reports the heap a ready job with a 100-byte body
// takes, body included, in a store of 100,000 such jobs.
func BenchmarkMemoryPerJob(b *testing.B) {
	const n = 100_000
	ctx := context.Background()
	batch := make([]queue.NewJob, 1000)
	for i := range batch {
		batch[i] = queue.NewJob{Body: benchBody, TTR: time.Minute}
	}
	var perJob float64
	for range b.N {
		before := heapAlloc()
		s := must(New(nil))
		for k := 0; k < n; k += len(batch) {
			if _, err := s.Put(ctx, "mem", batch); err != nil {
				b.Fatal(err)
			}
		}
		perJob = float64(heapAlloc()-before) / n
		runtime.KeepAlive(s)
		s.Close()
	}
	b.ReportMetric(perJob, "bytes/job")
	b.ReportMetric(perJob-float64(len(benchBody)), "overhead-bytes/job")
}

// BenchmarkRecover replays a log of -memstore.recover-jobs jobs with
// 100-byte bodies (default one million), as written (no snapshot) and as a
// snapshot, and reports the time and the heap of the Store afterwards.
func BenchmarkRecover(b *testing.B) {
	n := *recoverJobs
	for _, snapshot := range []bool{false, true} {
		b.Run(fmt.Sprintf("snapshot=%v", snapshot), func(b *testing.B) {
			dir := b.TempDir()
			ctx := context.Background()
			s, err := Open(dir, &Options{Fsync: FsyncNo, CompactBytes: 1 << 40})
			if err != nil {
				b.Fatal(err)
			}
			batch := make([]queue.NewJob, 1000)
			for i := range batch {
				batch[i] = queue.NewJob{Body: benchBody, TTR: time.Minute}
			}
			for k := 0; k < n; k += len(batch) {
				if _, err := s.Put(ctx, "recover", batch[:min(len(batch), n-k)]); err != nil {
					b.Fatal(err)
				}
			}
			if snapshot {
				if err := s.compactNow(); err != nil {
					b.Fatal(err)
				}
			}
			s.Close()
			var heap uint64
			b.ResetTimer()
			for range b.N {
				before := heapAlloc()
				s, err := Open(dir, nil)
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				heap = heapAlloc() - before
				if st, _ := s.Stats(ctx); st.Ready != int64(n) {
					b.Fatalf("recovered %d jobs, want %d", st.Ready, n)
				}
				s.Close()
				b.StartTimer()
			}
			b.ReportMetric(float64(heap)/(1<<20), "heap-MiB")
			b.ReportMetric(float64(n), "jobs")
			b.ReportMetric(float64(dirSizeOf(dir))/(1<<20), "disk-MiB")
		})
	}
}

// putLate puts n jobs into tube "late" with delays spread uniformly over
// 0.5–10 s, in whole milliseconds as Put keeps them, in a shuffled order
// (the same in every run); each job's body is its due time in Unix ns,
// taken just before its put.
func putLate(b *testing.B, ctx context.Context, q *queue.Queue, n int) {
	b.Helper()
	delays := make([]time.Duration, n)
	for i := range delays {
		delays[i] = time.Duration(500+i*9500/(n-1)) * time.Millisecond
	}
	rand.New(rand.NewPCG(1, 2)).Shuffle(n, func(i, j int) { delays[i], delays[j] = delays[j], delays[i] })
	for _, delay := range delays {
		due := time.Now().Add(delay)
		if _, err := q.Put(ctx, "late", queue.NewJob{Body: fmt.Appendf(nil, "%d", due.UnixNano()), Delay: delay}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLateness puts 20,000 jobs with delays spread uniformly over
// 0.5–10 s (in a shuffled order) while 8 blocking reservers (a
// queue.Worker) wait, and reports how late each was delivered after its
// due time: p50, p99 and max, in milliseconds. The due time is taken just
// before the put, so the figure includes the put. Run with -benchtime=1x.
func BenchmarkLateness(b *testing.B) {
	const n = 20000
	ctx := context.Background()
	s := must(New(nil))
	defer s.Close()
	q, err := queue.New(s, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer q.Close()
	var (
		mu   sync.Mutex
		late = make([]time.Duration, 0, n)
		all  = make(chan struct{})
	)
	w, err := queue.NewWorker(q, queue.HandlerFunc(func(ctx context.Context, j queue.Job) error {
		var due int64
		fmt.Sscan(string(j.Body), &due)
		d := time.Since(time.Unix(0, due))
		mu.Lock()
		late = append(late, d)
		if len(late) == n {
			close(all)
		}
		mu.Unlock()
		return nil
	}), &queue.WorkerOptions{Tubes: []string{"late"}, Concurrency: 8})
	if err != nil {
		b.Fatal(err)
	}
	go w.Run(ctx)
	defer w.Shutdown(ctx)
	b.ResetTimer()
	putLate(b, ctx, q, n)
	<-all
	b.StopTimer()
	slices.Sort(late)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(late[n/2]), "p50-ms")
	b.ReportMetric(ms(late[n*99/100]), "p99-ms")
	b.ReportMetric(ms(late[n-1]), "max-ms")
}
