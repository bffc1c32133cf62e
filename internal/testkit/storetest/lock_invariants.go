package storetest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/lock"
)

// lockInvariants records the grants a case made on the stores it opened
// and checks, when the case is over, what must hold whatever it did: no
// name has more live holders than its limit, and every live lease has a
// TTL between 0 and the lease it was last given (by its grant or a
// refresh). It reads the stores through the lock.Store contract only.
type lockInvariants struct {
	mu     sync.Mutex
	stores []*lockRecorder
}

// wrap returns newStore whose stores record their grants.
func (inv *lockInvariants) wrap(newStore NewLockStore) NewLockStore {
	return func(t *testing.T, clock *Clock) lock.Store {
		r := &lockRecorder{Store: newStore(t, clock), leases: map[lockHolder]lockLease{}}
		inv.mu.Lock()
		inv.stores = append(inv.stores, r)
		inv.mu.Unlock()
		if n, ok := r.Store.(lock.Notifier); ok {
			return struct {
				*lockRecorder
				lock.Notifier
			}{r, n}
		}
		return r
	}
}

func (inv *lockInvariants) check(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	inv.mu.Lock()
	stores := inv.stores
	inv.mu.Unlock()
	for _, r := range stores {
		r.mu.Lock()
		leases := make(map[lockHolder]lockLease, len(r.leases))
		for h, l := range r.leases {
			leases[h] = l
		}
		r.mu.Unlock()
		held := map[string]int{}
		limit := map[string]int{}
		for h, l := range leases {
			d, err := r.Store.TTL(ctx, h.name, h.token)
			if errors.Is(err, lock.ErrNotHeld) {
				continue
			}
			if err != nil {
				t.Errorf("invariants: TTL(%q, %q): %v", h.name, h.token, err)
				continue
			}
			if d < 0 || d > l.ttl {
				t.Errorf("invariants: the lease of %q by %q has %v left, want 0 to its lease of %v", h.name, h.token, d, l.ttl)
			}
			held[h.name]++
			limit[h.name] = max(limit[h.name], l.limit)
		}
		for name, n := range held {
			if n > limit[name] {
				t.Errorf("invariants: %q has %d live holders, beyond its limit of %d", name, n, limit[name])
			}
		}
	}
}

type lockHolder struct{ name, token string }

type lockLease struct {
	limit int
	ttl   time.Duration // the last lease given: by the grant or a refresh
}

// lockRecorder is a lock.Store that records the leases it granted.
type lockRecorder struct {
	lock.Store

	mu     sync.Mutex
	leases map[lockHolder]lockLease
}

func (r *lockRecorder) Acquire(ctx context.Context, req lock.AcquireRequest) (lock.Grant, error) {
	g, err := r.Store.Acquire(ctx, req)
	if err == nil && g.Acquired {
		r.mu.Lock()
		r.leases[lockHolder{req.Name, req.Token}] = lockLease{limit: req.Limit, ttl: req.TTL}
		r.mu.Unlock()
	}
	return g, err
}

// Refresh records the new lease; while the call is in flight the record
// is the longer of the old and the new, which a check may see either of.
func (r *lockRecorder) Refresh(ctx context.Context, name, token string, ttl time.Duration) error {
	h := lockHolder{name, token}
	r.setLease(h, func(l lockLease) time.Duration { return max(l.ttl, ttl) })
	err := r.Store.Refresh(ctx, name, token, ttl)
	if err == nil {
		r.setLease(h, func(lockLease) time.Duration { return ttl })
	}
	return err
}

func (r *lockRecorder) setLease(h lockHolder, ttl func(lockLease) time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if l, ok := r.leases[h]; ok {
		l.ttl = ttl(l)
		r.leases[h] = l
	}
}
