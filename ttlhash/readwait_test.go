package ttlhash_test

import (
	"context"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/memstore"
	"github.com/hourglass-io/hourglass/ttlhash"
)

// ReadWait hands out an event that appears while it waits, before its
// until; with nothing to hand out it returns none once until has passed,
// and with an until already past it is one Read.
func TestReadWait(t *testing.T) {
	engine, err := memstore.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer engine.Close()
	// A poll far longer than the test: only the store's wake-up can end
	// the wait early.
	hs, err := ttlhash.New(engine.Hashes(), &ttlhash.Options{PollInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := hs.CreateGroup(ctx, "g"); err != nil {
		t.Fatal(err)
	}
	evs, err := hs.ReadWait(ctx, "g", "c", 10, time.Now())
	if err != nil || len(evs) != 0 {
		t.Fatalf("ReadWait with until now: %v, %v; want none at once", evs, err)
	}
	evs, err = hs.ReadWait(ctx, "g", "c", 10, time.Now().Add(50*time.Millisecond))
	if err != nil || len(evs) != 0 {
		t.Fatalf("ReadWait with nothing to read: %v, %v; want none", evs, err)
	}

	if _, err := hs.Hash("h").SetTTL(ctx, "f", []byte("v"), 20*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	until := time.Now().Add(time.Minute)
	evs, err = hs.ReadWait(ctx, "g", "c", 10, until)
	if err != nil || len(evs) != 1 || evs[0].Field != "f" || !time.Now().Before(until) {
		t.Fatalf("ReadWait: %v, %v; want the field's expiry before until", evs, err)
	}

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := hs.ReadWait(cctx, "g", "c", 10, until); err == nil {
		t.Error("ReadWait on an ended context: no error")
	}
}
