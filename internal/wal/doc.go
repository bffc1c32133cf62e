// Package wal implements the durable log of the embedded engine (package
// memstore): a data directory holding an append-only log of checksummed
// records, cut into segments, and snapshots that let old segments go.
//
// # Records
//
// A record is a kind byte and a payload. The log does not interpret either:
// each primitive of the engine (the job queue today; rate limits, expiring
// hash fields and locks later) owns a range of kinds, writes its own records
// and reads them back at replay. Kind 0 is reserved for the log itself. On
// disk a record is
//
//	uint32 LE  n      length of kind + payload (1 ≤ n ≤ MaxRecord)
//	uint32 LE  crc    CRC-32C (Castagnoli) of n's four bytes, kind and payload
//	byte       kind
//	[n-1]byte  payload
//
// # Files
//
//	LOCK                 held with flock(2) while a Log is open
//	<N>.log              segment N: an 8-byte header, then records
//	<N>.snap             snapshot N: the state before the first record of segment N
//	<N>.snap.tmp         a snapshot being written (removed at Open)
//
// N is a 16-digit decimal number. The state is the newest snapshot S (or
// nothing when there is none) followed by the records of segments S, S+1, …
// in order. Segments and snapshots older than S are deleted once S is on
// disk.
//
// # Writing
//
// Append adds a record to an in-memory buffer and returns a Ticket; it
// never does I/O, so callers call it while holding the lock that orders
// their changes, and the log's order is theirs. Wait(ticket) makes the
// record durable: the first waiter writes every buffered record of every
// waiter in one write (and, under SyncAlways, one fsync), while the others
// wait for it — group commit. The policies:
//
//   - SyncAlways: Wait returns once the record is written and fsynced.
//   - SyncEverySec: Wait returns once the record is written to the
//     operating system; a goroutine owned by the Log fsyncs once a second.
//     A crash of the process loses nothing; a crash of the machine can lose
//     the records of the last second or so.
//   - SyncNever: as SyncEverySec without the goroutine: the operating system
//     writes the data back when it likes (on Linux, within about 30 s).
//
// A write or fsync error is sticky: every later Wait, Room and Sync returns
// it (wrapping ErrFailed), since the log no longer knows what is on disk
// (after a failed fsync the kernel may have dropped the pages and report
// the next fsync as a success). The owner must reopen the log.
//
// # A full disk
//
// The log reserves its room on disk ahead of its records (fallocate(2)
// without changing the file's size, Options.Preallocate at a time), so a
// record written there never finds the disk full. Room(n), called before
// the owner changes anything, says whether n more bytes of records fit; it
// reserves more when the room runs short, and fails with ErrNoSpace when
// the disk refuses, appending nothing: the owner refuses the change, and
// the next Room asks the disk again. Options.Reserve bytes of the room are
// kept for records appended without asking. A cut whose new segment cannot
// be created with the old one's room leaves the log in the old segment,
// and its snapshot fails. All files are written through Options.FS.
//
// # Snapshots
//
// BeginSnapshot, called under the same lock as Append, cuts the log:
// records appended before it belong to the old segments, records after it to
// a new one. The caller fills the SnapshotWriter with records describing the
// state at the cut (still under its lock; payloads may be kept by reference
// and the CRCs are computed later), then calls Commit without the lock:
// Commit writes <N>.snap.tmp, fsyncs it, renames it to <N>.snap, fsyncs the
// directory and deletes the older files. A crash at any point leaves either
// the old snapshot with every segment after it, or the new one.
//
// # Recovery
//
// Open replays the newest snapshot, then the segments after it. A segment
// is fsynced before the next one is created, so only the last segment can
// end in a torn write. A damaged record at the end of the last segment (a
// short header or payload, an impossible length, a bad checksum with no
// intact record after it) is a torn tail: Open cuts the file there and
// carries on. A damaged record anywhere else, or a damaged snapshot, is an
// error (ErrCorrupt) that names the file and the offset.
package wal
