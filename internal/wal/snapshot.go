package wal

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// kindTrailer is the log's own record kind: the last record of a snapshot,
// holding the number of records before it. It never appears in a segment.
const kindTrailer = 0

func readTrailer(p []byte) (uint64, bool) {
	n, k := binary.Uvarint(p)
	return n, k > 0 && k == len(p)
}

// SnapshotWriter collects the records of a snapshot. Get one from
// BeginSnapshot, Add the records that rebuild the state at the cut, then
// Commit or Abort it.
type SnapshotWriter struct {
	l      *Log
	seg    uint64 // the snapshot's number: the first segment it does not cover
	ticket Ticket // the cut's ticket
	mark   int64  // Log.appended at the cut
	parts  [][]byte
	recs   []byte // kinds; record i is parts[2i] and parts[2i+1]
	arena  []byte
	size   int64
}

// BeginSnapshot cuts the log for a snapshot: the records appended before
// the call are what the snapshot replaces, those appended after it go to a
// new segment. Call it under the lock that orders the Append calls, Add the
// records of the state at that moment before releasing the lock, and then
// call Commit (or Abort). One snapshot at a time.
func (l *Log) BeginSnapshot() (*SnapshotWriter, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.closed:
		return nil, ErrClosed
	case l.err != nil:
		return nil, l.err
	case l.snapshotting:
		return nil, errors.New("wal: a snapshot is already being written")
	}
	n := l.nextSeg
	l.nextSeg++
	l.seq++ // the cut has a ticket of its own, so that waiting for it writes it
	l.sealLocked(n)
	l.snapshotting = true
	return &SnapshotWriter{l: l, seg: n, ticket: Ticket(l.seq), mark: l.appended}, nil
}

// Add adds a record to the snapshot: kind, then head, then tail. Add copies
// head at once; it keeps a reference to tail until Commit returns, so the
// caller must not modify tail (a job's body, which never changes, is the
// intended use: the snapshot then costs little memory beyond the bodies
// themselves).
func (w *SnapshotWriter) Add(kind byte, head, tail []byte) {
	if kind == kindTrailer {
		panic("wal: snapshot record of kind 0")
	}
	if len(w.arena)+len(head) > cap(w.arena) {
		w.arena = make([]byte, 0, max(64<<10, len(head)))
	}
	start := len(w.arena)
	w.arena = append(w.arena, head...)
	w.parts = append(w.parts, w.arena[start:len(w.arena):len(w.arena)], tail)
	w.recs = append(w.recs, kind)
	w.size += recordSize(head, tail)
}

// Grow makes room for n more records, so that adding a large state does
// not copy what was added before.
func (w *SnapshotWriter) Grow(n int) {
	w.parts = slices.Grow(w.parts, 2*n)
	w.recs = slices.Grow(w.recs, n)
}

// Commit writes the snapshot and, once it is on disk, deletes the segments
// and the snapshot it replaces. Call it without the lock held at
// BeginSnapshot; it does the I/O.
func (w *SnapshotWriter) Commit() (err error) {
	l := w.l
	start := time.Now()
	defer func() {
		l.mu.Lock()
		l.snapshotting = false
		if err == nil {
			l.base = w.mark
		}
		l.cond.Broadcast()
		l.mu.Unlock()
		w.parts, w.recs, w.arena = nil, nil, nil
	}()
	// The switch to the new segment first: from then on the older
	// segments are complete and on disk.
	if err := l.Wait(w.ticket); err != nil {
		return err
	}
	l.mu.Lock()
	cutErr := l.cutErr
	l.cutErr = nil
	l.mu.Unlock()
	if cutErr != nil {
		return fmt.Errorf("wal: snapshot: %w", cutErr)
	}
	final := filepath.Join(l.dir, snapshotName(w.seg))
	tmp := final + ".tmp"
	if err := w.write(l.fs, tmp); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, final); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("wal: %w", err)
	}
	if err := l.syncDir(); err != nil {
		return err
	}
	segs, snaps, err := l.dirFiles()
	if err != nil {
		return err
	}
	for _, n := range segs {
		if n < w.seg {
			l.remove(segmentName(n))
		}
	}
	for _, n := range snaps {
		if n < w.seg {
			l.remove(snapshotName(n))
		}
	}
	l.logger.Info("wal: snapshot written", "file", final, "records", len(w.recs), "bytes", w.size, "took", time.Since(start))
	return nil
}

func (w *SnapshotWriter) write(fs FS, path string) error {
	f, err := fs.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("wal: %w", err)
	}
	defer f.Close()
	bw := bufio.NewWriterSize(f, 1<<20)
	bw.Write(snapshotMagic)
	var h [recHeader + 1]byte
	for i, kind := range w.recs {
		head, tail := w.parts[2*i], w.parts[2*i+1]
		n := uint32(1 + len(head) + len(tail))
		binary.LittleEndian.PutUint32(h[:4], n)
		binary.LittleEndian.PutUint32(h[4:8], recordCRC(n, kind, head, tail))
		h[8] = kind
		bw.Write(h[:])
		bw.Write(head)
		bw.Write(tail)
	}
	bw.Write(appendRecord(nil, kindTrailer, binary.AppendUvarint(nil, uint64(len(w.recs)))))
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("wal: write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("wal: fsync %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("wal: close %s: %w", path, err)
	}
	return nil
}

// Abort drops the snapshot. The cut stays: the log simply has one more
// segment.
func (w *SnapshotWriter) Abort() {
	l := w.l
	l.mu.Lock()
	l.snapshotting = false
	l.cond.Broadcast()
	l.mu.Unlock()
	w.parts, w.recs, w.arena = nil, nil, nil
}
