//go:build unix

package wal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockDir takes an exclusive flock(2) on dir/LOCK. flock locks belong to
// the open file, so a second Open of the same directory fails even within
// one process.
func lockDir(dir string) (*os.File, error) {
	path := filepath.Join(dir, "LOCK")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("wal: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s is locked by another store (in this process or another)", ErrLocked, dir)
		}
		return nil, fmt.Errorf("wal: lock %s: %w", path, err)
	}
	return f, nil
}

func unlockDir(f *os.File) error {
	// Closing the file releases the lock.
	if err := f.Close(); err != nil {
		return fmt.Errorf("wal: unlock: %w", err)
	}
	return nil
}
