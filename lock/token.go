package lock

import (
	"context"
	"fmt"
	"time"
)

// The calls on a lease by its owner token, for a holder that has the token
// of a grant but not its Lock: one that obtained the lock in another
// process (over HTTP, say) and refreshes the lease itself. They go to the
// store as they are: nothing renews such a lease.

// Release ends token's hold on name and wakes the name's waiters.
// ErrNotHeld when token holds no live lease of name; ErrInvalidName for a
// name no lock can have.
func (c *Client) Release(ctx context.Context, name, token string) error {
	if err := validName(name); err != nil {
		return err
	}
	return c.s.Release(ctx, name, token)
}

// Refresh sets token's lease of name to end ttl from now. ErrNotHeld when
// token holds no live lease of name; ErrInvalidName or ErrInvalidTTL (ttl
// outside MinTTL to MaxTTL) for bad input.
func (c *Client) Refresh(ctx context.Context, name, token string, ttl time.Duration) error {
	if err := validName(name); err != nil {
		return err
	}
	if ttl < MinTTL || ttl > MaxTTL {
		return fmt.Errorf("%w: %v out of [%v, %v]", ErrInvalidTTL, ttl, MinTTL, MaxTTL)
	}
	return c.s.Refresh(ctx, name, token, ttl)
}

// TTL returns how long token's lease of name has left on the store's
// clock. ErrNotHeld when token holds no live lease of name; ErrInvalidName
// for a name no lock can have.
func (c *Client) TTL(ctx context.Context, name, token string) (time.Duration, error) {
	if err := validName(name); err != nil {
		return 0, err
	}
	return c.s.TTL(ctx, name, token)
}
