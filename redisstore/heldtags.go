package redisstore

import (
	"strings"
	"sync"

	"github.com/hourglass-io/hourglass/queue"
)

// heldTags remembers, for each owner of a session that reserved through
// this Store, the tags it reserved in, so that Reservations asks those
// tags only and not every one. The owners of a session reserve through
// the one process that keeps the session alive (queue.Sessions), so for
// them this process's record is complete; an owner without a session may
// reserve from any process, and Reservations asks every tag for it.
//
// An owner's record goes when the owner is done: when Reservations finds
// it holds nothing, when it unreserves (an owner that went away), when
// its session ends.
type heldTags struct {
	mu sync.Mutex
	m  map[string]*[NumTags / 64]uint64
}

// add notes that owner reserves in tag; owners without a session are not
// recorded.
func (h *heldTags) add(owner string, tag int) {
	if queue.SessionOf(owner) == "" {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m == nil {
		h.m = map[string]*[NumTags / 64]uint64{}
	}
	b := h.m[owner]
	if b == nil {
		b = new([NumTags / 64]uint64)
		h.m[owner] = b
	}
	b[tag/64] |= 1 << (tag % 64)
}

// tags returns the tags to ask for owner's reservations.
func (h *heldTags) tags(owner string) []int {
	var out []int
	if queue.SessionOf(owner) == "" {
		for tag := range NumTags {
			out = append(out, tag)
		}
		return out
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if b := h.m[owner]; b != nil {
		for tag := range NumTags {
			if b[tag/64]&(1<<(tag%64)) != 0 {
				out = append(out, tag)
			}
		}
	}
	return out
}

// drop forgets owner's tags.
func (h *heldTags) drop(owner string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.m, owner)
}

// dropSession forgets the tags of every owner of session.
func (h *heldTags) dropSession(session string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for o := range h.m {
		if strings.HasPrefix(o, session+"/") {
			delete(h.m, o)
		}
	}
}
