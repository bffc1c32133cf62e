package ttlhash_test

import (
	"context"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/internal/testkit/storetest"
	"github.com/hourglass-io/hourglass/memstore"
	"github.com/hourglass-io/hourglass/ttlhash"
)

// ReadWait hands out an event that appears while it waits, before its
// until; with nothing to hand out it returns none once until has passed,
// and with an until already past it is one Read. The store and ReadWait
// are on one manual clock: time moves when the test says.
func TestReadWait(t *testing.T) {
	clk := storetest.NewClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	engine, err := memstore.New(&memstore.Options{Clock: clk.Now, AfterFunc: clk.AfterFunc})
	if err != nil {
		t.Fatal(err)
	}
	defer engine.Close()
	// A poll far longer than the test: only the store's wake-up or until
	// can end the wait.
	hs, err := ttlhash.New(engine.Hashes(), &ttlhash.Options{PollInterval: 24 * time.Hour, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := hs.CreateGroup(ctx, "g"); err != nil {
		t.Fatal(err)
	}
	evs, err := hs.ReadWait(ctx, "g", "c", 10, clk.Now())
	if err != nil || len(evs) != 0 {
		t.Fatalf("ReadWait with until now: %v, %v; want none at once", evs, err)
	}
	type result struct {
		evs []ttlhash.Event
		err error
	}
	readWait := func(until time.Time) <-chan result {
		got := make(chan result, 1)
		go func() {
			evs, err := hs.ReadWait(ctx, "g", "c", 10, until)
			got <- result{evs, err}
		}()
		return got
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	armed := clk.Armed() // the store's
	got := readWait(clk.Now().Add(time.Hour))
	if err := clk.WaitArmed(wctx, armed+1); err != nil {
		t.Fatalf("ReadWait did not wait on the clock: %v", err)
	}
	select {
	case r := <-got:
		t.Fatalf("ReadWait returned %v, %v before its until", r.evs, r.err)
	default:
	}
	clk.Advance(time.Hour)
	if r := <-got; r.err != nil || len(r.evs) != 0 {
		t.Fatalf("ReadWait with nothing to read: %v, %v; want none", r.evs, r.err)
	}

	if _, err := hs.Hash("h").SetTTL(ctx, "f", []byte("v"), 20*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	until := clk.Now().Add(time.Minute)
	armed = clk.Armed() // the store's, for the field's deadline
	got = readWait(until)
	if err := clk.WaitArmed(wctx, armed+1); err != nil {
		t.Fatalf("ReadWait did not wait on the clock: %v", err)
	}
	clk.Advance(20 * time.Millisecond) // the field expires: the store wakes ReadWait
	if r := <-got; r.err != nil || len(r.evs) != 1 || r.evs[0].Field != "f" || !clk.Now().Before(until) {
		t.Fatalf("ReadWait: %v, %v; want the field's expiry before until", r.evs, r.err)
	}

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := hs.ReadWait(cctx, "g", "c", 10, until); err == nil {
		t.Error("ReadWait on an ended context: no error")
	}
}
