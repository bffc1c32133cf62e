// Package ttlhash implements hashes whose fields each carry their own TTL,
// with reliable expiry events.
//
// A Hash holds fields (name → value) like a Redis hash; each field may have
// a deadline. A field is expired once the store's clock reaches its
// deadline: no read returns it and Len and Scan do not count it, whether or
// not it has been removed yet. Expiring a field removes it and appends an
// Event carrying the hash, the field, its value, its deadline and when it
// expired. Each consumer group receives every event once, handed to one of
// its consumers at a time: an event not acknowledged within the visibility
// timeout is handed out again (at-least-once delivery).
//
// Expire, ExpireAt and Persist follow Redis 7.4's HEXPIRE family: the
// conditions NX, XX, GT and LT and the per-field codes NoField (-2), NoTTL
// (-1), NotMet (0), Done (1) and Deleted (2). Set without a TTL clears a
// field's TTL, as HSET does; SetKeepTTL keeps it.
//
// Due fields are removed by a Sweeper (any number, in any number of
// processes, share the work) on Redis, and by the engine's own timer in the
// embedded engine (memstore). Events are kept until every group has
// acknowledged them, up to a cap set on the store; past the cap the oldest
// are dropped and counted in EventStats.Dropped.
//
// The Store interface is the contract the back ends implement
// (redisstore.Store.Hashes, memstore.Store.Hashes): the field storage
// (FieldStore, all a Sweeper needs) and the consumer-group event log
// (EventLog) of one store. A store that is a Notifier wakes consumers when
// events are appended (TopicEvents, or a shard's EventShardTopic) and
// Sweepers when a sooner deadline is set (TopicDue), so neither polls.
// Hashes, Hash and Sweeper are safe for concurrent use. Errors are the sentinels of
// errors.go (test them with errors.Is) and the store's own failures.
//
// Time: every deadline comes from the store's clock (Redis's TIME, or the
// engine's clock), at millisecond resolution, so processes with skewed
// clocks agree. ExpireAt takes an absolute time, compared with the store's
// clock.
package ttlhash
