package ttlhash

import (
	"context"
	"fmt"
	"slices"
	"sync"
)

func checkGroup(what, name string) error {
	if name == "" || len(name) > MaxNameLen {
		return fmt.Errorf("%w: %s name of %d bytes (want 1 to %d)", ErrInvalidGroup, what, len(name), MaxNameLen)
	}
	return nil
}

// CreateGroup creates the consumer group group, which receives every event
// the store keeps and every later one. Creating an existing group does
// nothing.
func (h *Hashes) CreateGroup(ctx context.Context, group string) error {
	if err := checkGroup("group", group); err != nil {
		return err
	}
	return h.s.CreateGroup(ctx, group)
}

// DeleteGroup deletes a consumer group; ErrNoGroup when there is none.
// Events only it had not acknowledged may then be trimmed.
func (h *Hashes) DeleteGroup(ctx context.Context, group string) error {
	if err := checkGroup("group", group); err != nil {
		return err
	}
	return h.s.DeleteGroup(ctx, group)
}

// Read returns up to max events for consumer of group: first events of
// the group whose visibility timeout ran out unacknowledged, then new ones.
// Each must be acknowledged with Ack within the visibility timeout, or it
// is handed out again. Read does not wait; Consume does.
func (h *Hashes) Read(ctx context.Context, group, consumer string, max int) ([]Event, error) {
	if err := checkGroup("group", group); err != nil {
		return nil, err
	}
	if err := checkGroup("consumer", consumer); err != nil {
		return nil, err
	}
	if max < 1 {
		return nil, invalid("max", "%d: want at least 1", max)
	}
	evs, err := h.s.Claim(ctx, group, consumer, h.opts.visibility(), max)
	if err != nil || len(evs) == max {
		return evs, err
	}
	more, err := h.s.Read(ctx, group, consumer, max-len(evs))
	return append(evs, more...), err
}

// Ack acknowledges events of group and returns how many were pending.
func (h *Hashes) Ack(ctx context.Context, group string, ids ...string) (int, error) {
	if err := checkGroup("group", group); err != nil {
		return 0, err
	}
	if len(ids) == 0 {
		return 0, nil
	}
	for _, id := range ids {
		if err := CheckEventID(id); err != nil {
			return 0, err
		}
	}
	return h.s.Ack(ctx, group, ids)
}

// EventStats describes the events kept and the groups.
func (h *Hashes) EventStats(ctx context.Context) (EventStats, error) { return h.s.EventStats(ctx) }

// shardSet is the shards woken since the last read, or all of them.
type shardSet struct {
	mu     sync.Mutex
	all    bool
	shards []int
}

// add notes that shard has events; a negative shard means any.
func (s *shardSet) add(shard int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case shard < 0:
		s.all, s.shards = true, s.shards[:0]
	case !s.all && !slices.Contains(s.shards, shard):
		s.shards = append(s.shards, shard)
	}
}

// empty reports whether nothing was noted.
func (s *shardSet) empty() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.all && len(s.shards) == 0
}

// take returns the shards noted and empties the set. all is true when any
// shard may have events; the first read of a consumer reads every shard.
func (s *shardSet) take() (shards []int, all bool) {
	shards, all = s.takeNoted()
	return shards, all || len(shards) == 0
}

// takeNoted is take for a consumer, which reads nothing when nothing was
// noted: all is true only when any shard was.
func (s *shardSet) takeNoted() (shards []int, all bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	shards, all = slices.Clone(s.shards), s.all
	s.all, s.shards = false, s.shards[:0]
	return shards, all
}
