package wal

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
)

// MaxRecord is the largest record (kind and payload) the log accepts: a
// 1 GiB job body with room to spare.
const MaxRecord = 1<<30 + 1<<20

// recHeader is the size of a record's length and checksum.
const recHeader = 8

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Errors of the log. Open wraps ErrCorrupt in a *CorruptError.
var (
	// ErrCorrupt: a record, a segment or a snapshot is damaged where a torn
	// write cannot explain it.
	ErrCorrupt = errors.New("wal: corrupt data directory")
	// ErrLocked: another Log (in this process or another) has the directory.
	ErrLocked = errors.New("wal: data directory is in use")
	// ErrClosed: the Log has been closed.
	ErrClosed = errors.New("wal: closed")
	// ErrNoSpace: Room refused records because the disk is full. Nothing
	// was appended; the log goes on.
	ErrNoSpace = errors.New("wal: no space on disk for the log")
	// ErrFailed: a write or an fsync failed and the log has stopped: it
	// acknowledges nothing more, and only a reopen recovers (what is on
	// disk).
	ErrFailed = errors.New("wal: the log has failed")
)

// CorruptError reports where the damage is. It wraps ErrCorrupt.
type CorruptError struct {
	File   string // path of the damaged file
	Offset int64  // byte offset of the damaged record in File
	Reason string
}

// Error names the file, the offset and what is wrong.
func (e *CorruptError) Error() string {
	return fmt.Sprintf("wal: %s at offset %d: %s", e.File, e.Offset, e.Reason)
}

// Unwrap returns ErrCorrupt.
func (e *CorruptError) Unwrap() error { return ErrCorrupt }

// recordCRC returns the checksum of a record with length n, kind and parts.
func recordCRC(n uint32, kind byte, parts ...[]byte) uint32 {
	var h [5]byte
	binary.LittleEndian.PutUint32(h[:4], n)
	h[4] = kind
	c := crc32.Update(0, castagnoli, h[:])
	for _, p := range parts {
		c = crc32.Update(c, castagnoli, p)
	}
	return c
}

// appendRecord appends the encoded record to buf.
func appendRecord(buf []byte, kind byte, parts ...[]byte) []byte {
	n := 1
	for _, p := range parts {
		n += len(p)
	}
	buf = binary.LittleEndian.AppendUint32(buf, uint32(n))
	buf = binary.LittleEndian.AppendUint32(buf, recordCRC(uint32(n), kind, parts...))
	buf = append(buf, kind)
	for _, p := range parts {
		buf = append(buf, p...)
	}
	return buf
}

// recordSize returns the encoded size of a record.
func recordSize(parts ...[]byte) int64 {
	n := int64(recHeader + 1)
	for _, p := range parts {
		n += int64(len(p))
	}
	return n
}

// Why a record could not be read.
var (
	errShort  = errors.New("record cut short by the end of the file")
	errLength = errors.New("impossible record length")
	errCRC    = errors.New("checksum mismatch")
)

// reader reads records sequentially from a file.
type reader struct {
	r   *bufio.Reader
	off int64 // offset of the next record
	n   int64 // length field of the last record read (damaged ones too)
	buf []byte
}

func newReader(f *os.File, off int64) *reader {
	return &reader{r: bufio.NewReaderSize(f, 1<<20), off: off}
}

// next returns the next record. The payload is valid until the next call.
// At a clean end of file it returns io.EOF; on a damaged record it returns
// errShort, errLength or errCRC and r.off is the offset of that record.
func (r *reader) next() (kind byte, payload []byte, err error) {
	var h [recHeader]byte
	if _, err := io.ReadFull(r.r, h[:]); err != nil {
		if err == io.EOF {
			return 0, nil, io.EOF
		}
		if err == io.ErrUnexpectedEOF {
			return 0, nil, errShort
		}
		return 0, nil, err
	}
	n := binary.LittleEndian.Uint32(h[:4])
	r.n = int64(n)
	if n == 0 || n > MaxRecord {
		return 0, nil, errLength
	}
	if cap(r.buf) < int(n) {
		r.buf = make([]byte, n)
	}
	b := r.buf[:n]
	if _, err := io.ReadFull(r.r, b); err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return 0, nil, errShort
		}
		return 0, nil, err
	}
	if recordCRC(n, b[0], b[1:]) != binary.LittleEndian.Uint32(h[4:]) {
		return 0, nil, errCRC
	}
	r.off += recHeader + int64(n)
	return b[0], b[1:], nil
}

// intactAfter reports whether any intact record follows, in the chain of
// record lengths that starts at off: a sign that a damaged record before
// off is not a torn tail but damage in the middle of the log.
func intactAfter(f *os.File, off, size int64) bool {
	var h [recHeader]byte
	var buf []byte
	for off+recHeader <= size {
		if _, err := f.ReadAt(h[:], off); err != nil {
			return false
		}
		n := int64(binary.LittleEndian.Uint32(h[:4]))
		if n == 0 || n > MaxRecord || off+recHeader+n > size {
			return false
		}
		if int64(cap(buf)) < n {
			buf = make([]byte, n)
		}
		b := buf[:n]
		if _, err := f.ReadAt(b, off+recHeader); err != nil {
			return false
		}
		if recordCRC(uint32(n), b[0], b[1:]) == binary.LittleEndian.Uint32(h[4:]) {
			return true
		}
		off += recHeader + n
	}
	return false
}
