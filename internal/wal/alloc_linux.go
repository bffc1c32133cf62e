package wal

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// fallocKeepSize is FALLOC_FL_KEEP_SIZE: reserve the blocks, leave the
// file's size alone (a replay reads records up to the size).
const fallocKeepSize = 0x1

func allocate(f *os.File, off, n int64) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) {
		for {
			ferr = syscall.Fallocate(int(fd), fallocKeepSize, off, n)
			if ferr != syscall.EINTR {
				return
			}
		}
	}); err != nil {
		return err
	}
	switch {
	case ferr == nil:
		return nil
	case errors.Is(ferr, syscall.EOPNOTSUPP), errors.Is(ferr, syscall.ENOSYS):
		return fmt.Errorf("fallocate %s: %w (%w)", f.Name(), errors.ErrUnsupported, ferr)
	}
	return &os.PathError{Op: "fallocate", Path: f.Name(), Err: ferr}
}
