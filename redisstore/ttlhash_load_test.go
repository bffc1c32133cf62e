package redisstore_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/internal/testkit/redistest"
	"github.com/hourglass-io/hourglass/redisstore"
	"github.com/hourglass-io/hourglass/ttlhash"
	"github.com/redis/go-redis/v9"
)

// TestTTLHashSharedSweep: 4 instances sweep the same hashes while 2
// consumer groups of 3 consumers each take the events, one consumer dying
// mid-stream without acknowledging what it holds, and readers race the
// sweep. Every field must yield exactly one acknowledged event per group,
// and no read may return a field whose deadline had passed when it began.
// (Delivery is at-least-once: a consumer slower than the visibility timeout
// would see an event handed to another; the timeout here is far above what
// a handler takes.)
func TestTTLHashSharedSweep(t *testing.T) {
	for _, top := range topologies {
		t.Run(top.name, func(t *testing.T) {
			t.Parallel()
			testSharedSweep(t, top)
		})
	}
}

func testSharedSweep(t *testing.T, top topology) {
	const (
		fields   = 3000
		hashes   = 40
		spread   = 1500 * time.Millisecond
		instance = 4
	)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	prefix := redistest.Prefix(t)
	var stores []*redisstore.Hashes
	var clients []redis.UniversalClient
	for range instance {
		c := top.client(t)
		clients = append(clients, c)
		s, err := redisstore.New(ctx, c, &redisstore.Options{Prefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		stores = append(stores, s.Hashes())
	}
	opts := &ttlhash.Options{VisibilityTimeout: time.Second, PollInterval: 100 * time.Millisecond, Batch: 16}
	hs := make([]*ttlhash.Hashes, instance)
	for i, s := range stores {
		var err error
		if hs[i], err = ttlhash.New(s, opts); err != nil {
			t.Fatal(err)
		}
	}
	groups := []string{"audit", "billing"}
	for _, g := range groups {
		if err := hs[0].CreateGroup(ctx, g); err != nil {
			t.Fatal(err)
		}
	}

	// The consumers: 3 per group, on different instances.
	var mu sync.Mutex
	acked := map[string]map[string]int{"audit": {}, "billing": {}}
	ids := map[string]map[string][]string{"audit": {}, "billing": {}}
	redelivered := 0
	done := make(chan struct{})
	var doneOnce sync.Once
	total := func() int {
		n := 0
		for _, m := range acked {
			n += len(m)
		}
		return n
	}
	var wg sync.WaitGroup
	consumeCtx, stopConsumers := context.WithCancel(ctx)
	defer stopConsumers()
	for gi, g := range groups {
		for ci := range 3 {
			name := fmt.Sprintf("c%d", ci)
			h := hs[(gi*3+ci)%instance]
			cctx, kill := context.WithCancel(consumeCtx)
			dies := gi == 0 && ci == 0
			handled := 0
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer kill()
				wake := make(chan struct{}, 1)
				stop, err := h.Store().(ttlhash.Notifier).Listen(cctx, ttlhash.TopicEvents, func(string) {
					select {
					case wake <- struct{}{}:
					default:
					}
				})
				if err != nil {
					t.Error(err)
					return
				}
				defer stop()
				for cctx.Err() == nil {
					evs, err := h.Read(cctx, g, name, 16)
					if err != nil {
						if cctx.Err() == nil {
							t.Errorf("Read %s/%s: %v", g, name, err)
						}
						return
					}
					for _, e := range evs {
						handled++
						if dies && handled == 100 {
							return // dies holding this event and the rest of its batch
						}
						n, err := h.Ack(context.WithoutCancel(cctx), g, e.ID)
						if err != nil {
							t.Errorf("Ack: %v", err)
							return
						}
						mu.Lock()
						if n == 1 {
							acked[g][e.Hash+"/"+e.Field]++
							ids[g][e.Hash+"/"+e.Field] = append(ids[g][e.Hash+"/"+e.Field], e.ID)
						} else {
							redelivered++ // handed out again after the timeout, acknowledged by the first holder
						}
						if total() == fields*len(groups) {
							doneOnce.Do(func() { close(done) })
						}
						mu.Unlock()
					}
					if len(evs) == 0 {
						select {
						case <-wake:
						case <-time.After(50 * time.Millisecond):
						case <-cctx.Done():
						}
					}
				}
			}()
		}
	}

	// The 4 sweepers.
	for _, s := range stores {
		w, err := ttlhash.NewSweeper(s, &ttlhash.SweeperOptions{Interval: 5 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { w.Close() })
	}

	// The fields, TTLs spread over 1.5 s.
	for i := 0; i < fields; i += 100 {
		hash := hs[0].Hash(fmt.Sprintf("h%d", (i/100)%hashes))
		for j := i; j < i+100; j++ {
			ttl := time.Duration(1+rand.IntN(int(spread/time.Millisecond))) * time.Millisecond
			if _, err := hash.SetTTL(ctx, fmt.Sprintf("f%d", j), []byte(fmt.Sprintf("v%d", j)), ttl); err != nil {
				t.Fatal(err)
			}
		}
	}

	// Readers racing the sweep: nothing due when a read begins may come back.
	readCtx, stopReaders := context.WithCancel(ctx)
	var rwg sync.WaitGroup
	for r := range 2 {
		rwg.Add(1)
		go func() {
			defer rwg.Done()
			c, h := clients[r], hs[r]
			for readCtx.Err() == nil {
				start, err := c.Time(readCtx).Result()
				if err != nil {
					return
				}
				name := fmt.Sprintf("h%d", rand.IntN(hashes))
				es, err := h.Hash(name).GetAll(readCtx)
				if err != nil {
					return
				}
				for _, e := range es {
					if !e.Deadline.IsZero() && !e.Deadline.After(start.Truncate(time.Millisecond)) {
						t.Errorf("%s/%s due at %v returned by a read begun at %v", name, e.Name, e.Deadline, start)
					}
				}
			}
		}()
	}

	select {
	case <-done:
	case <-ctx.Done():
		mu.Lock()
		t.Errorf("timed out: %d of %d events acknowledged", total(), fields*len(groups))
		mu.Unlock()
	}
	stopReaders()
	rwg.Wait()
	stopConsumers()
	wg.Wait()

	for _, g := range groups {
		if len(acked[g]) != fields {
			t.Errorf("group %s: %d distinct fields acknowledged, want %d", g, len(acked[g]), fields)
		}
		for k, n := range acked[g] {
			if n != 1 {
				t.Errorf("group %s: %s acknowledged %d times: %v", g, k, n, ids[g][k])
			}
		}
	}
	st, err := hs[0].EventStats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range st.Groups {
		if g.Pending != 0 {
			t.Errorf("group %s: %d events pending at the end", g.Name, g.Pending)
		}
	}
	for i := range hashes {
		n, err := hs[1].Hash(fmt.Sprintf("h%d", i)).Len(context.Background())
		if err != nil || n != 0 {
			t.Errorf("h%d: %d fields left (%v)", i, n, err)
		}
	}
	t.Logf("%s: %d fields over %d hashes expired and acknowledged by 2 groups; %d events retained; %d handed out again and acknowledged by their first holder",
		top.name, fields, hashes, st.Retained, redelivered)
}
