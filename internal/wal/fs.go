package wal

import (
	"errors"
	"io"
	"os"
	"syscall"
)

// FS is the file layer under a Log: every file the log writes, truncates
// or fsyncs (segments, snapshots, the directory) is opened through it.
// Reads at Open go to the operating system directly. The default is the
// operating system's; a test gives its own to make a call fail (an fsync
// that reports EIO, a write that finds the disk full).
type FS interface {
	OpenFile(name string, flag int, perm os.FileMode) (File, error)
}

// File is a file opened through an FS.
type File interface {
	io.Writer
	io.Seeker
	Sync() error
	Truncate(size int64) error
	Close() error
	// Allocate reserves the bytes [off, off+n) on disk without changing
	// the file's size, so that writes there cannot find the disk full. It
	// fails with an error wrapping errors.ErrUnsupported where the file
	// system cannot reserve space.
	Allocate(off, n int64) error
}

// OSFS is the operating system's file layer, the default.
type OSFS struct{}

// OpenFile opens a file with os.OpenFile.
func (OSFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

type osFile struct{ *os.File }

func (f osFile) Allocate(off, n int64) error { return allocate(f.File, off, n) }

// isNoSpace reports whether err says the disk (or the user's quota) is
// full.
func isNoSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}
