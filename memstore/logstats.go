package memstore

import (
	"os"
	"path/filepath"
	"time"

	"github.com/hourglass-io/hourglass/internal/wal"
)

// LogStats describes a Store's log on disk, for people (the dashboard's
// store view).
type LogStats struct {
	// Dir is the directory given to Open; "" for a Store made by New,
	// which keeps no log (and whose other fields are zero).
	Dir string
	// Bytes is the size of the log's records since the last snapshot
	// (what the next snapshot makes obsolete).
	Bytes int64
	// LiveBytes is about what a snapshot of the state takes now; a
	// snapshot is written when Bytes passes max(Options.CompactBytes,
	// twice LiveBytes).
	LiveBytes int64
	// LastSnapshot is when the last snapshot was written (the file's time
	// for one written before Open); zero when there is none.
	LastSnapshot time.Time
}

// LogStats returns what the Store's log is now.
func (s *Store) LogStats() LogStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.log == nil {
		return LogStats{}
	}
	return LogStats{Dir: s.dir, Bytes: s.log.Size(), LiveBytes: s.liveBytes(), LastSnapshot: s.lastSnapshot}
}

// snapshotTime is when snapshot n of dir was written, zero for none.
func snapshotTime(dir string, n uint64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	fi, err := os.Stat(filepath.Join(dir, wal.SnapshotFile(n)))
	if err != nil {
		return time.Time{}
	}
	return fi.ModTime()
}
