package redisstore

import (
	"strings"
	"sync"

	"github.com/hourglass-io/hourglass/queue"
)

// heldTags remembers, for each owner of a session that reserved through
// this Store, what it may hold, so that Reservations asks only the tags
// where it may hold a job, and none when it holds nothing. The ledger read
// (held_by in lib.lua) costs one record read per reserved job of the tag,
// whoever holds it: a beanstalkd connection that closes holding nothing,
// with thousands of others holding jobs of its tube, must not pay it. The
// owners of a session reserve through the one process that keeps the
// session alive (queue.Sessions), so for them this process's record is
// complete; an owner without a session may reserve from any process, and
// Reservations asks every tag for it.
//
// Per owner it keeps the jobs it reserved through this Store and has not
// deleted, released or buried through it (a job whose TTR ran out stays
// listed until Reservations finds it gone: more than it holds, never
// less), the tags with a reserve in flight, and the tags where a reserve's
// outcome was lost (an error: it may have reserved jobs this process never
// heard of). An owner's record goes when Reservations finds it holds
// nothing, when it unreserves (an owner that went away), when its session
// ends.
type heldTags struct {
	mu sync.Mutex
	m  map[string]*ownerHeld
}

type ownerHeld struct {
	ids     map[queue.ID]struct{}
	pending map[int]int          // tag -> reserves in flight
	unknown [NumTags / 64]uint64 // tags where a reserve's outcome was lost
	gen     uint64               // reserves ended so far
}

// of returns owner's record, made if need be; nil for an owner without a
// session. Under h.mu.
func (h *heldTags) of(owner string) *ownerHeld {
	if queue.SessionOf(owner) == "" {
		return nil
	}
	if h.m == nil {
		h.m = map[string]*ownerHeld{}
	}
	o := h.m[owner]
	if o == nil {
		o = &ownerHeld{ids: map[queue.ID]struct{}{}, pending: map[int]int{}}
		h.m[owner] = o
	}
	return o
}

// begin notes that a reserve of owner in tag starts; end must follow.
func (h *heldTags) begin(owner string, tag int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if o := h.of(owner); o != nil {
		o.pending[tag]++
	}
}

// end notes the outcome of a reserve begun in tag: the jobs it reserved,
// or an error, after which the tag is asked until Reservations finds
// owner holds nothing.
func (h *heldTags) end(owner string, tag int, jobs []queue.ID, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	o := h.of(owner)
	if o == nil {
		return
	}
	if o.pending[tag]--; o.pending[tag] <= 0 {
		delete(o.pending, tag)
	}
	o.gen++
	if err != nil {
		o.unknown[tag/64] |= 1 << (tag % 64)
		return
	}
	for _, id := range jobs {
		o.ids[id] = struct{}{}
	}
}

// ended notes that owner no longer holds job id (deleted, released or
// buried by it).
func (h *heldTags) ended(owner string, id queue.ID) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if o := h.m[owner]; o != nil {
		delete(o.ids, id)
	}
}

// tags returns the tags to ask for owner's reservations, and the count of
// its reserves ended so far (for found).
func (h *heldTags) tags(owner string) ([]int, uint64) {
	var out []int
	if queue.SessionOf(owner) == "" {
		for tag := range NumTags {
			out = append(out, tag)
		}
		return out, 0
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	o := h.m[owner]
	if o == nil {
		return nil, 0
	}
	b := o.unknown
	for tag := range o.pending {
		b[tag/64] |= 1 << (tag % 64)
	}
	for id := range o.ids {
		tag := tagOf(id)
		b[tag/64] |= 1 << (tag % 64)
	}
	for tag := range NumTags {
		if b[tag/64]&(1<<(tag%64)) != 0 {
			out = append(out, tag)
		}
	}
	return out, o.gen
}

// found notes what Reservations found owner holds, having asked every tag
// tags named when its count of ended reserves was gen: exactly those jobs,
// unless a reserve ran meanwhile or is in flight.
func (h *heldTags) found(owner string, gen uint64, held []queue.Reservation) {
	h.mu.Lock()
	defer h.mu.Unlock()
	o := h.m[owner]
	if o == nil || o.gen != gen || len(o.pending) > 0 {
		return // a reserve since may have added to what was found
	}
	if len(held) == 0 {
		delete(h.m, owner)
		return
	}
	o.unknown = [NumTags / 64]uint64{}
	o.ids = make(map[queue.ID]struct{}, len(held))
	for _, r := range held {
		o.ids[r.ID] = struct{}{}
	}
}

// drop forgets owner.
func (h *heldTags) drop(owner string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.m, owner)
}

// dropSession forgets every owner of session.
func (h *heldTags) dropSession(session string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for o := range h.m {
		if strings.HasPrefix(o, session+"/") {
			delete(h.m, o)
		}
	}
}
