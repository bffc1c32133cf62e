package ttlhash_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/hourglass-io/hourglass/memstore"
	"github.com/hourglass-io/hourglass/ttlhash"
)

// A cache of sessions in one hash, each session expiring on its own, and a
// consumer group told of each expiry with the session's last value.
func Example() {
	engine, err := memstore.New(nil) // or redisstore's Store.Hashes(), with a Sweeper
	if err != nil {
		log.Fatal(err)
	}
	defer engine.Close()
	hs, err := ttlhash.New(engine.Hashes(), nil)
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	if err := hs.CreateGroup(ctx, "cleanup"); err != nil {
		panic(err)
	}

	sessions := hs.Hash("sessions")
	sessions.SetTTL(ctx, "alice", []byte(`{"cart":3}`), 50*time.Millisecond)
	sessions.Set(ctx, "bob", []byte(`{"cart":0}`)) // no TTL
	n, _ := sessions.Len(ctx)
	fmt.Println("sessions:", n)

	consumeCtx, stop := context.WithCancel(ctx)
	err = hs.Consume(consumeCtx, "cleanup", "worker-1", func(ctx context.Context, e ttlhash.Event) error {
		fmt.Printf("expired: %s/%s holding %s\n", e.Hash, e.Field, e.Value)
		stop()
		return nil // acknowledges the event
	})
	fmt.Println("consume:", err)
	n, _ = sessions.Len(ctx)
	fmt.Println("sessions:", n)
	// Output:
	// sessions: 2
	// expired: sessions/alice holding {"cart":3}
	// consume: context canceled
	// sessions: 1
}

// Expire and Persist answer per field with the codes of Redis 7.4's
// HEXPIRE and HPERSIST.
func ExampleHash_Expire() {
	engine, err := memstore.New(nil)
	if err != nil {
		log.Fatal(err)
	}
	defer engine.Close()
	hs, _ := ttlhash.New(engine.Hashes(), nil)
	ctx := context.Background()
	h := hs.Hash("h")
	h.Set(ctx, "plain", []byte("1"))
	h.SetTTL(ctx, "timed", []byte("2"), time.Hour)

	codes, _ := h.Expire(ctx, time.Minute, ttlhash.NX, "plain", "timed", "missing")
	fmt.Println("NX:", codes)
	codes, _ = h.Expire(ctx, 2*time.Hour, ttlhash.GT, "plain", "timed")
	fmt.Println("GT:", codes)
	codes, _ = h.Persist(ctx, "plain", "timed", "missing")
	fmt.Println("persist:", codes)
	ttls, _ := h.TTL(ctx, "plain", "timed", "missing")
	fmt.Println("TTL:", ttls[0] == ttlhash.NoTTL, ttls[1] == ttlhash.NoTTL, ttls[2] == ttlhash.NoField)
	codes, _ = h.Expire(ctx, 0, ttlhash.None, "plain")
	fmt.Println("expire now:", codes)
	// Output:
	// NX: [1 0 -2]
	// GT: [1 1]
	// persist: [1 1 -2]
	// TTL: true true true
	// expire now: [2]
}

// On Redis, a Sweeper (in any number of processes) expires due fields;
// reads never return an expired field either way.
func ExampleSweeper() {
	engine, err := memstore.New(nil)
	if err != nil {
		log.Fatal(err)
	}
	defer engine.Close()
	w, err := ttlhash.NewSweeper(engine.Hashes(), nil)
	if err != nil {
		panic(err)
	}
	if err := w.Start(); err != nil {
		panic(err)
	}
	defer w.Close()
	fmt.Println("sweeping")
	// Output: sweeping
}
