package memstore

import (
	"encoding/binary"
	"errors"
)

// The log is a sequence of records, each a kind byte and a payload. Every
// part of the engine owns a range of kinds, allotted in one table (register
// in part.go): replay hands each record to the part that owns its kind, and
// a snapshot is every part's snapshot records, one part after the other.
// The kinds and layouts of each part are in its own file (the job queue's
// in queuelog.go); the engine's snapshotLocked and replay are in
// engine.go.

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// decoder reads the fields of a record; the first error sticks.
type decoder struct {
	b   []byte
	err error
}

var errBadRecord = errors.New("malformed record")

func (d *decoder) uvarint() uint64 { return decodeVarint(d, binary.Uvarint) }

func (d *decoder) varint() int64 { return decodeVarint(d, binary.Varint) }

// decodeVarint reads one number with read (binary.Uvarint or Varint).
func decodeVarint[T uint64 | int64](d *decoder, read func([]byte) (T, int)) T {
	if d.err != nil {
		return 0
	}
	v, n := read(d.b)
	if n <= 0 {
		d.err = errBadRecord
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) byte() byte {
	if d.err != nil || len(d.b) == 0 {
		d.err = errBadRecord
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

func (d *decoder) string() string {
	n := d.uvarint()
	if d.err != nil || n > uint64(len(d.b)) {
		d.err = errBadRecord
		return ""
	}
	v := string(d.b[:n])
	d.b = d.b[n:]
	return v
}

func (d *decoder) u32() uint32 {
	v := d.uvarint()
	if v > 1<<32-1 {
		d.err = errBadRecord
	}
	return uint32(v)
}

// end checks that a record without a trailing body was read to its end.
func (d *decoder) end() error {
	if d.err == nil && len(d.b) != 0 {
		d.err = errBadRecord
	}
	return d.err
}
