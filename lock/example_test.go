package lock_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"sync"
	"time"

	"github.com/hourglass-io/hourglass/lock"
	"github.com/hourglass-io/hourglass/memstore"
)

// A lock on the embedded engine: obtain, work, release.
func Example() {
	s, err := memstore.New(nil)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	locks, _ := lock.New(s.Locks(), nil)
	ctx := context.Background()

	l, err := locks.Obtain(ctx, "nightly-report", nil) // lease of 15s, renewed until Release
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = locks.TryObtain(ctx, "nightly-report", nil)
	fmt.Println("second owner:", err)
	fmt.Println("release:", l.Release(ctx))
	fmt.Println("release again:", l.Release(ctx))
	// Output:
	// second owner: lock: not obtained
	// release: <nil>
	// release again: lock: not held
}

// storage is a resource that refuses writes carrying a fence older than the
// newest it has seen: what keeps an owner paused past its lease from
// overwriting the work of the owner after it.
type storage struct {
	mu    sync.Mutex
	fence uint64
	value string
}

var errStale = errors.New("stale fencing token")

func (s *storage) write(fence uint64, v string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if fence < s.fence {
		return errStale
	}
	s.fence, s.value = fence, v
	return nil
}

// Fencing: the first owner's lease runs out while it is paused; the second
// owner writes; the first wakes up and its write is refused.
func ExampleLock_Fence() {
	s, err := memstore.New(nil)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	locks, _ := lock.New(s.Locks(), nil)
	ctx := context.Background()
	var db storage

	first, _ := locks.TryObtain(ctx, "row-42", &lock.ObtainOptions{TTL: 50 * time.Millisecond})
	<-first.Lost() // paused past its lease

	second, _ := locks.Obtain(ctx, "row-42", &lock.ObtainOptions{TTL: time.Minute})
	fmt.Println("second writes:", db.write(second.Fence(), "B"))
	fmt.Println("first writes:", db.write(first.Fence(), "A"))
	fmt.Println("value:", db.value)
	// Output:
	// second writes: <nil>
	// first writes: stale fencing token
	// value: B
}

// A semaphore: at most two calls to a downstream service at once.
func ExampleSemaphore() {
	s, err := memstore.New(nil)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	locks, _ := lock.New(s.Locks(), nil)
	ctx := context.Background()
	sem := locks.NewSemaphore("payments-api", 2)

	a, _ := sem.TryAcquire(ctx, nil)
	b, _ := sem.TryAcquire(ctx, nil)
	_, err = sem.TryAcquire(ctx, nil)
	fmt.Println("third:", err)
	_ = a.Release(ctx)
	c, err := sem.TryAcquire(ctx, nil)
	fmt.Println("after a release:", err, c.Fence() > b.Fence())
	_ = b.Release(ctx)
	_ = c.Release(ctx)
	// Output:
	// third: lock: not obtained
	// after a release: <nil> true
}

// Fair waiting: waiters are served in arrival order, on every process that
// shares the store.
func ExampleClient_Obtain_fair() {
	s, err := memstore.New(nil)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	locks, _ := lock.New(s.Locks(), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	l, err := locks.Obtain(ctx, "migrations", &lock.ObtainOptions{Fair: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer l.Release(ctx)
	fmt.Println("holding, fence > 0:", l.Fence() > 0)
	// Output: holding, fence > 0: true
}

// A holder with only the owner token of a grant (made by another process,
// over HTTP say) acts on the lease by name and token.
func ExampleClient_Refresh() {
	s, err := memstore.New(nil)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	locks, _ := lock.New(s.Locks(), nil)
	ctx := context.Background()

	l, err := locks.TryObtain(ctx, "export", &lock.ObtainOptions{TTL: 10 * time.Second})
	if err != nil {
		fmt.Println(err)
		return
	}
	token := l.Token() // all the other holder has
	fmt.Println("refresh:", locks.Refresh(ctx, "export", token, time.Minute))
	left, _ := locks.TTL(ctx, "export", token)
	fmt.Println("more than 10s left:", left > 10*time.Second)
	fmt.Println("release:", locks.Release(ctx, "export", token))
	fmt.Println("release again:", locks.Release(ctx, "export", token))
	fmt.Println("refresh of 0s:", errors.Is(locks.Refresh(ctx, "export", token, 0), lock.ErrInvalidTTL))
	l.Release(ctx) // stops its renewal
	// Output:
	// refresh: <nil>
	// more than 10s left: true
	// release: <nil>
	// release again: lock: not held
	// refresh of 0s: true
}
