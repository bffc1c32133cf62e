package faulttest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/internal/beanstalkc"
	"github.com/hourglass-io/hourglass/internal/testkit/tmpfstest"
	"github.com/hourglass-io/hourglass/memstore"
	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/server/beanstalk"
	"github.com/hourglass-io/hourglass/server/httpapi"
)

// diskLoad is the put load of TestFullDisk: producers and workers on the
// beanstalkd protocol, and the jobs the server acknowledged.
type diskLoad struct {
	mu       sync.Mutex
	acked    map[uint64]string // put and answered INSERTED, with its body
	deleted  map[uint64]bool   // and deleted since, answered DELETED
	lastAck  time.Time         // of the last put acknowledged
	freed    time.Time         // when the disk was last freed
	resumed  time.Time         // the first put acknowledged after freed
	live     atomic.Int64      // jobs acknowledged and not deleted: the producers wait while there are 1,000, so the state stays small
	refused  atomic.Int64      // OUT_OF_MEMORY replies
	stop     atomic.Bool
	wg       sync.WaitGroup
	failures chan error
}

func (d *diskLoad) fail(err error) {
	select {
	case d.failures <- err:
	default:
	}
}

// produce puts jobs until stopped; a put answered OUT_OF_MEMORY is
// counted and not stored, so it is not remembered.
func (d *diskLoad) produce(ctx context.Context, addr string, name string) {
	defer d.wg.Done()
	c, err := beanstalkc.Dial(ctx, addr)
	if err != nil {
		d.fail(err)
		return
	}
	defer c.Close()
	if err := c.Use(ctx, "disk"); err != nil {
		d.fail(err)
		return
	}
	for n := 0; !d.stop.Load(); n++ {
		if d.live.Load() >= 1000 {
			runtime.Gosched() // the workers are behind
			continue
		}
		body := fmt.Sprintf("%s-%d-%s", name, n, strings.Repeat("b", 200))
		id, err := c.Put(ctx, []byte(body), 0, 0, time.Minute)
		switch {
		case err == nil:
			now := time.Now()
			d.mu.Lock()
			d.acked[id] = body
			d.lastAck = now
			d.live.Add(1)
			if d.resumed.IsZero() && now.After(d.freed) {
				d.resumed = now
			}
			d.mu.Unlock()
		case errors.Is(err, beanstalkc.ErrOutOfMemory):
			d.refused.Add(1)
		default:
			d.fail(fmt.Errorf("put: %w", err))
			return
		}
	}
}

// work reserves and deletes jobs on q until stopped, so that the state
// stays small; a refused delete is tried again until it is answered.
func (d *diskLoad) work(ctx context.Context, q *queue.Queue) {
	defer d.wg.Done()
	for !d.stop.Load() {
		j, err := q.Reserve(ctx, queue.ReserveOptions{Tubes: []string{"disk"}, Timeout: -1})
		switch {
		case errors.Is(err, queue.ErrTimeout):
			runtime.Gosched()
			continue
		case errors.Is(err, queue.ErrFull):
			d.refused.Add(1)
			continue
		case err != nil:
			d.fail(fmt.Errorf("reserve: %w", err))
			return
		}
		for {
			err := q.Delete(ctx, j.ID)
			if err == nil {
				break
			}
			if !errors.Is(err, queue.ErrFull) {
				d.fail(fmt.Errorf("delete: %w", err))
				return
			}
			d.refused.Add(1)
		}
		d.mu.Lock()
		d.deleted[uint64(j.ID)] = true
		d.mu.Unlock()
		d.live.Add(-1)
	}
}

func (d *diskLoad) ackedSince(t time.Time) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.lastAck.After(t)
}

// TestFullDisk fills the disk under the embedded engine 20 times while 4
// producers put jobs over the beanstalkd protocol and 2 workers take them
// (through the queue), and frees it again: puts are answered OUT_OF_MEMORY (HTTP 507
// store_full) while it is full and resume once it is freed, without a
// restart; after each round the store is closed and opened again, and
// every job acknowledged and not deleted is there, with its body, and no
// other.
func TestFullDisk(t *testing.T) {
	const rounds = 20
	ctx := deadline(t, 3*time.Minute)
	mnt := tmpfstest.Mount(t, 6<<20)
	dir := filepath.Join(mnt, "data")
	opts := &memstore.Options{CompactBytes: 256 << 10}
	open := func() *memstore.Store {
		s, err := memstore.Open(dir, opts)
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		return s
	}
	d := &diskLoad{acked: map[uint64]string{}, deleted: map[uint64]bool{}, failures: make(chan error, 1)}
	s := open()
	var worst time.Duration
	var http507 int
	for round := range rounds {
		q, err := queue.New(s, nil)
		if err != nil {
			t.Fatal(err)
		}
		bs := &beanstalk.Server{Queue: q}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		go bs.Serve(ln)
		hs := httptest.NewServer((&httpapi.Server{Queue: q}).Handler())
		addr := ln.Addr().String()
		d.stop.Store(false)
		for i := range 4 {
			d.wg.Add(1)
			go d.produce(ctx, addr, fmt.Sprintf("r%d-p%d", round, i))
		}
		for i := range 2 {
			d.wg.Add(1)
			go d.work(ctx, q.WithOwner(fmt.Sprintf("r%d-w%d", round, i)))
		}
		check := func() {
			select {
			case err := <-d.failures:
				t.Fatalf("round %d: %v", round, err)
			default:
			}
		}

		start := time.Now()
		waitFor(t, ctx, "puts before the disk fills", func() bool { check(); return d.ackedSince(start) })
		fill := tmpfstest.Fill(t, mnt)
		refused := d.refused.Load()
		waitFor(t, ctx, "a put refused on the full disk", func() bool { check(); return d.refused.Load() > refused })
		// HTTP answers 507 with its code (a put may still find room a
		// failed snapshot gave back: it is acknowledged, and counted).
		for got := false; !got; {
			code, id, err := httpPut(ctx, hs.URL, fmt.Sprintf("r%d-http", round))
			switch {
			case err != nil:
				t.Fatal(err)
			case code == http.StatusInsufficientStorage:
				got = true
			case id != 0:
				d.mu.Lock()
				d.acked[id] = fmt.Sprintf("r%d-http", round)
				d.mu.Unlock()
			}
			if ctx.Err() != nil {
				t.Fatal("no 507 before the deadline")
			}
		}
		http507++
		d.mu.Lock()
		d.freed, d.resumed = time.Now(), time.Time{}
		d.mu.Unlock()
		fill.Free(t)
		var resumed time.Duration
		waitFor(t, ctx, "puts once the disk has room", func() bool {
			check()
			d.mu.Lock()
			defer d.mu.Unlock()
			resumed = d.resumed.Sub(d.freed)
			return !d.resumed.IsZero()
		})
		worst = max(worst, resumed)

		d.stop.Store(true)
		d.wg.Wait()
		check()
		hs.Close()
		if err := bs.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		q.Close()
		if err := s.Close(); err != nil {
			t.Fatalf("round %d: close: %v", round, err)
		}
		s = open()
		// Every acknowledged job not deleted is there, and no other.
		peek, err := queue.New(s, nil)
		if err != nil {
			t.Fatal(err)
		}
		d.mu.Lock()
		want := 0
		for id, body := range d.acked {
			if d.deleted[id] {
				if _, err := s.StatsJob(ctx, queue.ID(id)); !errors.Is(err, queue.ErrNotFound) {
					t.Errorf("round %d: deleted job %d: %v", round, id, err)
				}
				continue
			}
			want++
			got, err := peek.Peek(ctx, queue.ID(id))
			if err != nil || string(got.Body) != body {
				t.Fatalf("round %d: acknowledged job %d lost: %.20q, %v", round, id, got.Body, err)
			}
		}
		d.mu.Unlock()
		st, err := s.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n := st.Ready + st.Reserved + st.Delayed + st.Buried; n != int64(want) {
			t.Fatalf("round %d: %d jobs after the reopen, want the %d acknowledged and not deleted", round, n, want)
		}
		t.Logf("round %d: %d acknowledged, %d deleted, %d refused so far; writes resumed %v after the space returned",
			round, len(d.acked), len(d.deleted), d.refused.Load(), resumed.Round(time.Microsecond))
	}
	s.Close()
	t.Logf("%d rounds: %d jobs acknowledged, 0 lost, %d HTTP 507, %d refusals; 0 corrupt logs (%d reopens); writes resumed at worst %v after the space returned",
		rounds, len(d.acked), http507, d.refused.Load(), rounds, worst.Round(time.Microsecond))
}

// httpPut puts a job over HTTP and returns the status and, on 201, the id.
func httpPut(ctx context.Context, base, body string) (int, uint64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/tubes/disk/jobs", strings.NewReader(body))
	if err != nil {
		return 0, 0, err
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var r struct {
		ID    uint64 `json:"id"`
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return 0, 0, fmt.Errorf("HTTP put: %d %s", resp.StatusCode, b)
	}
	switch resp.StatusCode {
	case http.StatusCreated:
		return resp.StatusCode, r.ID, nil
	case http.StatusInsufficientStorage:
		if r.Error.Code != httpapi.CodeStoreFull {
			return 0, 0, fmt.Errorf("HTTP put on a full disk: 507 with code %q, want %q", r.Error.Code, httpapi.CodeStoreFull)
		}
		return resp.StatusCode, 0, nil
	}
	return 0, 0, fmt.Errorf("HTTP put: %d %s", resp.StatusCode, b)
}
