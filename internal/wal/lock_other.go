//go:build !unix

package wal

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// Without flock(2), the directory is locked within this process only.
var (
	lockedMu sync.Mutex
	locked   = map[string]bool{}
)

func lockDir(dir string) (*os.File, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("wal: %w", err)
	}
	lockedMu.Lock()
	defer lockedMu.Unlock()
	if locked[abs] {
		return nil, fmt.Errorf("%w: %s is locked by another store in this process", ErrLocked, dir)
	}
	f, err := os.OpenFile(filepath.Join(dir, "LOCK"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("wal: %w", err)
	}
	locked[abs] = true
	return f, nil
}

func unlockDir(f *os.File) error {
	abs, _ := filepath.Abs(filepath.Dir(f.Name()))
	lockedMu.Lock()
	delete(locked, abs)
	lockedMu.Unlock()
	return f.Close()
}
