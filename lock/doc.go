// Package lock implements distributed locks and counting semaphores with
// owner tokens, leases that renew themselves, fencing tokens, and waiters
// that are woken rather than polling.
//
// A Client obtains locks from a Store: redisstore's Locks (one Redis, or a
// Cluster) or memstore's Locks (in process). Obtain waits for a lock,
// TryObtain does not; both return a *Lock, which carries a random owner
// Token, the Fence of its grant, and a lease in the store that ends TTL
// after the grant unless renewed. Only the owner can Release or Refresh
// it: anyone else gets ErrNotHeld and changes nothing, so a lease that ran
// out and was granted to another owner is never released by the first.
// A holder that has the token but not the Lock (a grant made in another
// process, over HTTP say) calls Client.Release, Refresh and TTL with the
// name and the token; nothing renews such a lease.
//
// # Leases and renewal
//
// With ObtainOptions.TTL zero, a lock has a lease of Options.DefaultTTL and
// renews it every third of that, on this process's clock (Options.Clock),
// until Release. With a TTL given, it renews only with AutoRenew.
// Lock.Context is cancelled (Lost is closed) the moment this process learns
// the lock is no longer held: Release, a renewal that finds the lock gone
// (ErrNotHeld), or a lease that ran out on this process's clock with no
// successful renewal (ErrLeaseExpired). The local deadline is counted from
// before the grant's request was sent, so it is never later than the
// store's.
//
// # Fencing
//
// A lease cannot stop a paused owner (a GC pause, a stalled VM) from
// writing after its lease ran out and another owner was granted the lock.
// The remedy is the fencing token: every grant of a name carries a Fence
// larger than every earlier grant's, the owner passes it with each write,
// and the resource refuses a write whose fence is smaller than the largest
// it has seen. Fences never go below the store's clock in microseconds, so
// they keep increasing across lease expiry, across a restart of the
// embedded engine (which keeps no locks), and across a Redis that lost its
// keys, as long as that clock does not step back.
//
// # Waiting and fairness
//
// A waiter listens for the name's releases (Store implementing Notifier,
// topic: the name) and otherwise sleeps until the holder's lease could end,
// so a lost wake-up only delays it; only a store without a Notifier is
// polled, every Options.PollInterval. With ObtainOptions.Fair, waiters join a queue in
// the store and are granted in arrival order across all processes; each
// waiter keeps its place alive every third of Options.QueueTTL, so a
// waiter that died blocks the queue for at most QueueTTL, and one that gave
// up (its context ended) leaves at once.
//
// # Semaphores
//
// NewSemaphore(name, n) gives at most n holders at once, each a *Lock with
// its own lease, token and fence. A lock is a semaphore of 1.
//
// # Errors
//
// ErrNotObtained, ErrNotHeld and ErrNotReplicated are outcomes; ErrInvalid*
// report bad input, which changes nothing. Other errors are failures of the
// store. All are tested with errors.Is.
package lock
