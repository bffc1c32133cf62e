package wal

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// SyncPolicy says when records reach the disk.
type SyncPolicy int

// The sync policies; see the package documentation.
const (
	SyncAlways SyncPolicy = iota
	SyncEverySec
	SyncNever
)

// Options configure a Log. The zero value means SyncAlways and no logging.
type Options struct {
	// Sync says when Wait returns; see the package documentation.
	Sync SyncPolicy
	// SyncInterval is the period of the background fsync under
	// SyncEverySec. Default one second.
	SyncInterval time.Duration
	// Logger receives a line when Open cuts a torn tail or removes stale
	// files, when a snapshot is written, when the disk is full and when
	// the log fails. Default: nothing is logged.
	Logger *slog.Logger
	// Preallocate is how many bytes the log reserves on disk at a time,
	// ahead of its records (fallocate(2) without changing the file's
	// size), so that a record Room admitted never finds the disk full.
	// Default 1 MiB. Where the file system cannot reserve space, nothing
	// is reserved and a write that finds the disk full fails the log.
	Preallocate int64
	// Reserve is the part of the reserved room that Room keeps for the
	// records the owner appends without asking (work that falls due).
	// Default 256 KiB.
	Reserve int64
	// FS is the file layer the log writes through. Default OSFS.
	FS FS
}

const (
	defaultPreallocate = 1 << 20
	defaultReserve     = 256 << 10
)

// ReplayFunc receives the records of the log in order at Open. The payload
// is valid only during the call. An error stops Open and is reported with
// the file and offset of the record.
type ReplayFunc func(kind byte, payload []byte) error

// Ticket identifies an appended record, for Wait.
type Ticket uint64

// Recovery describes what Open found.
type Recovery struct {
	Snapshot        uint64 // number of the snapshot replayed; 0 for none
	SnapshotRecords int
	Segments        int // segments replayed
	Records         int // records replayed from segments
	CutFile         string
	CutOffset       int64 // where a torn tail was cut in CutFile
	CutBytes        int64 // how many bytes were cut; 0 when the log ended cleanly
}

// File headers: a name, two zero bytes and a format version.
var (
	segmentMagic  = []byte("hglog\x00\x00\x01")
	snapshotMagic = []byte("hgsnp\x00\x00\x01")
)

const headerLen = 8

// Log is an open data directory. Append and Wait are safe for concurrent
// use; see the package documentation for the order of calls.
type Log struct {
	dir    string
	opts   Options
	logger *slog.Logger
	lock   *os.File
	fs     FS
	rec    Recovery
	quit   chan struct{}
	wg     sync.WaitGroup

	// mu guards the fields below. It is never held during I/O.
	mu   sync.Mutex
	cond *sync.Cond
	buf  []byte   // records appended since the last seal
	pend []chunk  // sealed and not yet written, in order
	free [][]byte // buffers to reuse
	seq  uint64   // last ticket issued
	// written: records up to this ticket are in the operating system;
	// synced: and on disk.
	written, synced uint64
	flushing        bool // a Wait is writing; it owns f and seg until it clears this
	syncing         bool // the background fsync is using f
	rotating        bool // the flusher is replacing f
	snapshotting    bool
	allocating      bool // Room is reserving space in f
	closed          bool
	err             error // sticky: the first write or fsync error, wrapped in ErrFailed
	f               File
	seg             uint64 // number of f's segment
	// alloc: f is reserved on disk up to this offset; credit: the bytes
	// of that room not yet taken by a record appended (negative when
	// records were appended beyond it). noAlloc: the file system cannot
	// reserve space.
	alloc, credit int64
	noAlloc       bool
	cutErr        error  // why the last cut could not start its segment (Commit reports it)
	nextSeg       uint64 // number the next cut gives its segment
	appended      int64  // bytes of records since the snapshot replayed at Open, buffered ones included
	base          int64  // appended at the cut of the last snapshot written

	off int64 // the size of f; the flusher's alone
}

// chunk is a sealed run of records, followed by a switch to segment rotate
// when rotate is not 0.
type chunk struct {
	data   []byte
	end    uint64 // ticket of the last record in data (or of the cut)
	rotate uint64
}

func segmentName(n uint64) string  { return fmt.Sprintf("%016d.log", n) }
func snapshotName(n uint64) string { return fmt.Sprintf("%016d.snap", n) }

// SnapshotFile is the name, in the log's directory, of snapshot n
// (Recovery.Snapshot).
func SnapshotFile(n uint64) string { return snapshotName(n) }

// Open opens the log in dir, creating dir when needed, and locks it. It
// calls replay for every record of the newest snapshot and of the segments
// after it, in order, cutting a torn tail off the last segment, and returns
// a Log that appends to the last segment.
func Open(dir string, opts *Options, replay ReplayFunc) (*Log, error) {
	l := &Log{dir: dir}
	if opts != nil {
		l.opts = *opts
	}
	if l.opts.Sync < SyncAlways || l.opts.Sync > SyncNever {
		return nil, fmt.Errorf("wal: Options.Sync is %d, want SyncAlways, SyncEverySec or SyncNever", l.opts.Sync)
	}
	if l.opts.SyncInterval <= 0 {
		l.opts.SyncInterval = time.Second
	}
	if l.opts.Preallocate <= 0 {
		l.opts.Preallocate = defaultPreallocate
	}
	if l.opts.Reserve <= 0 {
		l.opts.Reserve = defaultReserve
	}
	l.fs = l.opts.FS
	if l.fs == nil {
		l.fs = OSFS{}
	}
	l.logger = l.opts.Logger
	if l.logger == nil {
		l.logger = slog.New(slog.DiscardHandler)
	}
	l.cond = sync.NewCond(&l.mu)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("wal: %w", err)
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	l.lock = lock
	if err := l.recover(replay); err != nil {
		unlockDir(l.lock)
		return nil, err
	}
	l.alloc = l.off
	l.mu.Lock()
	err = l.roomLocked(0)
	l.mu.Unlock()
	if err != nil {
		// The state is read and the log can serve it; writes wait for
		// the room (Room asks again).
		l.logger.Warn("wal: no room on disk for new records; writes are refused until there is", "dir", dir, "err", err)
	}
	if l.opts.Sync == SyncEverySec {
		l.quit = make(chan struct{})
		l.wg.Add(1)
		go l.syncLoop()
	}
	return l, nil
}

// dirFiles lists the numbered files of dir.
func (l *Log) dirFiles() (segs, snaps []uint64, err error) {
	entries, err := os.ReadDir(l.dir)
	if err != nil {
		return nil, nil, fmt.Errorf("wal: %w", err)
	}
	for _, e := range entries {
		name := e.Name()
		if strings.HasSuffix(name, ".snap.tmp") {
			// An unfinished snapshot: never part of the state.
			if err := os.Remove(filepath.Join(l.dir, name)); err != nil {
				return nil, nil, fmt.Errorf("wal: %w", err)
			}
			l.logger.Info("wal: removed an unfinished snapshot", "file", name)
			continue
		}
		stem, ext, ok := strings.Cut(name, ".")
		if !ok || len(stem) != 16 {
			continue
		}
		n, err := strconv.ParseUint(stem, 10, 64)
		if err != nil || n == 0 {
			continue
		}
		switch ext {
		case "log":
			segs = append(segs, n)
		case "snap":
			snaps = append(snaps, n)
		}
	}
	slices.Sort(segs)
	slices.Sort(snaps)
	return segs, snaps, nil
}

func (l *Log) recover(replay ReplayFunc) error {
	segs, snaps, err := l.dirFiles()
	if err != nil {
		return err
	}
	var snap uint64
	if len(snaps) > 0 {
		snap = snaps[len(snaps)-1]
	}
	// Segments before the snapshot are covered by it.
	first := 0
	for first < len(segs) && segs[first] < snap {
		first++
	}
	live := segs[first:]
	want := max(snap, 1)
	for _, n := range live {
		if n != want {
			return &CorruptError{File: filepath.Join(l.dir, segmentName(want)), Reason: "segment missing"}
		}
		want++
	}
	if snap > 0 {
		count, err := l.replaySnapshot(snap, replay)
		if err != nil {
			return err
		}
		l.rec.Snapshot, l.rec.SnapshotRecords = snap, count
	}
	var end int64
	for i, n := range live {
		last := i == len(live)-1
		end, err = l.replaySegment(n, last, replay)
		if err != nil {
			return err
		}
		l.rec.Segments++
	}
	// Files the snapshot made stale (a crash stopped their removal).
	for _, n := range segs[:first] {
		l.remove(segmentName(n))
	}
	for _, n := range snaps[:len(snaps)-min(len(snaps), 1)] {
		l.remove(snapshotName(n))
	}

	if len(live) == 0 || end < headerLen {
		n := want - 1
		if len(live) == 0 {
			n = max(snap, 1)
		}
		f, err := l.createSegment(n, 0)
		if err != nil {
			return err
		}
		l.f, l.seg, l.off = f, n, headerLen
	} else {
		n := live[len(live)-1]
		f, err := l.fs.OpenFile(filepath.Join(l.dir, segmentName(n)), os.O_WRONLY, 0)
		if err != nil {
			return fmt.Errorf("wal: %w", err)
		}
		if _, err := f.Seek(end, io.SeekStart); err != nil {
			f.Close()
			return fmt.Errorf("wal: %w", err)
		}
		l.f, l.seg, l.off = f, n, end
	}
	l.nextSeg = l.seg + 1
	return nil
}

func (l *Log) remove(name string) {
	if err := os.Remove(filepath.Join(l.dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
		l.logger.Warn("wal: cannot remove a stale file", "file", name, "err", err)
		return
	}
	l.logger.Info("wal: removed a stale file", "file", name)
}

// createSegment creates segment n with its header, on disk, and reserves
// room bytes after the header. A failure leaves no file.
func (l *Log) createSegment(n uint64, room int64) (File, error) {
	path := filepath.Join(l.dir, segmentName(n))
	f, err := l.fs.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("wal: %w", err)
	}
	fail := func(err error) (File, error) {
		f.Close()
		os.Remove(path)
		return nil, err
	}
	if _, err := f.Write(segmentMagic); err != nil {
		return fail(fmt.Errorf("wal: %w", err))
	}
	if room > 0 {
		if err := f.Allocate(headerLen, room); err != nil && !errors.Is(err, errors.ErrUnsupported) {
			return fail(fmt.Errorf("wal: %w", err))
		}
	}
	if err := f.Sync(); err != nil {
		return fail(fmt.Errorf("wal: fsync: %w", err))
	}
	if err := l.syncDir(); err != nil {
		return fail(err)
	}
	return f, nil
}

func (l *Log) replaySnapshot(n uint64, replay ReplayFunc) (int, error) {
	path := filepath.Join(l.dir, snapshotName(n))
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("wal: %w", err)
	}
	defer f.Close()
	var h [headerLen]byte
	if _, err := io.ReadFull(f, h[:]); err != nil || string(h[:]) != string(snapshotMagic) {
		return 0, &CorruptError{File: path, Reason: "not a snapshot (bad header)"}
	}
	r := newReader(f, headerLen)
	count := 0
	for {
		at := r.off
		kind, p, err := r.next()
		switch {
		case err == io.EOF:
			return 0, &CorruptError{File: path, Offset: at, Reason: "snapshot ends without its trailer"}
		case errors.Is(err, errShort), errors.Is(err, errLength), errors.Is(err, errCRC):
			return 0, &CorruptError{File: path, Offset: at, Reason: err.Error()}
		case err != nil:
			return 0, fmt.Errorf("wal: %s: %w", path, err)
		}
		if kind == kindTrailer {
			if want, ok := readTrailer(p); !ok || want != uint64(count) {
				return 0, &CorruptError{File: path, Offset: at, Reason: fmt.Sprintf("trailer counts %d records, read %d", want, count)}
			}
			if _, err := r.r.ReadByte(); err != io.EOF {
				return 0, &CorruptError{File: path, Offset: r.off, Reason: "data after the trailer"}
			}
			return count, nil
		}
		if err := replay(kind, p); err != nil {
			return 0, &CorruptError{File: path, Offset: at, Reason: err.Error()}
		}
		count++
	}
}

// replaySegment replays segment n and returns the offset where appends go.
// A torn tail of the last segment is cut.
func (l *Log) replaySegment(n uint64, last bool, replay ReplayFunc) (int64, error) {
	path := filepath.Join(l.dir, segmentName(n))
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("wal: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("wal: %w", err)
	}
	size := st.Size()
	if size < headerLen {
		if !last {
			return 0, &CorruptError{File: path, Reason: "segment shorter than its header"}
		}
		// Created, then a crash before its header reached the disk.
		return 0, l.cut(path, 0, size)
	}
	var h [headerLen]byte
	if _, err := io.ReadFull(f, h[:]); err != nil {
		return 0, fmt.Errorf("wal: %s: %w", path, err)
	}
	if string(h[:]) != string(segmentMagic) {
		return 0, &CorruptError{File: path, Reason: "not a log segment (bad header)"}
	}
	r := newReader(f, headerLen)
	for {
		at := r.off
		kind, p, err := r.next()
		if err == nil {
			if kind == kindTrailer {
				return 0, &CorruptError{File: path, Offset: at, Reason: "record of reserved kind 0"}
			}
			if err := replay(kind, p); err != nil {
				return 0, &CorruptError{File: path, Offset: at, Reason: err.Error()}
			}
			l.rec.Records++
			l.appended += r.off - at
			continue
		}
		if err == io.EOF {
			return at, nil
		}
		if !errors.Is(err, errShort) && !errors.Is(err, errLength) && !errors.Is(err, errCRC) {
			return 0, fmt.Errorf("wal: %s: %w", path, err)
		}
		if !last {
			return 0, &CorruptError{File: path, Offset: at, Reason: err.Error()}
		}
		if errors.Is(err, errCRC) && intactAfter(f, at+recHeader+r.n, size) {
			// Damage with intact records after it: not a torn write.
			return 0, &CorruptError{File: path, Offset: at, Reason: err.Error() + " (intact records follow)"}
		}
		return at, l.cut(path, at, size)
	}
}

// cut truncates a torn tail.
func (l *Log) cut(path string, at, size int64) error {
	l.logger.Warn("wal: cutting a torn tail", "file", path, "offset", at, "bytes", size-at)
	l.rec.CutFile, l.rec.CutOffset, l.rec.CutBytes = path, at, size-at
	f, err := l.fs.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("wal: %w", err)
	}
	defer f.Close()
	if err := f.Truncate(at); err != nil {
		return fmt.Errorf("wal: %w", err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("wal: %w", err)
	}
	return nil
}

// Recovery reports what Open found.
func (l *Log) Recovery() Recovery { return l.rec }

// Append adds a record to the log and returns its ticket. It does no I/O;
// the record reaches the disk at a Wait for it or a later ticket. Records
// are written in the order of the Append calls. kind must not be 0 and the
// record must not exceed MaxRecord.
func (l *Log) Append(kind byte, parts ...[]byte) Ticket {
	if kind == kindTrailer {
		panic("wal: Append of a record of kind 0")
	}
	size := recordSize(parts...)
	if size-recHeader > MaxRecord {
		panic(fmt.Sprintf("wal: Append of a %d-byte record (at most %d)", size-recHeader, MaxRecord))
	}
	l.mu.Lock()
	l.buf = appendRecord(l.buf, kind, parts...)
	l.seq++
	l.appended += size
	l.credit -= size
	t := Ticket(l.seq)
	l.mu.Unlock()
	return t
}

// Size returns the bytes of records appended since the last snapshot, the
// replayed ones included: what a new snapshot would make obsolete.
func (l *Log) Size() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.appended - l.base
}

// Room reports whether records of need bytes (as encoded: payloads and
// about a dozen bytes of header each) may be appended now and be sure to reach the disk:
// it returns nil when they may, the error that stopped the log (wrapping
// ErrFailed) when it has failed, ErrClosed when it is closed, and an error
// wrapping ErrNoSpace when the disk cannot hold them while keeping
// Options.Reserve bytes for records appended without asking. Call it
// before changing anything, under the lock that orders the Append calls:
// a refused change is then one never made. When the reserved room runs
// short, Room reserves more (an fallocate(2), the only I/O it does), so
// each call after a refusal asks the disk again, and writes resume as soon
// as the disk has room.
func (l *Log) Room(need int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.roomLocked(need)
}

func (l *Log) roomLocked(need int64) error {
	for {
		switch {
		case l.closed:
			return ErrClosed
		case l.err != nil:
			return l.err
		case l.noAlloc || l.credit-need >= l.opts.Reserve:
			return nil
		case !l.rotating && !l.allocating:
		default:
			l.cond.Wait()
			continue
		}
		break
	}
	short := need + l.opts.Reserve - l.credit
	f, at := l.f, l.alloc
	l.allocating = true
	l.mu.Unlock()
	n := max(l.opts.Preallocate, short)
	err := f.Allocate(at, n)
	if isNoSpace(err) && n > short {
		// Not a whole step: what this call needs may still fit.
		n = short
		err = f.Allocate(at, n)
	}
	l.mu.Lock()
	l.allocating = false
	l.cond.Broadcast()
	switch {
	case err == nil:
		l.alloc = at + n
		l.credit += n
		return nil
	case errors.Is(err, errors.ErrUnsupported):
		l.noAlloc = true
		l.logger.Warn("wal: the file system cannot reserve space; a write that finds the disk full will stop the log", "dir", l.dir, "err", err)
		return nil
	case isNoSpace(err):
		return fmt.Errorf("%w: %d bytes of records refused, nothing written (%w)", ErrNoSpace, need, err)
	}
	return fmt.Errorf("%w: reserving %d bytes: %w", ErrNoSpace, n, err)
}

// Err returns the sticky write error, if any.
func (l *Log) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

func (l *Log) doneLocked(t Ticket) bool {
	if l.opts.Sync == SyncAlways {
		return l.synced >= uint64(t)
	}
	return l.written >= uint64(t)
}

// Wait returns when the record of ticket t (and every record before it) is
// durable as the sync policy says, or the error that stopped the log.
func (l *Log) Wait(t Ticket) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for {
		if l.doneLocked(t) {
			return nil
		}
		if l.err != nil {
			return l.err
		}
		if l.closed {
			return ErrClosed
		}
		if !l.flushing {
			l.flushLocked()
			continue
		}
		l.cond.Wait()
	}
}

// Sync writes and fsyncs every record appended so far, whatever the policy.
func (l *Log) Sync() error {
	l.mu.Lock()
	t := Ticket(l.seq)
	l.mu.Unlock()
	if err := l.Wait(t); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for l.flushing || l.syncing || l.rotating {
		l.cond.Wait()
	}
	if l.err != nil {
		return l.err
	}
	if l.synced >= uint64(t) {
		return nil
	}
	// Take the flusher's role so that f stays put.
	return l.syncFileLocked(&l.flushing, uint64(t))
}

// syncFileLocked fsyncs f, the current segment, with l.mu released and
// *role set meanwhile (flushing or syncing: what keeps f put), then
// records the records up to target as synced, or fails the log, and wakes
// the waiters. It returns the log's error after a failed fsync, else nil.
func (l *Log) syncFileLocked(role *bool, target uint64) error {
	*role = true
	f := l.f
	l.mu.Unlock()
	err := f.Sync()
	l.mu.Lock()
	*role = false
	if err != nil {
		l.fail(fmt.Errorf("wal: fsync: %w", err))
		err = l.err
	} else {
		l.synced = max(l.synced, target)
	}
	l.cond.Broadcast()
	return err
}

// seal closes the current buffer into a chunk, with a switch to segment
// rotate after it when rotate is not 0.
func (l *Log) sealLocked(rotate uint64) {
	if len(l.buf) == 0 && rotate == 0 {
		return
	}
	l.pend = append(l.pend, chunk{data: l.buf, end: l.seq, rotate: rotate})
	l.buf = nil
	if n := len(l.free); n > 0 {
		l.buf, l.free = l.free[n-1][:0], l.free[:n-1]
	}
}

// flushLocked writes every pending record as the flusher. It is called and
// returns with mu held, and releases it during the I/O.
func (l *Log) flushLocked() {
	l.sealLocked(0)
	chunks := l.pend
	l.pend = nil
	if len(chunks) == 0 {
		return
	}
	l.flushing = true
	l.mu.Unlock()
	err := l.writeChunks(chunks)
	l.mu.Lock()
	l.flushing = false
	if err != nil {
		l.fail(err)
	} else {
		end := chunks[len(chunks)-1].end
		l.written = end
		if l.opts.Sync == SyncAlways {
			l.synced = end
		}
	}
	for _, c := range chunks {
		if cap(c.data) > 0 && cap(c.data) <= 4<<20 && len(l.free) < 4 {
			l.free = append(l.free, c.data[:0])
		}
	}
	l.cond.Broadcast()
}

// fail stops the log for good. After a failed write or fsync the log
// cannot know what of its file is on disk: the kernel may have dropped the
// pages it could not write and report the next fsync as a success, so
// retrying could acknowledge records that are gone. Only a reopen, which
// reads back what is on disk, knows.
func (l *Log) fail(err error) {
	if l.err == nil {
		l.err = fmt.Errorf("%w: %w", ErrFailed, err)
		l.logger.Error("wal: THE LOG HAS FAILED: no write is acknowledged from now on; reads go on from memory; close and reopen to recover what is on disk",
			"dir", l.dir, "segment", segmentName(l.seg), "err", err)
	}
}

// writeChunks writes chunks to the segment, switching segments where they
// say, and fsyncs under SyncAlways. Only the flusher calls it.
func (l *Log) writeChunks(chunks []chunk) error {
	dirty := false
	for _, c := range chunks {
		if len(c.data) > 0 {
			n, err := l.f.Write(c.data)
			l.off += int64(n)
			if err != nil {
				return fmt.Errorf("wal: write: %w", err)
			}
			dirty = true
		}
		if c.rotate != 0 {
			if err := l.rotate(c.rotate); err != nil {
				return err
			}
			dirty = false
		}
	}
	if dirty && l.opts.Sync == SyncAlways {
		if err := l.f.Sync(); err != nil {
			return fmt.Errorf("wal: fsync: %w", err)
		}
	}
	return nil
}

// rotate fsyncs and closes the current segment and starts segment n. The
// old segment is on disk before the new one exists, so only the last
// segment can have a torn tail. The new segment takes over the room
// reserved in the old one; when it cannot be created with that room (the
// disk is full), the log stays in the old segment and the cut's snapshot
// fails (cutErr).
func (l *Log) rotate(n uint64) error {
	l.mu.Lock()
	l.rotating = true
	for l.syncing || l.allocating {
		l.cond.Wait()
	}
	room := max(0, l.alloc-l.off)
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		l.rotating = false
		l.cond.Broadcast()
		l.mu.Unlock()
	}()
	if err := l.f.Sync(); err != nil {
		return fmt.Errorf("wal: fsync: %w", err)
	}
	f, err := l.createSegment(n, room)
	if err != nil {
		l.logger.Warn("wal: cannot start a new segment; the log goes on in the old one", "segment", segmentName(n), "err", err)
		l.mu.Lock()
		if l.nextSeg == n+1 {
			l.nextSeg = n // no gap in the numbers
		}
		l.cutErr = err
		l.synced = l.written
		l.mu.Unlock()
		return nil
	}
	// The old segment's room beyond its end goes back to the disk.
	_ = l.f.Truncate(l.off)
	if err := l.f.Close(); err != nil {
		f.Close()
		return fmt.Errorf("wal: close: %w", err)
	}
	l.mu.Lock()
	l.f, l.seg, l.off = f, n, headerLen
	l.alloc = headerLen + room
	l.synced = l.written
	l.mu.Unlock()
	return nil
}

func (l *Log) syncLoop() {
	defer l.wg.Done()
	t := time.NewTicker(l.opts.SyncInterval)
	defer t.Stop()
	for {
		select {
		case <-l.quit:
			return
		case <-t.C:
			l.syncOnce()
		}
	}
}

// syncOnce fsyncs the current segment if it holds unsynced records. It runs
// beside the flusher's writes: only rotate replaces f, and it waits for us.
func (l *Log) syncOnce() {
	l.mu.Lock()
	if l.rotating || l.closed || l.err != nil || l.written <= l.synced {
		l.mu.Unlock()
		return
	}
	_ = l.syncFileLocked(&l.syncing, l.written) // a failure is the log's, kept in l.err
	l.mu.Unlock()
}

// Close writes and fsyncs what is pending, stops the background fsync and
// releases the directory. A snapshot begun must be committed or aborted
// first; Close waits for it.
func (l *Log) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	for l.flushing || l.snapshotting {
		l.cond.Wait()
	}
	if l.err == nil {
		l.flushLocked()
	}
	l.closed = true
	err := l.err
	l.cond.Broadcast()
	l.mu.Unlock()

	if l.quit != nil {
		close(l.quit)
		l.wg.Wait()
	}
	if err == nil {
		_ = l.f.Truncate(l.off) // the room reserved beyond the end goes back to the disk
		if serr := l.f.Sync(); serr != nil {
			err = fmt.Errorf("wal: fsync: %w", serr)
		}
	}
	if cerr := l.f.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("wal: close: %w", cerr)
	}
	if uerr := unlockDir(l.lock); uerr != nil && err == nil {
		err = uerr
	}
	return err
}

// syncDir fsyncs the log's directory, so that created, renamed and removed
// names are on disk.
func (l *Log) syncDir() error {
	d, err := l.fs.OpenFile(l.dir, os.O_RDONLY, 0)
	if err != nil {
		return fmt.Errorf("wal: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return fmt.Errorf("wal: fsync %s: %w", l.dir, err)
	}
	return nil
}
