package ttlhash

import (
	"context"
	"strconv"
	"strings"
	"time"
)

// Limits every Store accepts.
const (
	// MaxNameLen is the longest hash, group or consumer name, in bytes.
	MaxNameLen = 1024
	// MaxFieldLen is the longest field name, in bytes.
	MaxFieldLen = 65535
	// MaxValueLen is the longest value, in bytes.
	MaxValueLen = 64 << 20
	// MaxTTL is the longest TTL and the furthest deadline from now.
	MaxTTL = 100 * 365 * 24 * time.Hour
)

// Cond is the condition of an Expire, as in Redis's HEXPIRE family.
type Cond int

// The conditions. A field without a TTL counts as an infinite TTL for GT
// and LT, as in Redis.
const (
	// None: set the deadline unconditionally.
	None Cond = iota
	// NX: only when the field has no TTL.
	NX
	// XX: only when the field has a TTL.
	XX
	// GT: only when the new deadline is later than the current one.
	GT
	// LT: only when the new deadline is earlier than the current one.
	LT
)

var condNames = [...]string{None: "", NX: "NX", XX: "XX", GT: "GT", LT: "LT"}

// String returns the condition's Redis name ("" for None).
func (c Cond) String() string {
	if c >= None && c <= LT {
		return condNames[c]
	}
	return "Cond(?)"
}

// Result codes of Expire and Persist, per field, as in Redis 7.4.
const (
	// NoField: the field does not exist (or has expired).
	NoField = -2
	// NoTTL: Persist found a field without a TTL.
	NoTTL = -1
	// NotMet: Expire's condition did not hold; nothing changed.
	NotMet = 0
	// Done: the deadline was set (Expire) or removed (Persist).
	Done = 1
	// Deleted: Expire's deadline was now or past, so the field expired at
	// once (and its expiry event was emitted).
	Deleted = 2
)

// Field is a field and its value.
type Field struct {
	Name  string
	Value []byte
}

// Entry is a field read from a hash, with its deadline (zero when it has
// no TTL).
type Entry struct {
	Name     string
	Value    []byte
	Deadline time.Time
}

// SetRequest is one Set of fields of one hash.
type SetRequest struct {
	Fields []Field
	// TTL, when positive, gives every field of the request this TTL.
	TTL time.Duration
	// KeepTTL, when TTL is 0, keeps the deadline of a field that already
	// has one. Without it a set without TTL clears the field's TTL, as
	// Redis's HSET does.
	KeepTTL bool
}

// ExpireRequest is one Expire of fields of one hash: TTL (from the store's
// now) when At is zero, else the absolute deadline At.
type ExpireRequest struct {
	Fields []string
	TTL    time.Duration
	At     time.Time
	Cond   Cond
}

// Event is the expiry of one field, as a consumer group receives it.
type Event struct {
	// ID identifies the event in its store: Ack takes it.
	ID string
	// Hash and Field name the field that expired; Value is what it held.
	Hash, Field string
	Value       []byte
	// Deadline is the field's deadline; ExpiredAt is when the store
	// removed it (at or after Deadline).
	Deadline, ExpiredAt time.Time
	// Redelivered says that the event was handed out before and not
	// acknowledged within the visibility timeout.
	Redelivered bool
}

// SweepResult is what one Sweep did.
type SweepResult struct {
	// Expired counts the fields removed (and events appended).
	Expired int
	// More says that due work remains in the shard: call Sweep again now.
	More bool
	// Next is how long until the shard's next known deadline, or -1 when
	// it has none. Work scheduled by other processes can come sooner.
	Next time.Duration
	// Looked counts the due-index entries the sweep looked at (expired,
	// moved or dropped as stale): 0 when it found nothing due, as when
	// another Sweeper swept the shard first. The Sweepers of a
	// ShardSweeper use it to stand by for each other.
	Looked int
	// At is the store's clock when the sweep ran, to the microsecond, when
	// the store can tell (zero otherwise). Next counts from At truncated to
	// the millisecond, so that a Sweeper can wake at the deadline itself
	// rather than up to a millisecond after it.
	At time.Time
}

// GroupStats describes one consumer group.
type GroupStats struct {
	Name string
	// Pending counts events handed out and not yet acknowledged.
	Pending int64
}

// EventStats describes the events a store keeps.
type EventStats struct {
	// Retained counts the events kept (acknowledged by every group or not).
	Retained int64
	// Dropped counts the events removed by the retention cap before every
	// group had acknowledged them, since the store's creation.
	Dropped int64
	// Groups lists the consumer groups by name.
	Groups []GroupStats
}

// Store keeps hashes whose fields carry their own TTL, and the expiry
// events of those fields: the field storage (FieldStore) and the
// consumer-group event log (EventLog) of one store, which share a clock and
// an atomicity: Sweep, and any write that finds an expired field, removes
// the field and appends its event in one operation.
//
// Time belongs to the store (Redis: the server's TIME; the embedded engine:
// its clock). A field is expired once the store's clock reaches its
// deadline (millisecond resolution). No method returns or counts an
// expired field, whether or not it has been removed yet. A write that finds
// an expired field expires it first (removing it and appending its event),
// so that every field that expires yields exactly one event.
//
// The Hashes type validates arguments before it calls a Store: names and
// values are within the limits above, TTLs are positive and at most MaxTTL,
// counts are at least 1, groups and consumers are valid names.
type Store interface {
	FieldStore
	EventLog
}

// FieldStore is the field storage of a Store: hashes of fields with their
// own TTL, and the sweeping of due fields (whose events go to the store's
// EventLog). Each method is one atomic operation, as Store says. A Sweeper
// needs only this part.
type FieldStore interface {
	// Set stores fields in hash and returns how many were new (not stored
	// and live before).
	Set(ctx context.Context, hash string, req SetRequest) (added int, err error)
	// Get returns the live entries of the named fields, nil where a field
	// is missing or expired, in order.
	Get(ctx context.Context, hash string, fields []string) ([]*Entry, error)
	// GetAll returns every live entry of hash, in no order.
	GetAll(ctx context.Context, hash string) ([]Entry, error)
	// Scan returns some live entries of hash from cursor ("" starts) and
	// the cursor to continue from ("" when done). Count is a hint. An
	// entry live throughout the iteration is returned at least once.
	Scan(ctx context.Context, hash, cursor string, count int) ([]Entry, string, error)
	// Del deletes fields and returns how many were live.
	Del(ctx context.Context, hash string, fields []string) (int, error)
	// Len counts the live fields of hash.
	Len(ctx context.Context, hash string) (int, error)
	// TTL returns, per field, the time left before its deadline (at least
	// 0), or NoField or NoTTL as durations (-2ns, -1ns).
	TTL(ctx context.Context, hash string, fields []string) ([]time.Duration, error)
	// Expire sets the deadline of fields under a condition and returns a
	// code per field: NoField, NotMet, Done or Deleted.
	Expire(ctx context.Context, hash string, req ExpireRequest) ([]int, error)
	// Persist removes the TTL of fields and returns a code per field:
	// NoField, NoTTL or Done.
	Persist(ctx context.Context, hash string, fields []string) ([]int, error)

	// Shards says how many shards Sweep takes (numbered from 0).
	Shards() int
	// Sweep expires due fields of one shard, at most about max of them,
	// appending their events.
	Sweep(ctx context.Context, shard, max int) (SweepResult, error)
}

// EventLog is the consumer-group event log of a Store: the expiry events
// its fields yield, and the groups that consume them. Each method is one
// atomic operation, as Store says.
type EventLog interface {
	// CreateGroup creates a consumer group that receives every event kept
	// and every later one. Creating an existing group does nothing.
	CreateGroup(ctx context.Context, group string) error
	// DeleteGroup deletes a group and what it had pending; ErrNoGroup when
	// there is none.
	DeleteGroup(ctx context.Context, group string) error
	// Read hands up to max events that group has not been handed yet to
	// consumer, oldest first. ErrNoGroup when the group does not exist.
	Read(ctx context.Context, group, consumer string, max int) ([]Event, error)
	// Claim hands to consumer up to max events of group that were handed
	// out at least minIdle ago and not acknowledged.
	Claim(ctx context.Context, group, consumer string, minIdle time.Duration, max int) ([]Event, error)
	// Ack acknowledges events of group and returns how many were pending.
	Ack(ctx context.Context, group string, ids []string) (int, error)
	// EventStats describes the events kept and the groups.
	EventStats(ctx context.Context) (EventStats, error)
}

// ShardSweeper is implemented by stores that can sweep every shard in one
// round trip; a Sweeper then uses it instead of Sweep.
type ShardSweeper interface {
	// SweepAll sweeps every shard as Sweep does, returning one result
	// per shard.
	SweepAll(ctx context.Context, max int) ([]SweepResult, error)
	// SweepShards sweeps the given shards as Sweep does, returning one
	// result per shard, in their order.
	SweepShards(ctx context.Context, shards []int, max int) ([]SweepResult, error)
}

// The topics of a Notifier.
const (
	// TopicEvents: events were appended (in any shard). A listener of it
	// is woken with the topic of the shard (EventShardTopic) when the
	// store keeps events in shards and knows which one, else with
	// TopicEvents.
	TopicEvents = "events"
	// TopicDue: a field was given a deadline sooner than every other the
	// store had, so a Sweeper that sleeps until the next deadline it knew
	// of should sweep now. A listener of it is woken with the topic of
	// the shard (DueShardTopic) when the store keeps its due index in
	// shards, else with TopicDue. A store whose own timer expires fields
	// (the embedded engine) does not announce it.
	TopicDue = "due"
)

// EventShardTopic returns the topic of the events appended to one shard,
// "events/<shard>": a Notifier that keeps events in shards wakes the
// listeners of TopicEvents with it, and may be listened to one shard at a
// time.
func EventShardTopic(shard int) string { return TopicEvents + "/" + strconv.Itoa(shard) }

// DueShardTopic returns the topic of a sooner deadline in one shard,
// "due/<shard>": a Notifier that keeps its due index in shards wakes the
// listeners of TopicDue with it, so that a Sweeper sweeps that shard
// alone.
func DueShardTopic(shard int) string { return TopicDue + "/" + strconv.Itoa(shard) }

// ParseDueShardTopic returns the shard of a DueShardTopic; ok is false
// for any other topic.
func ParseDueShardTopic(topic string) (shard int, ok bool) { return parseShardTopic(TopicDue, topic) }

// ParseEventShardTopic returns the shard of an EventShardTopic; ok is
// false for any other topic.
func ParseEventShardTopic(topic string) (shard int, ok bool) {
	return parseShardTopic(TopicEvents, topic)
}

func parseShardTopic(base, topic string) (shard int, ok bool) {
	rest, found := strings.CutPrefix(topic, base+"/")
	if !found {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 0 || strconv.Itoa(n) != rest {
		return 0, false
	}
	return n, true
}

// Notifier is implemented by stores that can tell a process when events
// may be ready to read (TopicEvents, EventShardTopic) and when a sooner
// deadline was set (TopicDue), so that consumers and Sweepers need not
// poll. Listen follows package internal/wait's contract: it returns once
// the subscription is in effect; wake is called (in any process, for a
// shared store) soon after a change of the topic, may be called
// spuriously, and must not block; stop ends the subscription. A topic the
// store does not announce is refused with an error wrapping ErrNoTopic.
type Notifier interface {
	Listen(ctx context.Context, topic string, wake func(topic string)) (stop func(), err error)
}

// ShardReader is implemented by stores that keep events in shards and wake
// listeners of TopicEvents with the shard's topic, so that a consumer reads
// only the shards that have new events instead of all of them.
type ShardReader interface {
	// ReadShards is Read from the given shards only.
	ReadShards(ctx context.Context, group, consumer string, shards []int, max int) ([]Event, error)
}

// AckReader is implemented by stores that can acknowledge events and read
// the next ones in one round trip, so that a consumer that reads again at
// once does not pay one for each.
type AckReader interface {
	// AckRead acknowledges ids as Ack does, then reads as ReadShards does
	// (every shard when shards is nil). It returns the events read; when
	// the acknowledgement fails, its error and no events (the events read,
	// if any, come again after the visibility timeout).
	AckRead(ctx context.Context, group, consumer string, ids []string, shards []int, max int) ([]Event, error)
}
